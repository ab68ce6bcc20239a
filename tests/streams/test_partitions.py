"""The node partition processor and the partition clock, driven with dicts as tables.

(Storage of a node's state and line counts across a restart: test_node_partition_storage.py; the
clock's idle advance and its per-extractor watermarks: test_partition_clock.py.)
"""

from __future__ import annotations

from correlator.evidence import EvidenceGroup
from correlator.settings import CorrelatorSettings
from extractors.symptom import Symptom
from streams import wire
from streams.partition_state import PartitionClock
from streams.partitions import NodePartition

T0 = 1_714_557_600_000
SETTINGS = CorrelatorSettings(grace_s=30, tail_s=5)
NODE = "gpu0042"


def _xid(ms: int) -> dict:
    symptom = Symptom(
        "gpu.xid.79", "gpu_fallen_off_bus", "hardware", "cause", 95, "XID-79", None, NODE, ms, "dmesg",
        "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.", "logs.dmesg:0:7",
    )  # fmt: skip
    return EvidenceGroup.start(symptom).to_dict()


def _place(end_ms: int | None) -> dict:
    return {"t": "places", "items": [{"node": NODE, "workload_id": "7", "start_ms": T0, "end_ms": end_ms}]}


class NodeStory:
    """A node partition fed one record after another, a second of record time apart."""

    def __init__(self, table: dict | None = None) -> None:
        self.table = table if table is not None else {}
        self.part = NodePartition(SETTINGS, self.table, 0, 1)
        self.offset = self.part.clock.offset
        self.wall_ms = T0

    def feed(self, record: dict, wall_ms: int | None = None) -> list:
        self.offset += 1
        self.wall_ms = wall_ms if wall_ms is not None else self.wall_ms + 1_000
        return self.part.handle(record, self.wall_ms, self.offset)


def test_a_node_reports_its_run_once_the_grace_after_the_job_end_has_passed():
    story = NodeStory()
    assert story.feed(_place(None)) == []
    assert story.feed({"t": "groups", "items": [_xid(T0 + 60_000)]}, T0 + 60_000) == []
    assert story.feed(wire.node_lines([(NODE, T0 + 60_000, 500, T0 + 61_000)]), T0 + 61_000) == []
    assert story.feed(_place(T0 + 90_000), T0 + 90_000) == [], "ended, but its grace is not over"
    assert story.feed(wire.tick(), T0 + 110_000) == [], "the idle clock is at 110 s, the grace ends at 120 s"

    [report] = story.feed(wire.tick(), T0 + 125_000)  # the idle clock passes the job's end + 30 s

    assert (report.workload_id, report.node, report.end_ms, report.lines) == ("7", NODE, T0 + 90_000, 500)
    assert [g.first.rule_id for g in report.groups] == ["gpu.xid.79"]
    assert story.feed(wire.tick(), T0 + 130_000) == [], "a run is reported once"


def test_a_record_at_or_below_the_saved_marker_is_a_replay_and_is_skipped():
    story = NodeStory()
    for record in (_place(None), {"t": "groups", "items": [_xid(T0 + 60_000)]}):
        story.feed(record)
    story.part.persist(everything=True)

    restarted = NodePartition(SETTINGS, story.table, 0, 1)

    assert [restarted.fresh(offset) for offset in (0, 1, 2)] == [False, False, True]


def test_a_dead_lettered_record_moves_the_marker_past_itself():
    story = NodeStory()
    story.feed(_place(None))  # offset 0
    story.part.passed(5)  # offsets 1-5 could not be applied; 5 went to the dead letters
    story.part.persist(everything=True)

    assert not story.part.fresh(5) and story.part.fresh(6)
    assert NodePartition(SETTINGS, story.table, 0, 1).clock.offset == 5, "the marker is saved with the state"


def test_the_lagged_watermark_is_where_the_clock_stood_that_long_ago():
    clock = PartitionClock()
    for second in range(0, 121, 10):
        clock.observe(T0 + second * 60_000, wall_ms=T0 + second * 1_000)  # a minute of events a second
        clock.effective(T0 + second * 1_000)

    assert clock.lagged(T0 + 120_000, delay_ms=60_000) == T0 + 60 * 60_000
    assert clock.lagged(T0 + 30_000, delay_ms=60_000) == 0, "no history that old yet: expire nothing"


def test_a_node_report_sent_again_with_its_evidence_expired_does_not_replace_the_full_one(bundled_ruleset):
    """After a crash the workload side sends a run's placements again; a node whose evidence for the
    run had expired meanwhile reports it empty. The Xid node must stay blamed."""
    from correlator.node_side import NodeEvidence
    from streams.partitions import WorkloadPartition

    part = WorkloadPartition(bundled_ruleset, SETTINGS, {}, 0, 1)
    end = {"t": "job", "e": {"kind": "job_end", "workload_id": "7", "time_ms": T0 + 90_000, "state": "FAILED",
                             "start_ms": T0, "nodes": [NODE]}}  # fmt: skip
    part.handle(end, T0 + 90_000, 0)
    full = NodeEvidence("7", NODE, [EvidenceGroup.from_dict(_xid(T0 + 60_000))], 500, T0 + 90_000)
    empty = NodeEvidence("7", NODE, [], 0, T0 + 90_000)
    _, [verdict] = part.handle(wire.evidence(full), T0 + 125_000, 1)
    _, again = part.handle(wire.evidence(empty), T0 + 126_000, 2)

    assert verdict.responsible_nodes == [NODE] and again == []
    assert part.workloads.states["7"].evidence[NODE].lines == 500
