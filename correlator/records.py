"""The engine's input: a normalized log line and a scheduler fact, both in event time.

Plain dataclasses for the hot path. They live below every adapter (streams/ normalizes records
into them, correlator/ consumes them), so the engine never imports its adapters;
``streams.records`` re-exports them next to the topic-level models.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

__all__ = ["JobEvent", "JobEventKind", "LogLine"]


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
