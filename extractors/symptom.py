"""What the extractor emits: one :class:`Symptom` per (line, rule) that matched."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["LineLike", "Symptom"]


class LineLike(Protocol):
    """The fields of a normalized log line the extractor reads (``streams.records.LogLine``)."""

    text: str
    host: str | None
    time_ms: int
    source: str
    workload_id: str | None
    origin: str


@dataclass(slots=True)
class Symptom:
    """A recognised piece of evidence, with the line that proves it."""

    rule_id: str
    symptom: str
    domain: str
    role: str
    priority: int
    catalog_id: str | None
    marker: str | None
    node: str | None
    time_ms: int
    source: str
    line: str
    origin: str
    workload_id: str | None = None
    captures: dict[str, str] = field(default_factory=dict)
    entity: tuple[str, ...] = ()
    #: Set when the line's text named the workload (a ``JobId=``) or another node than its own
    #: (``Nodes gpu003 not responding``), words anyone can write: the host the line came from
    #: (``""`` for none), judged by correlator/claims.py. ``None`` when the record's fields or
    #: the scheduler topic named them.
    claimed_from: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = {
            "rule_id": self.rule_id,
            "symptom": self.symptom,
            "domain": self.domain,
            "role": self.role,
            "priority": self.priority,
            "catalog_id": self.catalog_id,
            "marker": self.marker,
            "node": self.node,
            "time_ms": self.time_ms,
            "source": self.source,
            "line": self.line,
            "origin": self.origin,
            "workload_id": self.workload_id,
            "captures": self.captures,
            "entity": list(self.entity),
        }
        if self.claimed_from is not None:  # absent in most records: they stay as they were
            data["claimed_from"] = self.claimed_from
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Symptom:
        return cls(**{**data, "entity": tuple(data.get("entity") or ())})
