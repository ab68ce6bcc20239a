"""A log line cannot steer another workload's verdict (issue 11); correlator/claims.py.

slurmctld writes ``Killing JobId=42 on failed node gpu003`` when it kills a job for a node it
lost, and the bundled rule blames that node: the verdict can drain it. Anyone who can write one
syslog line on any node can write the same words (``logger -t slurmctld ...``). A job id read
from a line's text names the job only when the line comes from one of the job's nodes or from a
configured scheduler host; any other such line is ignored for that job and counted.
"""

from __future__ import annotations

import pytest
from aiokafka.structs import ConsumerRecord
from prometheus_client import REGISTRY

from correlator.engine import AttributionEngine
from correlator.settings import CorrelatorSettings
from streams.extract_worker import ExtractorWorker
from streams.records import JobEvent, LogLine
from streams.settings import Settings

T0 = 1_714_557_600_000
JOB_NODES = ("gpu001", "gpu002", "gpu003", "gpu004")
CONTROLLER = "slurmctl01"
ATTACKER = "gpu099"  # a node of some other job
FORGED = "slurmctld[1822]: Killing JobId=42 on failed node gpu003"


def syslog(host: str, seconds: float, text: str = FORGED) -> LogLine:
    return LogLine(text, host, T0 + int(seconds * 1000), "syslog", f"test:{host}:{seconds}")


def start() -> JobEvent:
    return JobEvent(kind="job_start", workload_id="42", time_ms=T0, nodes=JOB_NODES)


def end() -> JobEvent:
    return JobEvent(
        kind="job_end", workload_id="42", time_ms=T0 + 200_000, nodes=JOB_NODES, state="FAILED", start_ms=T0
    )


@pytest.fixture
def engine(bundled_ruleset, bundled_matcher) -> AttributionEngine:
    settings = CorrelatorSettings(grace_s=30, tail_s=30, scheduler_hosts=frozenset({CONTROLLER}))
    return AttributionEngine(bundled_ruleset, settings, matcher=bundled_matcher)


def decide(engine: AttributionEngine, batches: list[tuple[list[LogLine], list[JobEvent]]]):
    verdicts = []
    for lines, events in batches:
        verdicts += engine.feed(lines, events)
    [verdict] = [*verdicts, *engine.flush()]
    return verdict


def test_the_controllers_line_blames_the_node_it_names(engine):
    verdict = decide(engine, [([], [start()]), ([syslog(CONTROLLER, 100)], []), ([], [end()])])
    assert verdict.responsible_nodes == ["gpu003"]
    assert engine.workloads.claims.ignored_lines == {}


def test_the_same_line_forged_on_another_jobs_node_is_ignored_and_counted(engine):
    verdict = decide(engine, [([], [start()]), ([syslog(ATTACKER, 100)], []), ([], [end()])])
    assert verdict.responsible_nodes == []
    assert verdict.sub_domain == "unattributed"
    assert engine.workloads.claims.ignored_lines == {ATTACKER: 1}


def test_a_forged_line_before_the_scheduler_named_the_nodes_is_ignored_too(engine):
    # a start record without nodes (the end record names them): the lines are judged at decision
    no_nodes_yet = JobEvent(kind="job_start", workload_id="42", time_ms=T0, nodes=())
    lines = [syslog(ATTACKER, 100), syslog(ATTACKER, 101)]
    verdict = decide(engine, [([], [no_nodes_yet]), (lines, []), ([], [end()])])
    assert verdict.responsible_nodes == []
    assert engine.workloads.claims.ignored_lines == {ATTACKER: 2}


def test_a_forged_earlier_line_does_not_take_the_place_of_the_controllers(engine):
    # same rule, node and minute: the forged line must not become the group's proof and drag the
    # controller's genuine line down with it
    lines = [syslog(ATTACKER, 99), syslog(CONTROLLER, 100)]
    verdict = decide(engine, [([], [start()]), (lines, []), ([], [end()])])
    assert verdict.responsible_nodes == ["gpu003"]
    assert verdict.root_symptom.origin == f"test:{CONTROLLER}:100"
    assert engine.workloads.claims.ignored_lines == {ATTACKER: 1}


