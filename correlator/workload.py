"""Per-workload state: what the scheduler said about one run of a job, and evidence naming it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from correlator.evidence import EvidenceGroup, GroupKey, group_key
from streams.records import JobEvent

__all__ = ["WorkloadRun"]


@dataclass
class WorkloadRun:
    """One run of a workload, from its first scheduler record to its verdict.

    ``direct`` holds symptoms that name the workload themselves (a ``JobId=`` in the line, a
    ``job_id`` field on an application record), wherever they were logged.
    """

    workload_id: str
    nodes: set[str] = field(default_factory=set)
    start_ms: int | None = None
    end: JobEvent | None = None
    info: dict[str, Any] = field(default_factory=dict)
    direct: dict[GroupKey, EvidenceGroup] = field(default_factory=dict)
    direct_lines: int = 0
    revision: int = 0
    last_verdict_digest: str | None = None
    finalized_at_ms: int | None = None

    @property
    def end_ms(self) -> int | None:
        return self.end.time_ms if self.end else None

    def apply(self, event: JobEvent) -> None:
        self.nodes.update(event.nodes)
        start = event.start_ms if event.kind == "job_end" else event.time_ms
        starts = event.kind in ("job_start", "node_assign") or event.start_ms is not None
        if starts and start is not None and (self.start_ms is None or start < self.start_ms):
            self.start_ms = start
        if event.kind == "job_end":
            self.end = event
        for name in ("user", "name", "partition", "scheduler"):
            value = getattr(event, name)
            if value:
                self.info[name] = value

    def add_direct(self, incoming: EvidenceGroup) -> None:
        key = group_key(incoming.first)
        group = self.direct.get(key)
        if group is None:
            self.direct[key] = incoming.copy()
        else:
            group.merge(incoming)

    def to_dict(self) -> dict[str, Any]:
        return {
            "workload_id": self.workload_id,
            "nodes": sorted(self.nodes),
            "start_ms": self.start_ms,
            "end": self.end.to_dict() if self.end else None,
            "info": self.info,
            "direct": [g.to_dict() for g in self.direct.values()],
            "direct_lines": self.direct_lines,
            "revision": self.revision,
            "last_verdict_digest": self.last_verdict_digest,
            "finalized_at_ms": self.finalized_at_ms,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WorkloadRun:
        run = cls(
            workload_id=data["workload_id"],
            nodes=set(data["nodes"]),
            start_ms=data["start_ms"],
            end=JobEvent.from_dict(data["end"]) if data["end"] else None,
            info=data["info"],
            direct_lines=data["direct_lines"],
            revision=data["revision"],
            last_verdict_digest=data["last_verdict_digest"],
            finalized_at_ms=data["finalized_at_ms"],
        )
        for raw in data["direct"]:
            group = EvidenceGroup.from_dict(raw)
            run.direct[group_key(group.first)] = group
        return run
