"""A node partition's state survives a restart: symptoms and runs in the node's record, line
counts in a record of their own (both written with the offset marker once a second of record time,
and on hand-over), both read back."""

from __future__ import annotations

from correlator import state_codec
from correlator.evidence import EvidenceGroup
from correlator.settings import CorrelatorSettings
from extractors.symptom import Symptom
from streams import wire
from streams.partitions import NodePartition, line_counts_key
from streams.topics import partition_for

T0 = 1_714_557_600_000
SETTINGS = CorrelatorSettings()


def _group(node: str, ms: int) -> EvidenceGroup:
    symptom = Symptom(
        "gpu.xid.79",
        "gpu_fallen_off_bus",
        "hardware",
        "cause",
        90,
        None,
        None,
        node,
        ms,
        "dmesg",
        "NVRM: Xid 79",
        "t:0:1",
    )
    return EvidenceGroup.start(symptom)


def test_a_restarted_node_partition_reads_back_symptoms_runs_and_line_counts():
    node = "gpu0007"
    table: dict = {}
    part = NodePartition(SETTINGS, table, partition_for(node, 4), 4)
    records = [
        wire.node_lines([(node, T0, 120, T0 + 59_000), (node, T0 + 60_000, 80, T0 + 90_000)]),
        {"t": "groups", "items": [_group(node, T0 + 30_000).to_dict()]},
        {"t": "places", "items": [{"node": node, "workload_id": "42", "start_ms": T0, "end_ms": None}]},
    ]
    for offset, record in enumerate(records):
        part.handle(record, T0 + offset * 2_000, offset)  # two seconds apart: the counts are written
        part.persist()
    assert line_counts_key(node) in table
    recovered = NodePartition(SETTINGS, table, part.partition, 4)
    assert recovered.nodes.states[node] == part.nodes.states[node]
    assert recovered.nodes.states[node].window.lines_between(T0, T0 + 120_000) == 200


def test_a_forgotten_node_leaves_no_line_counts_behind():
    node = "gpu0008"
    table: dict = {}
    part = NodePartition(SETTINGS, table, partition_for(node, 4), 4)
    part.handle(wire.node_lines([(node, T0, 5, T0)]), T0, 0)
    part.persist(everything=True)
    assert line_counts_key(node) in table
    part.nodes.expire(T0 + 10 * 3_600_000)  # long after idle retention, no run needs it
    part.persist(everything=True)
    assert node not in part.nodes.states and line_counts_key(node) not in table and node not in table


def test_a_node_partition_recovered_after_a_crash_counts_every_line_once():
    """A crash between two flushes: the recovered partition is the last snapshot, and applying the
    records after its offset marker again gives the uninterrupted run's state, counts included."""
    node = "gpu0009"
    records = [wire.node_lines([(node, T0 + i * 1_000, 3, T0 + i * 1_000)]) for i in range(40)]
    records[10] = {"t": "groups", "items": [_group(node, T0 + 10_000).to_dict()]}
    records[20] = {"t": "places", "items": [{"node": node, "workload_id": "7", "start_ms": T0, "end_ms": None}]}
    partition = partition_for(node, 4)

    def feed(part: NodePartition, upto: int) -> None:
        for offset, record in enumerate(records[:upto]):
            if part.fresh(offset):  # what the stage does with a record redelivered after a restart
                part.handle(record, T0 + offset * 300, offset)  # a flush every fourth record
                part.persist()

    uninterrupted = NodePartition(SETTINGS, {}, partition, 4)
    feed(uninterrupted, len(records))
    table: dict = {}
    feed(NodePartition(SETTINGS, table, partition, 4), 26)  # then kill -9: no hand-over
    recovered = NodePartition(SETTINGS, table, partition, 4)
    assert 0 < recovered.clock.offset < 25  # the snapshot is older than the crash
    feed(recovered, len(records))
    mine, theirs = recovered.nodes.states[node], uninterrupted.nodes.states[node]
    assert state_codec.encode_node_state(mine) == state_codec.encode_node_state(theirs)
    assert mine.window.line_slots == theirs.window.line_slots
    assert recovered.nodes.states[node].window.lines_between(T0, T0 + 60_000) == 3 * 38
