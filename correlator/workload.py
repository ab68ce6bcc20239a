"""Per-workload state: what the scheduler said about one run of a job, and evidence naming it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from correlator.evidence import EvidenceGroup, GroupKey, group_key
from correlator.records import JobEvent
from extractors.symptom import Symptom

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
    #: Event time of the earliest line naming the run: how old a run is that the scheduler has
    #: not announced (known only from its end record, or not yet at all).
    first_seen_ms: int | None = None
    revision: int = 0
    last_verdict_digest: str | None = None
    finalized_at_ms: int | None = None
    #: node → keys of its direct groups, so that one node's groups are found without a scan
    direct_keys_by_node: dict[str, list[GroupKey]] = field(default_factory=dict, repr=False, compare=False)

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

    @property
    def known_since_ms(self) -> int | None:
        """When the run is known to have been running: its start, else its first line."""
        return self.start_ms if self.start_ms is not None else self.first_seen_ms

    def seen_at(self, time_ms: int | None) -> None:
        if time_ms is not None and (self.first_seen_ms is None or time_ms < self.first_seen_ms):
            self.first_seen_ms = time_ms

    def add_direct(self, incoming: EvidenceGroup) -> None:
        self.seen_at(incoming.first_ms)
        key = direct_key(incoming.first)
        group = self.direct.get(key)
        if group is None:
            self._keep_direct(key, incoming.copy())
        else:
            group.merge(incoming)

    def _keep_direct(self, key: GroupKey, group: EvidenceGroup) -> None:
        self.direct[key] = group
        self.direct_keys_by_node.setdefault(key[0], []).append(key)

    def direct_on(self, node: str) -> list[EvidenceGroup]:
        """The direct groups logged on one node ("" for none): the live correlator stores them per
        node, as records of their own, so that no record grows with the number of nodes."""
        return [self.direct[key] for key in self.direct_keys_by_node.get(node, ())]

    def load_direct(self, groups: Iterable[EvidenceGroup]) -> None:
        """Direct groups read back from storage (each key once)."""
        for group in groups:
            self.seen_at(group.first_ms)  # a record written before first_seen_ms was stored
            self._keep_direct(direct_key(group.first), group)


def direct_key(symptom: Symptom) -> GroupKey:
    """A direct group's key: lines that claim the workload from different hosts stay apart, so
    a claim the correlator ignores can never take the place of one it keeps."""
    node, rule_id, entity, slot = group_key(symptom)
    if symptom.claimed_from is not None:
        entity = (*entity, f"claimed_from={symptom.claimed_from}")
    return node, rule_id, entity, slot
