"""A verdict waits for the report of a node partition that lags but says how far it has come (issue 11).

The 30-minute soak lost evidence this way: the workload side reads a run's end and, 120 s of
record time later, decides it on whatever node reports came (the overdue fallback). A correlator
whose node side lags by more than that (a backlog after a rebalance) has not reported yet, so the
run was decided without those nodes, and the revision horizon dropped their reports when they came.
Now each node partition tells the workload partitions how far its reports have gone
(``NodePartition.announce``), and a run waits while the partition of a missing node is still on its
way; a partition that says nothing (a dead worker, an older release) is waited for only up to the
fallback, as before.
"""

from __future__ import annotations

from typing import Any

from correlator.settings import CorrelatorSettings
from correlator.verdict import Verdict
from streams import wire
from streams.partitions import NodePartition, WorkloadPartition
from streams.records import JobEvent
from streams.topics import partition_for
from tests.streams.state_story import xid79_group

T0 = 1_714_557_600_000  # event time
W0 = 1_800_000_000_000  # wall (record) time
SETTINGS = CorrelatorSettings(grace_s=30, tail_s=5)  # overdue after 120 s of record time
PARTITIONS = 2
XID_NODE, LAGGING_NODE = "gpu0044", "gpu0042"  # on node partitions 0 and 1
SOURCE = "extractor-a.0"
END_MS = T0 + 120_000


def _xid(ms: int) -> dict[str, Any]:
    return xid79_group(XID_NODE, ms)


def _job(kind: str, at_ms: int, **facts: Any) -> dict[str, Any]:
    nodes = (XID_NODE, LAGGING_NODE)
    return wire.job(JobEvent(kind, "7", T0 + at_ms, nodes, origin="story:7", **facts))  # type: ignore[arg-type]


class Correlator:
    """Two node partitions and the workload partition that owns job 7, records routed between them
    as the topics would; each side is fed only when the story says so, so one can lag."""

    def __init__(self, ruleset: Any, built_ms: int = W0 - 3_600_000) -> None:
        """``built_ms``: when the workload partition was built (real time, which the story keeps
        equal to record time); by default an hour before the story, so not just (re)started."""
        self.now = built_ms
        self.nodes = [NodePartition(SETTINGS, {}, n, PARTITIONS) for n in range(PARTITIONS)]
        self.workload = self.workload_partition(ruleset, {})
        self.offsets = {"w": -1, 0: -1, 1: -1}
        self.verdicts: list[tuple[int, Verdict]] = []  # (record time decided at, verdict)

    def workload_partition(self, ruleset: Any, table: dict) -> WorkloadPartition:
        own = partition_for("7", PARTITIONS)
        return WorkloadPartition(ruleset, SETTINGS, table, own, PARTITIONS, now_ms=lambda: self.now)

    def to_workload(self, record: dict[str, Any], wall_ms: int) -> dict[int, list[dict[str, Any]]]:
        """Apply one workload-events record; what it sends to each node partition, in order."""
        self.now = max(self.now, wall_ms)
        self.offsets["w"] += 1
        placements, verdicts = self.workload.handle(record, wall_ms, self.offsets["w"])
        self.verdicts += [(wall_ms, v) for v in verdicts]
        out: dict[int, list[dict[str, Any]]] = {n: [] for n in range(PARTITIONS)}
        for place in placements:
            out[partition_for(place.node, PARTITIONS)] += [wire.decode(r) for r in wire.packed_places([place])]
        if (placed := self.workload.announce()) is not None:
            for records in out.values():
                records.append(placed)
        return out

    def to_node(self, n: int, record: dict[str, Any], wall_ms: int, announce: bool = True) -> list[dict]:
        """Apply one node-events record to node partition ``n``; the workload-events records it
        sends: its reports, then (unless it is a silent one) how far its reports have gone."""
        self.offsets[n] += 1
        reports = self.nodes[n].handle(record, wall_ms, self.offsets[n])
        out = [wire.decode(raw) for raw in wire.packed_evidence(reports)]
        if announce and (said := self.nodes[n].announce()) is not None:
            out.append(said)
        return out

    def job_runs_and_ends(self, placements_reach_the_lagging_node: bool = True) -> list[dict]:
        """Job 7 runs two minutes on both nodes; the Xid node's partition reads all of it at once
        and reports. Returns what the lagging node's partition has been sent but not read."""
        held: list[dict[str, Any]] = []
        sends = [
            self.to_workload(wire.watermark(T0, SOURCE, 10_000), W0),
            self.to_workload(_job("job_start", 0, user="alice"), W0),
            self.to_workload(_job("job_end", 120_000, state="FAILED", start_ms=T0, exit_code=1), W0 + 1_000),
        ]
        reports = []
        for sent in sends:
            for record in sent[0]:
                reports += self.to_node(0, record, W0 + 1_000)
            held += sent[1] if placements_reach_the_lagging_node else []
        reports += self.to_node(0, {"t": "groups", "items": [_xid(T0 + 60_000)]}, W0 + 1_000)
        reports += self.to_node(0, wire.node_lines([(XID_NODE, T0, 300, T0 + 100_000)]), W0 + 1_000)
        reports += self.to_node(0, wire.watermark(T0 + 200_000, SOURCE, 10_000), W0 + 2_000)
        for record in reports:
            self.to_workload(record, W0 + 3_000)
        return held

    def lagging_node_catches_up(
        self, held: list[dict], seconds: int, announce: bool = True, first_second: int = 0
    ) -> None:
        """The lagging node partition reads its backlog at half a second of event time per second
        of wall time (records five minutes old); the workload side hears a tick and whatever it
        sends every second, and says in turn how far its placements have gone."""
        backlog = [*held, wire.node_lines([(LAGGING_NODE, T0, 200, T0 + 110_000)])] if held else []
        for second in range(first_second, first_second + seconds):
            now = W0 + 3_000 + second * 1_000
            backlog.append(wire.watermark(T0 + 20_000 + second * 500, SOURCE, 10_000))
            sent = []
            for record in backlog:
                sent += self.to_node(1, record, now - 300_000, announce)
            backlog = []
            for record in [*sent, wire.tick()]:
                backlog += self.to_workload(record, now)[1]  # its placement clock, read a second later


