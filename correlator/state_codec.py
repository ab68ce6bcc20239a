"""The one format of the correlator's table (changelog) values, with a schema version in each.

A worker recovers its partitions from what an older release wrote, so every value carries
``"v"``; a value without it was written before values were versioned and is read as version 1.
Reading upgrades a value one version at a time (``_UPGRADES``) to :data:`STATE_VERSION`, so each
format change adds one small step and old changelogs stay readable. A value from a newer release
than this one is refused (:class:`UnknownStateVersion`): guessing at it could lose evidence.

Values (the streams/ adapters choose the keys, docs/architecture.md "State format and versions"):

* ``node``: one node's symptom groups and the runs placed on it (its line counts apart);
* ``line_counts``: one node's line counts per minute;
* ``workload_run``: one run's scheduler facts, revision and node list;
* ``workload_node``: one node's report for one run and its symptoms naming the run;
* ``clock``: a partition's clock and offset marker (its fields are the clock's own).
* ``intent``: the offset marker a partition's flush is about to write (``at``), written first.

Node states, line counts, run records and (workload, node) records carry ``at`` too: the marker
of the flush that wrote them (streams/partitions.py: a recovered partition tells by it which
records a flush cut short by a crash already holds).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from correlator.evidence import EvidenceGroup, group_key
from correlator.node_side import NodeEvidence, NodeRun, NodeState
from correlator.node_window import NodeWindow
from correlator.records import JobEvent
from correlator.workload import WorkloadRun
from correlator.workload_side import WorkloadState

__all__ = [
    "STATE_VERSION",
    "UnknownStateVersion",
    "decode_line_counts",
    "decode_node_state",
    "decode_workload_state",
    "encode_line_counts",
    "encode_node_record",
    "encode_node_state",
    "encode_workload_run",
    "flush_stamp",
    "read",
    "write",
]

#: The version this release writes. 2: every value versioned, node runs as named fields. 3: every
#: state record stamped with its flush (``at``; version 2 stamped node states and line counts only).
STATE_VERSION = 3
VERSION_FIELD = "v"


class UnknownStateVersion(ValueError):
    """A table value written by a newer release than this one."""

    def __init__(self, key: str, version: object) -> None:
        super().__init__(
            f"table key {key!r} holds state version {version!r}, and this release reads versions 1 to "
            f"{STATE_VERSION}: it was written by a newer Faultstream; run that release (or a newer one)"
        )
        self.key, self.version = key, version


def write(body: dict[str, Any]) -> bytes:
    """A value of the current version (``body`` is a fresh dict: the version goes into it)."""
    body[VERSION_FIELD] = STATE_VERSION
    return orjson.dumps(body)


def read(kind: str, key: str, raw: bytes) -> Any:
    """The body of a stored value of ``kind``, upgraded to the current version."""
    data = orjson.loads(raw)
    version = data.pop(VERSION_FIELD, 1) if isinstance(data, dict) else 1
    if type(version) is not int or not 1 <= version <= STATE_VERSION:
        raise UnknownStateVersion(key, version)
    for step in range(version, STATE_VERSION):
        data = _UPGRADES[kind][step](data)
    return data


# -- node side -----------------------------------------------------------------------------------


def flush_stamp(raw: bytes) -> int:
    """The input offset marker of the flush that wrote ``raw`` (``"at"``; -1 when not recorded)."""
    data = orjson.loads(raw)
    stamp = data.get("at", -1) if isinstance(data, dict) else -1
    return stamp if type(stamp) is int else -1


def encode_node_state(state: NodeState, at: int = -1) -> bytes:
    """Symptom groups and runs; the line counts are a record of their own (encode_line_counts):
    they change with nearly every batch, the rest rarely. ``at``: the offset marker of the flush
    writing it (streams/partitions.py: a flush cut short by a crash)."""
    return write(
        {
            "at": at,
            "node": state.window.node,
            "groups": [g.to_dict() for g in state.window.groups.values()],
            "runs": [
                {
                    "workload_id": r.workload_id,
                    "start_ms": r.start_ms,
                    "end_ms": r.end_ms,
                    "reported_ms": r.reported_ms,
                }
                for r in state.runs.values()
            ],
        }
    )


def decode_node_state(key: str, raw: bytes) -> NodeState:
    data = read("node", key, raw)
    window = NodeWindow(data["node"])
    for group_data in data["groups"]:
        group = EvidenceGroup.from_dict(group_data)
        window.groups[group_key(group.first)] = group
    runs = {r["workload_id"]: NodeRun(**r) for r in data["runs"]}
    return NodeState(window, runs)


def encode_line_counts(line_slots: dict[int, int], at: int = -1) -> bytes:
    return write({"at": at, "slots": [[slot, count] for slot, count in line_slots.items()]})


def decode_line_counts(key: str, raw: bytes) -> dict[int, int]:
    return {int(slot): int(count) for slot, count in read("line_counts", key, raw)["slots"]}


# -- workload side -------------------------------------------------------------------------------


def encode_workload_run(state: WorkloadState, at: int = -1) -> bytes:
    """The run's own record: no node's report or symptoms, only which nodes outside the run have a
    record (normally none: a controller that logged a line naming the job). ``at``: as for a node's
    state (encode_node_state)."""
    run = state.run
    end = {**run.end.to_dict(), "nodes": []} if run.end else None  # the node list is stored once
    return write(
        {
            "at": at,
            "run": {
                "workload_id": run.workload_id,
                "nodes": sorted(run.nodes),
                "start_ms": run.start_ms,
                "end": end,
                "info": run.info,
                "direct_lines": run.direct_lines,
                "first_seen_ms": run.first_seen_ms,
                "revision": run.revision,
                "last_verdict_digest": run.last_verdict_digest,
                "finalized_at_ms": run.finalized_at_ms,
            },
            "end_seen_wall_ms": state.end_seen_wall_ms,
            "other_nodes": sorted(state.stored_nodes() - run.nodes),
        }
    )


def encode_node_record(state: WorkloadState, node: str, at: int = -1) -> bytes | None:
    """One node's report and its symptoms naming the run; None when it has neither. ``at``: as
    for a node's state (encode_node_state)."""
    report = state.evidence.get(node)
    direct = state.run.direct_on(node)
    if report is None and not direct:
        return None
    return write(
        {"at": at, "evidence": report.to_dict() if report else None, "direct": [g.to_dict() for g in direct]}
    )