def test_a_job_id_in_a_line_from_one_of_the_jobs_own_nodes_still_counts(engine):
    verdict = decide(engine, [([], [start()]), ([syslog("gpu001", 100)], []), ([], [end()])])
    assert verdict.responsible_nodes == ["gpu003"]


def test_without_configured_scheduler_hosts_claims_are_not_checked_and_the_controllers_line_counts(
    bundled_ruleset, bundled_matcher
):
    """No trust anchor, no check: an unconfigured site keeps slurmctld's evidence (claims.py)."""
    settings = CorrelatorSettings(grace_s=30, tail_s=30)
    engine = AttributionEngine(bundled_ruleset, settings, matcher=bundled_matcher)
    verdict = decide(engine, [([], [start()]), ([syslog(CONTROLLER, 100)], []), ([], [end()])])
    assert verdict.responsible_nodes == ["gpu003"]
    assert engine.workloads.claims.ignored_lines == {}


# A line naming another node than its own, with no job id: it would land on whatever job ran on
# the named node.
NOT_RESPONDING = "slurmctld[1822]: error: Nodes gpu003 not responding, setting DOWN"


def test_a_forged_not_responding_line_does_not_blame_the_node_it_names(engine):
    line = syslog(ATTACKER, 100, NOT_RESPONDING)
    verdict = decide(engine, [([], [start()]), ([line], []), ([], [end()])])
    assert verdict.responsible_nodes == []
    assert engine.workloads.claims.ignored_lines == {ATTACKER: 1}


def test_the_controllers_not_responding_line_blames_the_node_it_names(engine):
    line = syslog(CONTROLLER, 100, NOT_RESPONDING)
    verdict = decide(engine, [([], [start()]), ([line], []), ([], [end()])])
    assert verdict.responsible_nodes == ["gpu003"]


def job_output(host: str, text: str) -> LogLine:
    """A line of the job's own output: the shipper's job_id field names the job, the user
    writes the text."""
    return LogLine(text, host, T0 + 100_000, "applog", f"test:{host}:out", workload_id="42")


def test_a_jobs_output_cannot_blame_a_node_outside_the_job(engine):
    line = job_output("gpu001", "srun: error: Killing JobId=42 on failed node gpu777")
    verdict = decide(engine, [([], [start()]), ([line], []), ([], [end()])])
    assert verdict.responsible_nodes == []
    assert engine.workloads.claims.ignored_lines == {"gpu001": 1}


def test_a_jobs_output_may_still_name_a_node_of_its_own_job(engine):
    """The limit of the rule: a job's own lines steer that job's own verdict (srun reports a
    node failure of its job this way)."""
    line = job_output("gpu001", "srun: error: Killing JobId=42 on failed node gpu003")
    verdict = decide(engine, [([], [start()]), ([line], []), ([], [end()])])
    assert verdict.responsible_nodes == ["gpu003"]


def test_the_extractor_counts_the_node_claims_it_drops_as_a_metric(bundled_ruleset):
    def ignored() -> float:
        return REGISTRY.get_sample_value("faultstream_ignored_claims_total", {"stage": "extractor"}) or 0.0

    worker = ExtractorWorker(Settings(scheduler_hosts=(CONTROLLER,)), bundled_ruleset)
    forged = f"<30>May  1 10:01:40 {ATTACKER} {NOT_RESPONDING}".encode()
    genuine = f"<30>May  1 10:01:40 {CONTROLLER} {NOT_RESPONDING}".encode()
    before = ignored()
    records = [
        ConsumerRecord("logs.syslog", 0, n, T0, 0, None, v, None, 0, 0, [])
        for n, v in enumerate([forged, genuine])
    ]
    worker.process(records)
    assert ignored() - before == 1
    assert worker.claims.ignored_lines == {ATTACKER: 1}
