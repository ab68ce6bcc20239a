"""Slurm ``jobcomp/kafka`` (and ``jobcomp/elasticsearch``) job records to JobEvents.

A record in a terminal state gives a ``job_end`` plus, when ``@start`` is known, a
``job_start`` (so an end record alone still places the job on its nodes); a record in any other
state (Slurm >= 25.05 can also send one at job start) gives a ``job_start`` only. Each record
also gives one synthesized ``scheduler`` line (docs/rules.md).
"""

from __future__ import annotations

from typing import Any

from streams.normalize.errors import RecordError
from streams.normalize.hostlist import expand_hostlist
from streams.normalize.synth import job_end_line, job_start_line
from streams.normalize.times import time_value_ms
from streams.records import JobEvent, LogLine

__all__ = ["TERMINAL_STATES", "is_jobcomp", "normalize_jobcomp"]

# fmt: off
TERMINAL_STATES = frozenset({
    "COMPLETED", "FAILED", "NODE_FAIL", "TIMEOUT", "CANCELLED", "OUT_OF_MEMORY", "PREEMPTED",
    "BOOT_FAIL", "DEADLINE",
})
RUNNING_STATES = frozenset({
    "PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD",
    "RESV_DEL_HOLD", "SPECIAL_EXIT", "SIGNALING", "STAGE_OUT", "STOPPED", "SUSPENDED",
    "POWER_UP_NODE",
})
#: Carried to the JobEvent for the verdict (where the job's own logs live, ...); never ``script``.
EXTRA_FIELDS = (
    "user_id", "array_job_id", "array_task_id", "het_job_id", "het_job_offset", "cluster",
    "account", "qos", "derived_ec", "elapsed", "time_limit", "work_dir", "std_out", "std_err",
    "sluid", "original_sluid",  # Slurm's unique job id (records since 26.05, env since 25.11)
)
# fmt: on
#: Slurm's NO_VAL / NO_VAL64 mean "not set" in array and het fields.
_NO_VAL = frozenset({0xFFFFFFFE, 0xFFFFFFFFFFFFFFFE})
NO_NODES = frozenset({"", "None assigned", "(null)"})
WHAT = "Slurm jobcomp record"


def is_jobcomp(record: dict[str, Any]) -> bool:
    return "jobid" in record and "state" in record


def normalize_jobcomp(
    record: dict[str, Any], kafka_ms: int | None, origin: str
) -> tuple[list[JobEvent], list[LogLine]]:
    state, state_actor = _state(record.get("state"))
    if state == "RESIZING":
        raise RecordError("resize records are not supported")
    if state in TERMINAL_STATES:
        return _job_end(record, state, state_actor, origin)
    if state in RUNNING_STATES:
        return _job_start(record, kafka_ms, origin)
    raise RecordError(f"{WHAT}: unknown job state {state!r}")


def _job_end(
    record: dict[str, Any], state: str, state_actor: str | None, origin: str
) -> tuple[list[JobEvent], list[LogLine]]:
    end_ms = _time(record, "@end")
    if end_ms is None:
        raise RecordError(f"{WHAT}: state {state} without '@end'")
    start_ms = _time(record, "@start")
    start = _start_event(record, start_ms, origin)
    exit_code, signal = _exit(record.get("exit_code"))
    failed_node = _text(record.get("failed_node"))
    actor = _text(record.get("cancelled_by")) or _text(record.get("actor")) or state_actor
    end = JobEvent(
        kind="job_end",
        workload_id=start.workload_id,
        time_ms=end_ms,
        nodes=start.nodes,
        state=state,
        start_ms=start_ms,
        exit_code=exit_code,
        signal=signal,
        failed_node=failed_node,
        user=start.user,
        actor=actor,
        name=start.name,
        partition=start.partition,
        origin=origin,
        extra=_extra(record),
    )
    workload = start.workload_id or "-"
    text = job_end_line("slurm", workload, state, exit_code, signal, failed_node, end.user, actor)
    line = LogLine(text, failed_node, end_ms, "scheduler", origin, start.workload_id)
    return ([start, end] if start_ms is not None else [end]), [line]


