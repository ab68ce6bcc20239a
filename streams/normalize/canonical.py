"""Faultstream's canonical scheduler form, for schedulers with no native shape here.

``{"type": "job_start"|"job_end"|"node_state", "workload_id", "time", "nodes", "state",
"exit_code", "user", "name", "scheduler", "actor"}``; a node_state has ``node``, ``state`` and
``reason``. ``time`` is RFC 3339 or epoch seconds (absent: the Kafka timestamp); ``nodes`` a
list of names or a hostlist string.
"""

from __future__ import annotations

from typing import Any

from streams.normalize.errors import RecordError
from streams.normalize.hostlist import expand_hostlist
from streams.normalize.synth import job_end_line, job_start_line, node_state_line
from streams.normalize.times import time_value_ms
from streams.records import JobEvent, LogLine

__all__ = ["CANONICAL_TYPES", "is_canonical", "normalize_canonical"]

CANONICAL_TYPES = frozenset({"job_start", "job_end", "node_state"})


def is_canonical(record: dict[str, Any]) -> bool:
    kind = record.get("type")
    return isinstance(kind, str) and kind in CANONICAL_TYPES


def normalize_canonical(
    record: dict[str, Any], kafka_ms: int | None, origin: str
) -> tuple[list[JobEvent], list[LogLine]]:
    kind = record["type"]
    scheduler = _text(record, "scheduler", kind) or "custom"
    time_ms = _time(record, kind, kafka_ms)
    if kind == "node_state":
        return _node_state(record, scheduler, time_ms, origin)
    event = JobEvent(
        kind=kind,
        workload_id=_workload_id(record),
        time_ms=time_ms,
        nodes=_nodes(record),
        user=_text(record, "user", kind),
        name=_text(record, "name", kind),
        partition=_text(record, "partition", kind),
        scheduler=scheduler,
        origin=origin,
    )
    if kind == "job_start":
        text = job_start_line(scheduler, event.workload_id or "-", _nodes_text(record), event.user)
        return [event], [LogLine(text, None, time_ms, "scheduler", origin, event.workload_id)]
    return _job_end(record, event)


def _job_end(record: dict[str, Any], event: JobEvent) -> tuple[list[JobEvent], list[LogLine]]:
    event.state = _required(record, "state", "job_end").upper()
    event.exit_code, event.signal = _exit(record)
    event.failed_node = _text(record, "failed_node", "job_end")
    event.actor = _text(record, "actor", "job_end")
    start = record.get("start_time")
    event.start_ms = None if start is None else _parse_time(start, "start_time", "job_end")
    text = job_end_line(
        event.scheduler,
        event.workload_id or "-",
        event.state,
        event.exit_code,
        event.signal,
        event.failed_node,
        event.user,
        event.actor,
    )
    line = LogLine(text, event.failed_node, event.time_ms, "scheduler", event.origin, event.workload_id)
    return [event], [line]


def _node_state(
    record: dict[str, Any], scheduler: str, time_ms: int, origin: str
) -> tuple[list[JobEvent], list[LogLine]]:
    node = _required(record, "node", "node_state")
    state = _required(record, "state", "node_state").upper()
    reason = _text(record, "reason", "node_state")
    event = JobEvent(
        "node_state",
        None,
        time_ms,
        (node,),
        state=state,
        scheduler=scheduler,
        reason=reason,
        origin=origin,
    )
    text = node_state_line(scheduler, node, state, reason)
    return [event], [LogLine(text, node, time_ms, "scheduler", origin)]


def _time(record: dict[str, Any], kind: str, kafka_ms: int | None) -> int:
    value = record.get("time")
    if value is not None:
        return _parse_time(value, "time", kind)
    if kafka_ms is None:
        raise RecordError(f"canonical {kind} record: no event time: no 'time', no Kafka timestamp")
    return kafka_ms


def _parse_time(value: object, field: str, kind: str) -> int:
    stamp = time_value_ms(value)
    if stamp is None:
        raise RecordError(f"canonical {kind} record: {field!r} is not a time: {value!r:.40}")
    return stamp


def _workload_id(record: dict[str, Any]) -> str:
    value = record.get("workload_id")
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or not value.strip():
        raise RecordError(f"canonical {record['type']} record: missing or invalid 'workload_id'")
    return value.strip()


def _nodes(record: dict[str, Any]) -> tuple[str, ...]:
    nodes = record.get("nodes")
    if nodes is None:
        return ()
    if isinstance(nodes, list) and all(isinstance(node, str) and node for node in nodes):
        return tuple(nodes)
    if not isinstance(nodes, str):
        raise RecordError(
            f"canonical {record['type']} record: 'nodes' must be a list of names or a hostlist string"
        )
    try:
        return tuple(expand_hostlist(nodes))
    except ValueError as error:
        raise RecordError(
            f"canonical {record['type']} record: invalid hostlist in 'nodes' {nodes!r:.60}: {error}"
        ) from None


def _nodes_text(record: dict[str, Any]) -> str | None:
    nodes = record.get("nodes")
    return ",".join(nodes) if isinstance(nodes, list) else nodes


def _exit(record: dict[str, Any]) -> tuple[int | None, int | None]:
    """``exit_code`` an int (``signal`` beside it) or Slurm's ``"exit:signal"``."""
    code, signal = record.get("exit_code"), record.get("signal")
    if isinstance(code, str) and ":" in code:
        code, _, signal = code.partition(":")
    exit_code, exit_signal = _as_int(code), _as_int(signal)
    if (code is not None and exit_code is None) or (signal is not None and exit_signal is None):
        raise RecordError(
            "canonical job_end record: 'exit_code' must be an integer or 'exit:signal' "
            f"(and 'signal' an integer): {record.get('exit_code')!r:.40}"
        )
    return exit_code, exit_signal


def _as_int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.lstrip("-").isdecimal():
        return int(value)
    return None


def _required(record: dict[str, Any], field: str, kind: str) -> str:
    value = _text(record, field, kind)
    if value is None:
        raise RecordError(f"canonical {kind} record: missing {field!r}")
    return value


def _text(record: dict[str, Any], field: str, kind: str) -> str | None:
    value = record.get(field)
    if value is None:
        return None
    if not isinstance(value, str):
        raise RecordError(f"canonical {kind} record: {field!r} must be a string, got {value!r:.40}")
    return value.strip() or None
