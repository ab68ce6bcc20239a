"""Correlator stories on a small inline ruleset, driven directly: no Kafka, no event loop.

Times are seconds after T0; every test builds lines and job events by hand.
"""

from __future__ import annotations

import pytest

from correlator.engine import AttributionEngine
from correlator.settings import CorrelatorSettings
from extractors.loader import load_ruleset
from extractors.matchers import HyperscanMatcher
from streams.records import JobEvent, LogLine
from tests.conftest import write_ruleset
from tests.correlator.story_rules import story_ruleset_files

T0 = 1_714_557_600_000  # 2024-05-01T10:00:00Z
NODES = tuple(f"gpu{n:03d}" for n in range(1, 17))


def at(seconds: float) -> int:
    return T0 + int(seconds * 1000)


def line(text: str, host: str, seconds: float, source: str = "applog", workload: str | None = None) -> LogLine:
    return LogLine(
        text=text,
        host=host,
        time_ms=at(seconds),
        source=source,
        origin=f"test:{host}:{seconds}",
        workload_id=workload,
    )


def start(job: str, seconds: float, nodes=NODES) -> JobEvent:
    return JobEvent(kind="job_start", workload_id=job, time_ms=at(seconds), nodes=tuple(nodes))


def end(job: str, seconds: float, state: str, nodes=NODES, start_s: float = 0, **extra) -> JobEvent:
    return JobEvent(
        kind="job_end",
        workload_id=job,
        time_ms=at(seconds),
        nodes=tuple(nodes),
        state=state,
        start_ms=at(start_s),
        **extra,
    )


@pytest.fixture
def engine(tmp_path):
    ruleset = load_ruleset(write_ruleset(tmp_path, story_ruleset_files()))
    settings = CorrelatorSettings(grace_s=30, tail_s=30)
    return AttributionEngine(ruleset, settings, matcher=HyperscanMatcher(ruleset))


def run(engine, batches) -> list:
    verdicts = []
    for lines, events in batches:
        verdicts += engine.feed(lines, events)
    return verdicts + engine.flush()


def test_xid79_on_one_node_blames_that_node_not_nccl_peers(engine):
    # 0 start ─ 100 Xid 79 on gpu007 ─ 101..160 NCCL noise on the 15 others ─ 200 FAILED
    noise = [
        line("NCCL WARN Connection closed by remote peer", n, 101 + i)
        for i, n in enumerate(x for x in NODES if x != "gpu007")
        for _ in range(20)
    ]
    verdicts = run(
        engine,
        [
            ([], [start("42", 0)]),
            ([line("NVRM: Xid (PCI:0000:3b:00): 79, pid=1", "gpu007", 100, "dmesg")], []),
            (noise, []),
            ([], [end("42", 200, "FAILED")]),
            ([line("heartbeat", "gpu001", 400)], []),
        ],
    )
    assert len(verdicts) == 1
    verdict = verdicts[0]
    assert verdict.terminal_state == "fail"
    assert verdict.sub_domain == "hardware"
    assert verdict.responsible_nodes == ["gpu007"]
    assert verdict.root_symptom.rule_id == "t.xid79"
    assert verdict.root_symptom.captures == {"pci": "0000:3b:00"}
    assert verdict.uncertainty_type is None
    echo = next(c for c in verdict.chain if c.symptom == "nccl_connection_closed")
    assert echo.role == "downstream" and echo.count == 300 and len(echo.nodes) == 15
    assert verdict.verdict.attribution_outcome == "Fail Hardware"


def test_symptoms_before_the_job_records_are_placed_when_they_arrive(engine):
    # the shipper is fast, the jobcomp record is late: lines first, then start+end together
    verdicts = run(
        engine,
        [
            ([line("torch.OutOfMemoryError: CUDA out of memory. Tried", "gpu003", 50)], []),
            ([line("NCCL WARN Connection closed by remote peer", "gpu004", 51)], []),
            ([], [start("7", 0), end("7", 60, "FAILED")]),
            ([line("tick", "gpu001", 500)], []),
        ],
    )
    assert [v.sub_domain for v in verdicts] == ["user"]
    assert verdicts[0].root_symptom.node == "gpu003"
    assert verdicts[0].responsible_nodes == []


def test_lines_out_of_order_within_the_grace_period_still_count(engine):
    # job ends at 60; an Xid stamped 55 arrives after the end record, before 60+30 of event time
    verdicts = run(
        engine,
        [
            ([], [start("8", 0)]),
            ([], [end("8", 60, "FAILED")]),
            ([line("tick", "gpu002", 70)], []),
            ([line("NVRM: Xid (PCI:0000:01:00): 79, pid=1", "gpu002", 55, "dmesg")], []),
            ([line("tick", "gpu002", 200)], []),
        ],
    )
    assert len(verdicts) == 1 and verdicts[0].sub_domain == "hardware"
    assert verdicts[0].revision == 1


def test_late_evidence_after_the_verdict_makes_a_new_revision(engine):
    # ── 0 start ── 60 FAILED ── (90 grace over: rev 1 unattributed) ── Xid stamped 59 arrives
    verdicts = run(
        engine,
        [
            ([], [start("9", 0, nodes=["gpu001"]), end("9", 60, "FAILED", nodes=["gpu001"])]),
            ([line("tick", "gpu001", 100)], []),
            ([line("NVRM: Xid (PCI:0000:01:00): 79, pid=1", "gpu001", 59, "dmesg")], []),
        ],
    )
    assert [(v.revision, v.sub_domain) for v in verdicts] == [(1, "unattributed"), (2, "hardware")]


