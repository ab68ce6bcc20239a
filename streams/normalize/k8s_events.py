"""kubernetes-event-exporter records (a core/v1 Event, ``involvedObject`` with labels) to JobEvents.

Every Event becomes one synthesized ``k8s`` line; some also become JobEvents:

* ``Scheduled`` → ``node_assign`` (the pod's workload joins the node named in the message);
* ``NodeNotReady`` on a Node → ``node_state`` NOT_RESPONDING;
* a workload's terminal reason (tables below, confirmed in the Job, JobSet and Kueue sources)
  → ``job_end``.

Time: ``lastTimestamp`` (when this occurrence happened; with ``sentUpdateEvent`` a repeat carries
a newer one), else ``series.lastObservedTime``, ``eventTime``, ``firstTimestamp``,
``metadata.creationTimestamp``, then the Kafka timestamp.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from streams.normalize.applog import K8S_WORKLOAD_LABELS, k8s_id, k8s_workload_id
from streams.normalize.errors import RecordError
from streams.normalize.synth import k8s_line
from streams.normalize.times import time_value_ms
from streams.records import JobEvent, LogLine

__all__ = ["JOB_END_STATES", "is_k8s_event", "normalize_k8s_event"]

WHAT = "Kubernetes Event"
SCHEDULER = "kubernetes"
#: (involvedObject.kind, reason) → the workload's Slurm-style terminal state.
JOB_END_STATES = {
    # Job controller: "Completed", or the Failed condition's reason as a Warning event.
    ("Job", "Completed"): "COMPLETED",
    ("Job", "BackoffLimitExceeded"): "FAILED",
    ("Job", "PodFailurePolicy"): "FAILED",
    ("Job", "MaxFailedIndexesExceeded"): "FAILED",
    ("Job", "FailedIndexes"): "FAILED",
    ("Job", "DeadlineExceeded"): "TIMEOUT",
    # JobSet controller (pkg/constants): the JobSetCompleted / JobSetFailed condition reasons.
    ("JobSet", "AllJobsCompleted"): "COMPLETED",
    ("JobSet", "FailedJobs"): "FAILED",
    ("JobSet", "ReachedMaxRestarts"): "FAILED",
    ("JobSet", "FailJobSetFailurePolicyAction"): "FAILED",
    ("JobSet", "DeadlineExceeded"): "TIMEOUT",
}
KUEUE_EVICTED = "EvictedDueTo"
#: Kueue names a Workload "<lowercase owner kind>-<owner name>-<5 hex digits of a hash>".
_KUEUE_WORKLOAD_NAME = re.compile(r"[a-z0-9]+-(?P<owner>.+)-[0-9a-f]{5}")
TIME_FIELDS = (
    "lastTimestamp",
    "series.lastObservedTime",
    "eventTime",
    "firstTimestamp",
    "metadata.creationTimestamp",
)


def is_k8s_event(record: dict[str, Any]) -> bool:
    return "involvedObject" in record and "reason" in record


class _Seen(NamedTuple):
    """What one Event says, read once."""

    obj: dict[str, Any]
    kind: str
    ref: str  # "namespace/name", or "name" for cluster-scoped objects (Node)
    reason: str
    message: str
    node: str | None
    workload: str | None
    time_ms: int
    origin: str


def normalize_k8s_event(
    record: dict[str, Any], kafka_ms: int | None, origin: str
) -> tuple[list[JobEvent], list[LogLine]]:
    seen = _read(record, kafka_ms, origin)
    text = k8s_line(seen.reason, seen.kind, seen.ref, seen.node, seen.message)
    line = LogLine(text, seen.node, seen.time_ms, "k8s", origin, seen.workload)
    event = _node_assign(seen) or _node_not_ready(seen) or _job_end(seen)
    return ([event] if event else []), [line]


def _read(record: dict[str, Any], kafka_ms: int | None, origin: str) -> _Seen:
    obj = record["involvedObject"]
    if not isinstance(obj, dict):
        raise RecordError(f"{WHAT}: 'involvedObject' must be an object")
    reason, name = _required(record, "reason"), _required(obj, "involvedObject.name")
    kind, namespace = _optional(obj.get("kind")), _optional(obj.get("namespace"))
    message = _optional(record.get("message"))
    node = _node(record, kind, name, reason, message)
    workload = _workload(obj, kind, name, namespace)
    ref = f"{namespace}/{name}" if namespace else name
    time_ms = _event_time(record, kafka_ms)
    return _Seen(obj, kind, ref, reason, message, node, workload, time_ms, origin)


def _node_assign(seen: _Seen) -> JobEvent | None:
    """The scheduler placed a pod: its workload now runs on that node too."""
    if seen.reason != "Scheduled" or not seen.node or not seen.workload:
        return None
    return JobEvent(
        "node_assign", seen.workload, seen.time_ms, (seen.node,), scheduler=SCHEDULER,
        reason=seen.reason, origin=seen.origin, extra={"pod": seen.ref},
    )  # fmt: skip


def _node_not_ready(seen: _Seen) -> JobEvent | None:
    if seen.kind != "Node" or seen.reason != "NodeNotReady" or not seen.node:
        return None
    return JobEvent(
        "node_state", None, seen.time_ms, (seen.node,), state="NOT_RESPONDING",
        scheduler=SCHEDULER, reason=seen.message or seen.reason, origin=seen.origin,
    )  # fmt: skip


def _job_end(seen: _Seen) -> JobEvent | None:
    end = _end_state(seen.obj, seen.kind, seen.reason)
    if end is None or seen.workload is None:
        return None
    return JobEvent(
        "job_end", seen.workload, seen.time_ms, state=end[0], actor=end[1], scheduler=SCHEDULER,
        reason=seen.reason, name=seen.obj.get("name"), origin=seen.origin,
        extra={"message": seen.message},
    )  # fmt: skip


def _end_state(obj: dict[str, Any], kind: str, reason: str) -> tuple[str, str | None] | None:
    if kind == "Workload":
        return _kueue_end_state(reason)
    state = JOB_END_STATES.get((kind, reason))
    if state == "COMPLETED" and kind == "Job" and _in_jobset(obj):
        return None  # one child Job done is not the JobSet done; one child failed does fail this run
    return (state, None) if state else None


def _kueue_end_state(reason: str) -> tuple[str, str | None] | None:
    """Kueue stops a Workload's pods on preemption ("Preempted") and on every eviction."""
    if reason == "Preempted":
        return "PREEMPTED", "kueue"
    if not reason.startswith(KUEUE_EVICTED):
        return None
    cause = reason[len(KUEUE_EVICTED) :]
    if cause == "NodeFailures":
        return "NODE_FAIL", None
    if cause.endswith("MaximumExecutionTimeExceeded"):
        return "TIMEOUT", None
    return "PREEMPTED", "kueue"


