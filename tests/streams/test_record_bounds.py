"""No record the correlator writes grows with the number of nodes (issue 7: a 1,250-node job's
workload state was a 1,002,322-byte changelog record, over the broker's 1 MiB default).

A 12,500-node job (100,000 GPUs) fails the way big jobs fail: one node's Xid 79, then every node
logs that its NCCL peer closed the connection. Its state, its node reports and its verdict are
written by the live correlator's partition processors (dict tables here, faust tables live), and
each record must stay under the bound docs/architecture.md states.
"""

from __future__ import annotations

import orjson
import pytest

from correlator.settings import CorrelatorSettings
from scripts.bench.workload import STORM_JOB, storm_xid_node, write_storm_recording
from streams import wire
from streams.backtest import backtest, latest_revisions
from streams.partitions import WorkloadPartition
from streams.wire import MAX_RECORD_BYTES

NODES = 12_500
SETTINGS = CorrelatorSettings(grace_s=5, tail_s=5)


@pytest.fixture(scope="module")
def storm(bundled_ruleset, tmp_path_factory):
    """The backtest of the storm: its verdict, and the reports every node made."""
    path = tmp_path_factory.mktemp("storm") / "storm.jsonl"
    write_storm_recording(path, NODES, 60_000, storm_share=0.5)  # 2-3 storm lines per node
    result = backtest(path, bundled_ruleset, SETTINGS)
    state = result.engine.workloads.states[str(STORM_JOB)]
    return latest_revisions(result.verdicts), state


def test_the_12500_node_storm_blames_the_xid_node(storm):
    verdicts, state = storm
    assert len(state.evidence) == NODES
    [verdict] = verdicts
    assert (verdict.sub_domain, verdict.responsible_nodes) == ("hardware", [storm_xid_node(NODES)])
    assert verdict.root_symptom.symptom == "gpu_fallen_off_bus"


def test_every_record_of_a_12500_node_storm_stays_under_the_bound(storm, bundled_ruleset):
    verdicts, state = storm
    table: dict = {}
    part = WorkloadPartition(bundled_ruleset, SETTINGS, table, _partition_of(state), 4)
    wall_ms = state.run.end.time_ms
    records = [wire.encode(wire.job(state.run.end)), *wire.packed_evidence(state.evidence.values())]
    sizes = {"job": len(records[0]), "reports": max(len(r) for r in records[1:])}
    live_verdicts = []
    for offset, record in enumerate(records):
        placements, emitted = part.handle(wire.decode(record), wall_ms, offset)
        part.persist()
        live_verdicts += emitted
        if placements:
            sizes["placements"] = max(len(r) for r in wire.packed_places(placements))
    [live] = live_verdicts
    sizes["state"] = max(len(v) for v in table.values())
    sizes["verdict"] = len(orjson.dumps(live.model_dump(mode="json")))
    assert all(size < MAX_RECORD_BYTES for size in sizes.values()), sizes
    # the same verdict as the backtest (lines naming the workload are not replayed here)
    same = {"revision", "lines_seen"}
    assert live.model_dump(exclude=same) == verdicts[0].model_dump(exclude=same)
    echo = next(e for e in live.chain if e.symptom == "nccl_remote_peer_lost")
    assert echo.nodes_total == NODES and len(echo.nodes) < 20  # the echo is summarized, not listed


def test_a_recovered_workload_partition_decides_the_same_verdict(storm, bundled_ruleset):
    """Node records are read back with the run's record after a restart: same state, same verdict."""
    _, state = storm
    table: dict = {}
    part = WorkloadPartition(bundled_ruleset, SETTINGS, table, _partition_of(state), 4)
    records = [wire.job(state.run.end)] + [wire.evidence(e) for e in state.evidence.values()]
    for offset, record in enumerate(records[:-1]):  # the last node has not reported yet
        part.handle(record, state.run.end.time_ms, offset)
        part.persist()
    part.persist(everything=True)  # within one second: written at the hand-over
    recovered = WorkloadPartition(bundled_ruleset, SETTINGS, table, part.partition, 4)
    _, [verdict] = recovered.handle(records[-1], state.run.end.time_ms, len(records))
    assert verdict.responsible_nodes == [storm_xid_node(NODES)]
    assert len(recovered.workloads.states[str(STORM_JOB)].evidence) == NODES


def _partition_of(state) -> int:
    from streams.topics import partition_for

    return partition_for(state.run.workload_id, 4)