def test_late_plain_lines_do_not_make_a_new_revision(engine):
    verdicts = run(
        engine,
        [
            ([], [start("10", 0, nodes=["gpu001"]), end("10", 60, "FAILED", nodes=["gpu001"])]),
            ([line("tick", "gpu001", 100)], []),
            ([line("an ordinary line", "gpu001", 59)], []),
        ],
    )
    assert [v.revision for v in verdicts] == [1]


def test_failed_job_with_no_evidence_is_unattributed(engine):
    verdicts = run(engine, [([line("all good", "gpu001", 10)], [start("11", 0), end("11", 60, "FAILED")])])
    assert verdicts[0].sub_domain == "unattributed"
    assert verdicts[0].uncertainty_type == "no_evidence"
    assert verdicts[0].root_symptom is None
    assert verdicts[0].verdict.attribution_outcome == "Fail Unattributed"


def test_hardware_and_user_causes_independent_of_each_other_are_ambiguous(engine):
    verdicts = run(
        engine,
        [
            (
                [
                    line("CUDA out of memory", "gpu003", 100),
                    line("NVRM: Xid (PCI:0000:01:00): 79, pid=1", "gpu009", 101, "dmesg"),
                ],
                [start("12", 0), end("12", 200, "FAILED")],
            )
        ],
    )
    verdict = verdicts[0]
    assert verdict.sub_domain == "ambiguous"
    assert verdict.failure_domains == ["hardware", "user"]
    assert verdict.uncertainty_type == "competing_domains"
    assert verdict.responsible_nodes == ["gpu009"]
    assert sorted(c.symptom for c in verdict.chain if c.role == "root") == [
        "cuda_out_of_memory",
        "gpu_fallen_off_bus",
    ]


def test_an_xid_before_the_job_started_is_context(engine):
    # -100 Xid 79 on gpu001 (another tenant's run) ── 0 start ── 60 FAILED, nothing else
    verdicts = run(
        engine,
        [
            (
                [line("NVRM: Xid (PCI:0000:01:00): 79, pid=1", "gpu001", -100, "dmesg")],
                [start("13", 0), end("13", 60, "FAILED")],
            )
        ],
    )
    assert verdicts[0].sub_domain == "unattributed"
    assert [c.role for c in verdicts[0].chain] == ["context"]


def test_watchdog_timeout_alone_is_ambiguous_not_blamed(engine):
    verdicts = run(
        engine,
        [
            (
                [line("Watchdog caught collective operation timeout: WorkNCCL", "gpu005", 700)],
                [start("14", 0), end("14", 800, "FAILED")],
            )
        ],
    )
    assert verdicts[0].sub_domain == "ambiguous"
    assert verdicts[0].uncertainty_type == "secondary_only"
    assert verdicts[0].responsible_nodes == []


def test_watchdog_after_an_ib_error_is_downstream_of_it(engine):
    verdicts = run(
        engine,
        [
            (
                [
                    line("NET/IB : Got completion from peer 10.0.0.7 with error 12", "gpu002", 100),
                    line("Watchdog caught collective operation timeout: WorkNCCL", "gpu005", 700),
                ],
                [start("15", 0), end("15", 800, "FAILED")],
            )
        ],
    )
    roles = {c.symptom: c.role for c in verdicts[0].chain}
    assert roles == {"nccl_ib_completion_error": "root", "nccl_watchdog_timeout": "downstream"}
    assert verdicts[0].sub_domain == "infrastructure"
    assert verdicts[0].responsible_nodes == []  # the logging rank is the survivor, not the culprit


def test_ten_thousand_repeats_collapse_into_a_few_groups(engine):
    flood = [line("NCCL WARN Connection closed by remote peer", "gpu002", 100 + i / 100) for i in range(10_000)]
    verdicts = run(engine, [(flood, [start("16", 0), end("16", 300, "FAILED")])])
    element = verdicts[0].chain[0]
    assert element.count == 10_000 and element.nodes == ["gpu002"]
    assert verdicts[0].symptoms_seen == 10_000


def test_node_state_stays_bounded_by_distinct_symptoms_not_lines(engine):
    flood = [line("NCCL WARN Connection closed by remote peer", "gpu002", i / 10) for i in range(50_000)]
    engine.feed(flood, [])
    groups = engine.nodes.states["gpu002"].window.groups
    assert len(groups) <= 5000 / 60 + 2  # one group per minute of event time


def test_state_older_than_retention_is_expired(engine):
    engine.feed([line("NCCL WARN Connection closed by remote peer", "gpu002", 0)], [])
    engine.feed([line("tick", "gpu003", 3 * 3600)], [])
    assert "gpu002" not in engine.nodes.states


def test_a_run_decided_before_its_nodes_were_known_is_revised_when_they_report(engine):
    # Kubernetes events are keyed by event uid, so a pod's "Scheduled" can arrive after the Job's
    # end: decided first on what names the job, revised once the node is known and reports.
    assign = JobEvent(kind="node_assign", workload_id="17", time_ms=at(0), nodes=("gpu003",))
    verdicts = run(
        engine,
        [
            (
                [line("NVRM: Xid (PCI:0000:01:00): 79, pid=1", "gpu003", 50, "dmesg")],
                [end("17", 60, "FAILED", nodes=(), start_s=0)],
            ),
            ([line("tick", "gpu001", 200)], []),
            ([], [assign]),
            ([line("tick", "gpu001", 300)], []),
        ],
    )
    assert [(v.revision, v.sub_domain, v.responsible_nodes) for v in verdicts] == [
        (1, "unattributed", []),
        (2, "hardware", ["gpu003"]),
    ]
