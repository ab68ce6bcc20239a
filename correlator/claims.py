"""Which lines may name a workload or a node other than their own (issue 11: a log line cannot
steer another workload's verdict).

Anyone who can write one log line on any node can write ``JobId=4101`` or ``Nodes gpu003 not
responding``, and a job's user writes whatever they like to the job's output. So a line's text
is a *claim* (``Symptom.claimed_from`` is the claiming host) and counts only:

- from a configured scheduler host (slurmctld logs every job and names every node), always;
- naming a job: from one of that job's nodes;
- naming another node: only for a job both hosts ran, never on its own (a node-keyed symptom
  would land on whatever job runs on the named node).

Anything else is ignored for that job or node and counted. What the scheduler topic or the
record's fields say (a shipper's ``job_id``) is no claim.

The check needs a trust anchor: the hosts whose lines may name anything (``scheduler_hosts``).
A site that lists none gets no check at all, and every line's claim counts, as before the check
existed: refusing slurmctld's ``Nodes gpu003 not responding`` and srun's ``task 0: Out Of
Memory`` on a cluster nobody configured would silently drop the evidence operators need most,
while a wrong verdict needs a writer who can already log on a node. docs/operations.md
("Security") tells operators to list their controllers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from correlator.evidence import EvidenceGroup
from extractors.symptom import Symptom

__all__ = ["ClaimCheck"]


class ClaimCheck:
    def __init__(self, scheduler_hosts: Iterable[str], on_ignored: Callable[[int], None] | None = None) -> None:
        self.scheduler_hosts = frozenset(scheduler_hosts)
        #: claiming host → lines ignored because they named a job or node that was not theirs
        self.ignored_lines: dict[str, int] = {}
        #: told how many lines each time some are ignored (the live stages count a metric)
        self.on_ignored = on_ignored

    @property
    def enforced(self) -> bool:
        """Claims are checked once some scheduler host is configured (see the module doc)."""
        return bool(self.scheduler_hosts)

    def may_name(self, group: EvidenceGroup, run_nodes: set[str]) -> bool:
        """May a direct group's line count for the run on ``run_nodes``?"""
        claimant, node = group.first.claimed_from, group.first.node or ""
        if not self.enforced or claimant is None or claimant in self.scheduler_hosts:
            return True
        return claimant in run_nodes and (node == claimant or node in run_nodes)

    def count_ignored(self, group: EvidenceGroup) -> None:
        self._count(group.first.claimed_from or "", group.count)

    def keep_own_nodes(self, symptoms: Sequence[Symptom]) -> list[Symptom]:
        """Symptoms of a batch without those that put a node-keyed symptom on another node
        than the line's own (from a host other than the scheduler's): counted, then dropped."""
        if not self.enforced:
            return list(symptoms)
        kept = []
        for symptom in symptoms:
            claimant = symptom.claimed_from
            foreign = (
                claimant is not None
                and not symptom.workload_id
                and symptom.node != claimant
                and claimant not in self.scheduler_hosts
            )
            if foreign:
                self._count(claimant or "", 1)
            else:
                kept.append(symptom)
        return kept

    def _count(self, claimant: str, lines: int) -> None:
        self.ignored_lines[claimant] = self.ignored_lines.get(claimant, 0) + lines
        if self.on_ignored is not None:
            self.on_ignored(lines)
