"""A small story told to the live correlator's partition processors, for the state-format tests.

Two jobs on three nodes: 4101 (gpu001 loses its GPU, gpu002's NCCL says its peer is gone) ends
and is decided; 4102 (gpu003 runs out of GPU memory) ends but its node has not reported yet.
``tell_story`` leaves both tables as they stand at that point; ``finish_story`` lets event time
pass 4102's grace, so that its verdict is decided. tests/streams/fixtures/state-v1.json holds the
tables the story left with the release before table values carried a version (commit e9c5fd8).
"""

from __future__ import annotations

from typing import Any

from correlator.batching import collapse_batch
from correlator.evidence import EvidenceGroup
from correlator.settings import CorrelatorSettings
from correlator.verdict import Verdict
from extractors.loader import Ruleset
from extractors.matchers import ReferenceMatcher
from extractors.symptom import Symptom
from streams import wire
from streams.partitions import NodePartition, WorkloadPartition
from streams.records import JobEvent, LogLine

T0 = 1_714_557_600_000
SETTINGS = CorrelatorSettings(grace_s=30, tail_s=5)
PARTITIONS = 1  # one partition of each side holds every key of the story

NCCL_CLOSED = (
    "gpu002:1:1 [0] NCCL INFO Call to recv from 10.0.0.1<43210> failed : Connection closed by remote peer"
)
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
LINES = [  # (host, ms after T0, source, job named by the record, text)
    ("gpu001", 120_000, "dmesg", None, "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus."),
    ("gpu002", 125_000, "applog", None, NCCL_CLOSED),
    ("gpu002", 126_000, "applog", None, NCCL_CLOSED),
    ("gpu003", 150_000, "applog", "4102", OOM),
]


def xid79_group(node: str, ms: int) -> dict[str, Any]:
    """An Xid 79 on ``node`` at ``ms``, as the node side holds it (an evidence group's record)."""
    symptom = Symptom(
        "gpu.xid.79", "gpu_fallen_off_bus", "hardware", "cause", 95, "XID-79", None, node, ms, "dmesg",
        "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.", "logs.dmesg:0:7",
    )  # fmt: skip
    return EvidenceGroup.start(symptom).to_dict()


class Story:
    """Both partitions, with the records routed between them as the live topics would."""

    def __init__(self, ruleset: Ruleset, node_table: dict, workload_table: dict) -> None:
        self.ruleset = ruleset
        self.nodes = NodePartition(SETTINGS, node_table, 0, PARTITIONS)
        self.workloads = WorkloadPartition(ruleset, SETTINGS, workload_table, 0, PARTITIONS)
        self.node_offset = self.nodes.clock.offset
        self.workload_offset = self.workloads.clock.offset
        self.verdicts: list[Verdict] = []

    def to_nodes(self, record: dict[str, Any], at_ms: int) -> None:
        self.node_offset += 1
        reports = self.nodes.handle(record, T0 + at_ms, self.node_offset)
        self.nodes.persist(everything=True)  # the story's tables are snapshots after each record
        for raw in wire.packed_evidence(reports):
            self.to_workloads(wire.decode(raw), at_ms)

    def to_workloads(self, record: dict[str, Any], at_ms: int) -> None:
        self.workload_offset += 1
        placements, verdicts = self.workloads.handle(record, T0 + at_ms, self.workload_offset)
        self.workloads.persist(everything=True)
        self.verdicts += verdicts
        for raw in wire.packed_places(placements):
            self.to_nodes(wire.decode(raw), at_ms)

    def job(self, kind: str, workload_id: str, nodes: tuple[str, ...], at_ms: int, **facts: Any) -> None:
        event = JobEvent(kind, workload_id, T0 + at_ms, nodes, origin=f"story:{workload_id}", **facts)  # type: ignore[arg-type]
        self.to_workloads(wire.job(event), at_ms)

    def symptoms(self, at_ms: int) -> None:
        """The story's lines, scanned and collapsed as the extractor does; the application's own
        line names its job (a direct symptom, sent to the workload side)."""
        lines = [
            LogLine(text, node, T0 + ms, source, f"story:@{i}", workload_id)
            for i, (node, ms, source, workload_id, text) in enumerate(LINES)
        ]
        batch = collapse_batch(lines, ReferenceMatcher(self.ruleset).extract_batch(lines))
        for raw in wire.packed_groups(batch.node_groups):
            self.to_nodes(wire.decode(raw), at_ms)
        for raw in wire.packed_groups(batch.direct_groups):
            self.to_workloads(wire.decode(raw), at_ms)


def tell_story(ruleset: Ruleset, node_table: dict, workload_table: dict) -> Story:
    story = Story(ruleset, node_table, workload_table)
    story.job("job_start", "4101", ("gpu001", "gpu002"), 0, user="alice")
    story.job("job_start", "4102", ("gpu003",), 10_000, user="bob")
    counts = [("gpu001", T0, 100, T0 + 50_000), ("gpu002", T0, 80, T0 + 55_000)]
    story.to_nodes(wire.node_lines([*counts, ("gpu003", T0 + 60_000, 40, T0 + 90_000)]), 100_000)
    story.symptoms(160_000)
    story.job("job_end", "4101", ("gpu001", "gpu002"), 130_000, state="NODE_FAIL", start_ms=T0, exit_code=1)
    story.to_workloads(wire.workload_lines("4102", 3, T0 + 150_000), 165_000)
    story.to_nodes(wire.watermark(T0 + 170_000), 170_000)  # 4101's grace is over: decided
    story.job("job_end", "4102", ("gpu003",), 200_000, state="FAILED", start_ms=T0 + 10_000, exit_code=1)
    story.to_nodes(wire.tick(), 201_000)
    return story


def finish_story(story: Story) -> list[Verdict]:
    """Event time passes 4102's end plus grace: the node reports, the workload decides."""
    story.to_nodes(wire.watermark(T0 + 240_000), 240_000)
    story.to_workloads(wire.tick(), 241_000)
    return story.verdicts