def decode_workload_state(
    key: str, raw: bytes, read_node: Callable[[str], tuple[str, bytes] | None]
) -> WorkloadState:
    """Rebuild from the run's record and ``read_node(node)``: that node's record as (key, value)."""
    data = read("workload_run", key, raw)
    fields = data["run"]
    end = fields["end"]
    run = WorkloadRun(
        workload_id=fields["workload_id"],
        nodes=set(fields["nodes"]),
        start_ms=fields["start_ms"],
        end=JobEvent.from_dict(end) if end else None,
        info=fields["info"],
        direct_lines=fields["direct_lines"],
        first_seen_ms=fields.get("first_seen_ms"),  # absent before it was stored: see load_direct
        revision=fields["revision"],
        last_verdict_digest=fields["last_verdict_digest"],
        finalized_at_ms=fields["finalized_at_ms"],
    )
    state = WorkloadState(run, end_seen_wall_ms=data["end_seen_wall_ms"])
    for node in sorted(run.nodes | set(data["other_nodes"])):
        stored = read_node(node)
        if stored is None:
            continue
        record = read("workload_node", *stored)
        if record["evidence"] is not None:
            state.add_evidence(NodeEvidence.from_dict(record["evidence"]))
        run.load_direct(EvidenceGroup.from_dict(g) for g in record["direct"])
    return state


# -- upgrades: kind -> {version: the body of that version -> the body of the next} --------------


def _node_v1(data: dict[str, Any]) -> dict[str, Any]:
    """Version 1 nested the groups in a window and stored each run as a positional list."""
    window = data["window"]
    names = ("workload_id", "start_ms", "end_ms", "reported_ms")
    return {
        "node": window["node"],
        "groups": window["groups"],
        "runs": [dict(zip(names, r, strict=True)) for r in data["runs"]],
    }


def _line_counts_v1(data: list[list[int]]) -> dict[str, Any]:
    """Version 1 was the bare list of [minute slot, count]."""
    return {"slots": data}


def _workload_run_v1(data: dict[str, Any]) -> dict[str, Any]:
    """Version 1 had an always empty ``direct`` list in the run (direct symptoms are per node)."""
    run = {k: v for k, v in data["run"].items() if k != "direct"}
    return {"end_seen_wall_ms": None, "other_nodes": [], **data, "run": run}


def _unstamped(data: dict[str, Any]) -> dict[str, Any]:
    """Version 2 stamped node states and line counts with their flush, and only since the flush
    wrote an intent; a record without a stamp holds nothing of a flush cut short."""
    return {"at": -1, **data}


def _unchanged(data: dict[str, Any]) -> dict[str, Any]:
    return data


_UPGRADES: dict[str, dict[int, Callable[[Any], Any]]] = {
    "node": {1: _node_v1, 2: _unstamped},
    "line_counts": {1: _line_counts_v1, 2: _unstamped},
    "workload_run": {1: _workload_run_v1, 2: _unstamped},
    "workload_node": {1: _unchanged, 2: _unstamped},
    "clock": {1: _unchanged, 2: _unchanged},
    "intent": {1: _unchanged, 2: _unchanged},
}