def test_a_node_partition_still_catching_up_holds_the_verdict_until_its_report_arrives(bundled_ruleset):
    correlator = Correlator(bundled_ruleset)
    held = correlator.job_runs_and_ends()

    correlator.lagging_node_catches_up(held, seconds=300)  # its report comes after 260 s, not 120

    [(decided_at, verdict)] = correlator.verdicts
    assert decided_at > W0 + 250_000, "decided only once the lagging node had reported"
    assert verdict.revision == 1
    assert verdict.responsible_nodes == [XID_NODE]
    assert verdict.lines_seen == 500, "both nodes' line counts are in the one verdict"


def test_a_silent_node_partition_is_decided_without_at_the_overdue_limit_then_revised(bundled_ruleset):
    """What the pipeline did before for every node partition, and still does for one that says
    nothing of its progress (a dead worker, an older release)."""
    correlator = Correlator(bundled_ruleset)
    held = correlator.job_runs_and_ends()

    correlator.lagging_node_catches_up(held, seconds=300, announce=False)

    (first_at, first), (_, revised) = correlator.verdicts
    assert W0 + 120_000 <= first_at < W0 + 130_000
    assert first.lines_seen == 300, "decided without the silent node"
    assert revised.revision == 2 and revised.lines_seen == 500


def test_a_node_partition_that_passes_the_run_without_its_report_releases_the_verdict(bundled_ruleset):
    """The node's placement was lost: its partition holds no run to report, and once it says it
    has passed the run's end, nothing more is coming from it and the run is decided without it."""
    correlator = Correlator(bundled_ruleset)
    correlator.job_runs_and_ends(placements_reach_the_lagging_node=False)

    correlator.lagging_node_catches_up([], seconds=300)

    [(decided_at, verdict)] = correlator.verdicts
    assert W0 + 255_000 <= decided_at < W0 + 270_000, "when the partition passed end + grace"
    assert verdict.lines_seen == 300 and verdict.responsible_nodes == [XID_NODE]


def test_a_restarted_workload_partition_still_waits_for_the_lagging_node(bundled_ruleset):
    """The node partitions' word is kept in the workload partition's clock record, with its offset
    marker: one recovered from its changelog (a crash, a rebalance) waits as its predecessor did."""
    correlator = Correlator(bundled_ruleset)
    table: dict = {}
    correlator.workload = correlator.workload_partition(bundled_ruleset, table)
    held = correlator.job_runs_and_ends()
    correlator.lagging_node_catches_up(held, seconds=100)
    correlator.workload.persist(everything=True)
    correlator.workload = correlator.workload_partition(bundled_ruleset, table)
    assert correlator.workload.clock.reporters, "the word of the node partitions came back with the clock"

    correlator.lagging_node_catches_up([], seconds=0)  # nothing new yet: the recovered partition waits
    for second in range(100, 300):  # and reads on, as the lagging node partition does
        correlator.lagging_node_catches_up([], seconds=1, first_second=second)

    [(decided_at, verdict)] = correlator.verdicts
    assert decided_at > W0 + 250_000 and verdict.lines_seen == 500


def test_after_a_restart_a_node_partition_not_heard_from_yet_holds_the_run_for_up_to_ten_minutes(
    bundled_ruleset,
):
    """The soak of 2026-12-01: after a kill -9 the node side took six minutes to recover its table,
    while the workload side read the outage's backlog, whose record time ran past the 120-s limit
    at once, and decided 40 runs without their nodes. A workload partition just built waits for a
    node partition that has not spoken since, as long as RECOVERY_WAIT_MS (real time)."""
    slow = Correlator(bundled_ruleset, built_ms=W0)  # built as the story starts
    slow.job_runs_and_ends(placements_reach_the_lagging_node=False)
    slow.lagging_node_catches_up([], seconds=300, announce=False)  # recovering: not a word
    assert slow.verdicts == [], "five minutes after its build it still waits"

    for second in range(300, 700):  # ten minutes after its build it stops waiting
        slow.to_workload(wire.tick(), W0 + 3_000 + second * 1_000)
    [(decided_at, verdict)] = slow.verdicts
    assert W0 + 600_000 <= decided_at < W0 + 605_000 and verdict.lines_seen == 300
