"""Collapsed evidence: many lines of one symptom on one node become one :class:`EvidenceGroup`.

Ten thousand "Connection closed" lines in one minute on one node are one group with a count and
first/last times, so memory grows with distinct symptoms per node and minute, not with lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from extractors.symptom import Symptom

__all__ = ["SLOT_MS", "EvidenceGroup", "GroupKey", "group_key"]

#: Groups are split per minute of event time so a job's window can select them.
SLOT_MS = 60_000

GroupKey = tuple[str, str, tuple[str, ...], int]


def group_key(symptom: Symptom) -> GroupKey:
    return (symptom.node or "", symptom.rule_id, symptom.entity, symptom.time_ms // SLOT_MS)


@dataclass(slots=True)
class EvidenceGroup:
    """Repeats of one rule on one node (and entity) within one slot; ``first`` is the proof."""

    first: Symptom
    count: int
    first_ms: int
    last_ms: int

    @classmethod
    def start(cls, symptom: Symptom) -> EvidenceGroup:
        return cls(first=symptom, count=1, first_ms=symptom.time_ms, last_ms=symptom.time_ms)

    def add(self, symptom: Symptom) -> None:
        """``merge(EvidenceGroup.start(symptom))`` without building that group: a storm's echo
        lines are added here one by one (tests/correlator/test_batch_fast_paths.py)."""
        self.count += 1
        time_ms = symptom.time_ms
        if time_ms < self.first_ms or (time_ms == self.first_ms and symptom.line < self.first.line):
            self.first, self.first_ms = symptom, time_ms
        if time_ms > self.last_ms:
            self.last_ms = time_ms

    def merge(self, other: EvidenceGroup) -> None:
        """Fold another group of the same key in.

        The earliest line is kept as the proof; equal times are broken by the line's text, never
        by its provenance, so the offline backtest and the live pipeline keep the same line
        whatever order or batches the lines came in.
        """
        self.count += other.count
        if (other.first_ms, other.first.line) < (self.first_ms, self.first.line):
            self.first, self.first_ms = other.first, other.first_ms
        self.last_ms = max(self.last_ms, other.last_ms)

    def overlaps(self, start_ms: int, end_ms: int) -> bool:
        return self.first_ms <= end_ms and self.last_ms >= start_ms

    @property
    def node(self) -> str | None:
        return self.first.node

    def to_dict(self) -> dict[str, Any]:
        return {
            "first": self.first.to_dict(),
            "count": self.count,
            "first_ms": self.first_ms,
            "last_ms": self.last_ms,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvidenceGroup:
        return cls(Symptom.from_dict(data["first"]), data["count"], data["first_ms"], data["last_ms"])

    def copy(self) -> EvidenceGroup:
        return EvidenceGroup(self.first, self.count, self.first_ms, self.last_ms)
