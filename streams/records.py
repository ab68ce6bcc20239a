"""Record models: what arrives on the topics, and what the normalizers make of it.

At the edges (a recording line, a topic record) pydantic models are the contract; inside the
engine the hot path uses the plain dataclasses :class:`LogLine` and :class:`JobEvent`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

__all__ = [
    "DEFAULT_TOPICS",
    "DeadLetter",
    "JobEvent",
    "LogLine",
    "TopicRecord",
]

#: Topic name → the source its log lines carry. ``events.scheduler`` holds scheduler events.
DEFAULT_TOPICS = {
    "logs.syslog": "syslog",
    "logs.dmesg": "dmesg",
    "logs.applog": "applog",
    "events.scheduler": "scheduler",
}


class TopicRecord(BaseModel):
    """One Kafka record, as a recording file holds it (one JSON object per line).

    ``value`` is exactly what the record's value would be on the topic: a JSON object, or a
    string for shippers that send raw lines. ``timestamp`` is the Kafka record timestamp in
    epoch milliseconds.
    """

    model_config = ConfigDict(extra="forbid")

    topic: str
    value: dict[str, Any] | str
    key: str | None = None
    timestamp: int | None = None
    partition: int | None = None
    offset: int | None = None


@dataclass(slots=True)
class LogLine:
    """One log line, normalized: the unit the extractor scans.

    ``origin`` is the line's provenance: ``topic:partition:offset`` of its record (or
    ``topic:@N`` for line N of a recording), plus ``#i`` when one record held several lines.
    """

    text: str
    host: str | None
    time_ms: int
    source: str
    origin: str
    workload_id: str | None = None
    rank: int | None = None


JobEventKind = Literal["job_start", "job_end", "node_state", "node_assign"]


@dataclass(slots=True)
class JobEvent:
    """A scheduler fact about a workload or a node, in event time.

    * ``job_start``: the workload runs on ``nodes`` from ``time_ms``;
    * ``job_end``: it ended at ``time_ms`` in Slurm-style ``state`` (``start_ms`` when known);
    * ``node_assign``: ``nodes`` joined the workload at ``time_ms`` (a pod scheduled);
    * ``node_state``: ``nodes[0]`` changed to ``state`` (DOWN, NOT_RESPONDING, DRAIN, ...).
    """

    kind: JobEventKind
    workload_id: str | None
    time_ms: int
    nodes: tuple[str, ...] = ()
    state: str | None = None
    start_ms: int | None = None
    exit_code: int | None = None
    signal: int | None = None
    failed_node: str | None = None
    user: str | None = None
    actor: str | None = None
    name: str | None = None
    partition: str | None = None
    scheduler: str = "slurm"
    reason: str | None = None
    origin: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["nodes"] = list(self.nodes)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobEvent:
        return cls(**{**data, "nodes": tuple(data.get("nodes") or ())})


@dataclass(slots=True)
class DeadLetter:
    """A record that could not be used, kept with its reason (never dropped silently)."""

    reason: str
    topic: str
    origin: str
    value: Any

    def to_dict(self) -> dict[str, Any]:
        return {"reason": self.reason, "topic": self.topic, "origin": self.origin, "value": self.value}
