"""Which lines may name a workload by a job id in their text (issue 11: a log line cannot steer
another workload's verdict).

Anyone who can write one log line on any node can write ``JobId=4101``. Such a line counts for
job 4101 only when it comes from one of the job's own nodes or from a scheduler host (slurmctld
logs every job's id); otherwise it is ignored for that job and counted. Job ids from the
record's fields (the scheduler topic, a shipper's ``job_id``) are not claims and always count.
"""

from __future__ import annotations

from collections.abc import Iterable

from correlator.evidence import EvidenceGroup

__all__ = ["ClaimCheck"]


class ClaimCheck:
    def __init__(self, scheduler_hosts: Iterable[str]) -> None:
        self.scheduler_hosts = frozenset(scheduler_hosts)
        #: claiming host → lines ignored because they named a job that host did not run
        self.ignored_lines: dict[str, int] = {}

    def may_name(self, group: EvidenceGroup, run_nodes: set[str]) -> bool:
        claimant = group.first.claimed_from
        return claimant is None or claimant in run_nodes or claimant in self.scheduler_hosts

    def count_ignored(self, group: EvidenceGroup) -> None:
        claimant = group.first.claimed_from or ""
        self.ignored_lines[claimant] = self.ignored_lines.get(claimant, 0) + group.count
