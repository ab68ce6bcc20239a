"""Per-node event-time state: the node's collapsed symptoms and its line counts.

A :class:`NodeWindow` knows nothing about jobs: it answers "what did this node say between t0
and t1?". Symptoms may arrive before the scheduler says which job ran there, and in any order;
the workload asks at decision time. State is pruned by :meth:`expire`, so it stays bounded.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from correlator.evidence import SLOT_MS, EvidenceGroup, GroupKey, group_key
from extractors.symptom import Symptom

__all__ = ["NodeWindow"]


@dataclass
class NodeWindow:
    node: str
    groups: dict[GroupKey, EvidenceGroup] = field(default_factory=dict)
    line_slots: dict[int, int] = field(default_factory=dict)

    def add_symptom(self, symptom: Symptom) -> None:
        self.add_group(EvidenceGroup.start(symptom))

    def add_group(self, incoming: EvidenceGroup) -> None:
        key = group_key(incoming.first)
        group = self.groups.get(key)
        if group is None:
            self.groups[key] = incoming.copy()
        else:
            group.merge(incoming)

    def add_lines(self, time_ms: int, count: int = 1) -> None:
        slot = time_ms // SLOT_MS
        self.line_slots[slot] = self.line_slots.get(slot, 0) + count

    def evidence(self, start_ms: int, end_ms: int) -> list[EvidenceGroup]:
        return [g for g in self.groups.values() if g.overlaps(start_ms, end_ms)]

    def lines_between(self, start_ms: int, end_ms: int) -> int:
        first, last = start_ms // SLOT_MS, end_ms // SLOT_MS
        return sum(n for slot, n in self.line_slots.items() if first <= slot <= last)

    def expire(self, before_ms: int) -> bool:
        """Forget everything that ended before ``before_ms``; True if anything was forgotten."""
        cutoff = before_ms // SLOT_MS
        size = len(self.groups) + len(self.line_slots)
        self.groups = {k: g for k, g in self.groups.items() if g.last_ms >= before_ms}
        self.line_slots = {s: n for s, n in self.line_slots.items() if s >= cutoff}
        return len(self.groups) + len(self.line_slots) != size

    def is_empty(self) -> bool:
        return not self.groups and not self.line_slots
