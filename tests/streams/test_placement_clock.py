"""Node evidence waits for the placements that travel through a lagging workload side (issue 11).

After a correlator kill -9, or a `faultstream load` at full speed, the node partitions run days of
event time ahead of the workload partitions, which send the runs' placements. A node partition
expired a run's evidence by its own watermark before the run's placement reached it, and the run
was decided without it (`Fail Unattributed`, `lines_seen` 1). Each workload partition now tells the
node partitions how far its placements have gone (``WorkloadPartition.announce``), and a node
partition expires nothing that clock has not passed either.
"""

from __future__ import annotations

from typing import Any

from correlator.settings import CorrelatorSettings
from correlator.verdict import Verdict
from streams import wire
from streams.partitions import NodePartition, WorkloadPartition
from streams.records import JobEvent
from tests.streams.state_story import xid79_group

T0 = 1_714_557_600_000  # event time
W0 = 1_800_000_000_000  # wall (record) time
SETTINGS = CorrelatorSettings(grace_s=30, tail_s=5)  # idle_retention_s: 2 h
NODE = "gpu0042"
SOURCE = "extractor-a.0"
HOUR = 3_600_000


def _xid(ms: int) -> dict[str, Any]:
    return xid79_group(NODE, ms)


class Pipeline:
    """One node partition and one workload partition, records routed between them as the topics
    would; each side is fed only when the story says so, so one can lag behind the other."""

    def __init__(self, ruleset: Any, announce: bool = True) -> None:
        self.nodes = NodePartition(SETTINGS, {}, 0, 1)
        self.workloads = WorkloadPartition(ruleset, SETTINGS, {}, 0, 1)
        self.announce = announce
        self.offsets = [-1, -1]
        self.verdicts: list[Verdict] = []

    def to_nodes(self, record: dict[str, Any], wall_ms: int) -> list[dict[str, Any]]:
        """Apply one node-events record; the reports it made, as workload-events records."""
        self.offsets[0] += 1
        reports = self.nodes.handle(record, wall_ms, self.offsets[0])
        return [wire.decode(raw) for raw in wire.packed_evidence(reports)]

    def to_workloads(self, record: dict[str, Any], wall_ms: int) -> list[dict[str, Any]]:
        """Apply one workload-events record; what it sends to the node partitions, in order: the
        placements, then (after them, as the correlator app sends it) how far they have gone."""
        self.offsets[1] += 1
        placements, verdicts = self.workloads.handle(record, wall_ms, self.offsets[1])
        self.verdicts += verdicts
        out = [wire.decode(raw) for raw in wire.packed_places(placements)]
        if self.announce and (placed := self.workloads.announce()) is not None:
            out.append(placed)
        return out


def _job(kind: str, at_ms: int, **facts: Any) -> dict[str, Any]:
    return wire.job(JobEvent(kind, "7", T0 + at_ms, (NODE,), origin="story:7", **facts))  # type: ignore[arg-type]


def _story(ruleset: Any, announce: bool) -> Verdict:
    """Job 7 runs on one node for two minutes, and the node's GPU falls off the bus. The extractor
    reads on at full speed: the node side reads six hours of event time in six minutes, while the
    workload side is still at the job's start (a restarted correlator catching up)."""
    pipe = Pipeline(ruleset, announce)
    held: list[dict[str, Any]] = []  # node-events records the workload side sent, not read yet
    held += pipe.to_workloads(wire.watermark(T0, SOURCE, 10_000), W0)
    for record in held:
        pipe.to_nodes(record, W0)
    held = []
    pipe.to_nodes({"t": "groups", "items": [_xid(T0 + 60_000)]}, W0 + 1_000)
    pipe.to_nodes(wire.node_lines([(NODE, T0, 500, T0 + 100_000)]), W0 + 1_000)
    for second in range(2, 360):  # a minute of event time a second
        pipe.to_nodes(wire.watermark(T0 + second * 60_000, SOURCE, 10_000), W0 + second * 1_000)

    wall = W0 + 360_000  # the workload side reads the job's records only now
    to_nodes = pipe.to_workloads(_job("job_start", 0, user="alice"), wall)
    to_nodes += pipe.to_workloads(_job("job_end", 120_000, state="FAILED", start_ms=T0, exit_code=1), wall)
    to_nodes += pipe.to_workloads(wire.watermark(T0 + 6 * HOUR, SOURCE, 10_000), wall + 1_000)
    reports = []
    for record in [*to_nodes, wire.tick()]:
        reports += pipe.to_nodes(record, wall + 2_000)
    for record in [*reports, wire.tick()]:
        pipe.to_workloads(record, wall + 3_000)
    [verdict] = pipe.verdicts
    return verdict


def test_a_node_far_ahead_keeps_its_evidence_until_the_lagging_workload_side_places_the_run(bundled_ruleset):
    verdict = _story(bundled_ruleset, announce=True)

    assert verdict.responsible_nodes == [NODE]
    assert verdict.lines_seen == 500, "the node's line counts reached the verdict too"


def test_without_word_from_the_workload_side_the_node_expires_by_its_own_watermark_as_before(bundled_ruleset):
    """What the pipeline did before (and still does with a workload side that never says how far
    its placements have gone): the evidence is gone when the placement arrives."""
    verdict = _story(bundled_ruleset, announce=False)

    assert verdict.responsible_nodes == [] and verdict.lines_seen == 0


def test_a_restarted_node_partition_still_waits_for_the_placements(bundled_ruleset):
    """The workload partitions' word is kept in the node partition's clock record, with its offset
    marker: a node partition recovered from its changelog waits as the one before it did."""
    pipe = Pipeline(bundled_ruleset)
    for record in pipe.to_workloads(wire.watermark(T0, SOURCE, 10_000), W0):
        pipe.to_nodes(record, W0)
    pipe.nodes.persist(everything=True)

    recovered = NodePartition(SETTINGS, pipe.nodes.table, 0, 1)

    assert recovered.clock.placed(W0 + 60_000) == T0
    assert recovered.clock.placed(W0 + 60_000) == pipe.nodes.clock.placed(W0 + 60_000)


def test_a_workload_partition_speaks_once_a_second_and_only_when_its_clock_moved(bundled_ruleset):
    part = WorkloadPartition(bundled_ruleset, SETTINGS, {}, 3, 4)
    said = []
    steps = [(T0, W0), (T0 + 5, W0 + 500), (T0 + 5, W0 + 1_500), (T0 + 9, W0 + 2_600)]
    for offset, (event_ms, wall_ms) in enumerate(steps):
        part.handle(wire.watermark(event_ms, SOURCE, 10_000), wall_ms, offset)
        said.append(part.announce())

    assert said == [
        wire.placed("workload:3", T0),  # at once: a restarted partition's clock stands in its changelog
        None,  # within the second
        wire.placed("workload:3", T0 + 5),
        wire.placed("workload:3", T0 + 9),
    ]