def _job_start(
    record: dict[str, Any], kafka_ms: int | None, origin: str
) -> tuple[list[JobEvent], list[LogLine]]:
    start_ms = _time(record, "@start")
    if start_ms is None:
        start_ms = kafka_ms
    if start_ms is None:
        raise RecordError(f"{WHAT}: no event time: '@start' unknown and no Kafka timestamp")
    start = _start_event(record, start_ms, origin)
    nodes = record["nodes"] if start.nodes else None  # the expression as Slurm wrote it
    text = job_start_line("slurm", start.workload_id or "-", nodes, start.user)
    line = LogLine(text, None, start_ms, "scheduler", origin, start.workload_id)
    return [start], [line]


def _start_event(record: dict[str, Any], start_ms: int | None, origin: str) -> JobEvent:
    """The job_start a record implies (used only when ``start_ms`` is known)."""
    return JobEvent(
        kind="job_start",
        workload_id=_workload_id(record),
        time_ms=start_ms or 0,
        nodes=_nodes(record),
        user=_text(record.get("username")),
        name=_text(record.get("job_name")),
        partition=_text(record.get("partition")),
        origin=origin,
    )


def _extra(record: dict[str, Any]) -> dict[str, Any]:
    return {key: record[key] for key in EXTRA_FIELDS if record.get(key) is not None}


def _state(value: object) -> tuple[str, str | None]:
    """``"CANCELLED"`` or sacct's ``"CANCELLED by 1000"`` (the actor is the uid)."""
    if not isinstance(value, str) or not value.strip():
        raise RecordError(f"{WHAT}: 'state' must be a non-empty string, got {value!r:.40}")
    words = value.split()
    actor = words[2] if len(words) == 3 and words[1] == "by" else None
    return words[0].upper(), actor


def _workload_id(record: dict[str, Any]) -> str:
    """The job's own id, also for array tasks and het-job components: it is the id every
    slurmctld and slurmstepd line names (``JOB 1240``, ``JobId=1234_6(1240)``), so the lines
    that name a job meet its record. Array and het-job ids travel in ``extra``."""
    jobid = _int(record, "jobid")
    if jobid is None:
        raise RecordError(f"{WHAT}: 'jobid' must be an integer, got {record.get('jobid')!r:.40}")
    return str(jobid)


def _int(record: dict[str, Any], key: str) -> int | None:
    value = record.get(key)
    if isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0 or value in _NO_VAL:
        return None
    return value


def _time(record: dict[str, Any], key: str) -> int | None:
    value = record.get(key)
    if value is None or value in ("Unknown", "None", ""):
        return None
    stamp = time_value_ms(value)
    if stamp is None:
        raise RecordError(f"{WHAT}: {key!r} is not a time: {value!r:.40}")
    return stamp


def _nodes(record: dict[str, Any]) -> tuple[str, ...]:
    expr = record.get("nodes")
    if expr is None:
        return ()
    if not isinstance(expr, str):
        raise RecordError(f"{WHAT}: 'nodes' must be a hostlist string, got {expr!r:.40}")
    if expr.strip() in NO_NODES:
        return ()
    try:
        return tuple(expand_hostlist(expr))
    except ValueError as error:
        raise RecordError(f"{WHAT}: invalid hostlist in 'nodes' {expr!r:.60}: {error}") from None


def _exit(value: object) -> tuple[int | None, int | None]:
    """``"exit:signal"`` (``"0:9"`` = killed by signal 9)."""
    if value is None:
        return None, None
    code, _, signal = str(value).partition(":")
    signal = signal or "0"
    if not (code.isascii() and code.isdigit() and signal.isascii() and signal.isdigit()):
        raise RecordError(f"{WHAT}: 'exit_code' is not 'exit:signal': {value!r:.40}")
    return int(code), int(signal)


def _text(value: object) -> str | None:
    if isinstance(value, str):
        return value.strip() or None
    return None if value is None or isinstance(value, bool) else str(value)