def _in_jobset(obj: dict[str, Any]) -> bool:
    labels = obj.get("labels")
    return isinstance(labels, dict) and bool(labels.get(K8S_WORKLOAD_LABELS[0]))


def _workload(obj: dict[str, Any], kind: str, name: str, namespace: str) -> str | None:
    workload = k8s_workload_id(namespace, obj.get("labels"))
    if workload is not None:
        return workload
    if kind in ("Job", "JobSet"):
        return k8s_id(namespace, name)
    if kind == "Workload":
        match = _KUEUE_WORKLOAD_NAME.fullmatch(name)
        return k8s_id(namespace, match["owner"] if match else name)
    return None  # a bare pod: placed by node and time only


def _node(record: dict[str, Any], kind: str, name: str, reason: str, message: str) -> str | None:
    if kind == "Node":
        return name
    if reason == "Scheduled":
        return _scheduled_node(message)
    source = record.get("source")
    host = source.get("host") if isinstance(source, dict) else None
    return host if isinstance(host, str) and host else None


def _scheduled_node(message: str) -> str | None:
    """The node in "Successfully assigned ml/train-0 to gpu-node-7"."""
    if not message.startswith("Successfully assigned ") or " to " not in message:
        return None
    node = message.rpartition(" to ")[2].strip()
    return node if node and not any(char.isspace() for char in node) else None


def _event_time(record: dict[str, Any], kafka_ms: int | None) -> int:
    for field in TIME_FIELDS:
        value = _dotted(record, field)
        if value is None or value == "":
            continue
        stamp = time_value_ms(value)
        if stamp is None:
            raise RecordError(f"{WHAT}: {field!r} is not a time: {value!r:.40}")
        if stamp > 0:  # Go's zero time (0001-01-01) means "unset"
            return stamp
    if kafka_ms is None:
        raise RecordError(f"{WHAT}: no event time: no time field, no Kafka timestamp")
    return kafka_ms


def _dotted(record: dict[str, Any], field: str) -> object:
    outer, _, inner = field.partition(".")
    value = record.get(outer)
    if inner:
        return value.get(inner) if isinstance(value, dict) else None
    return value


def _required(container: dict[str, Any], field: str) -> str:
    value = container.get(field.rpartition(".")[2])
    if not isinstance(value, str) or not value:
        raise RecordError(f"{WHAT}: {field!r} must be a non-empty string, got {value!r:.40}")
    return value


def _optional(value: object) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)
