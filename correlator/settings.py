"""Time windows of the correlator, in event-time seconds (docs/verdict.md explains each)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CorrelatorSettings"]


@dataclass(frozen=True)
class CorrelatorSettings:
    #: Evidence this long before a run started is shown as context (a reboot, an earlier Xid).
    lookback_s: float = 300.0
    #: Lines stamped up to this long after the job-end record still belong to the run.
    tail_s: float = 30.0
    #: How long (event time) to wait after a job ends for late lines before deciding.
    grace_s: float = 30.0
    #: How long a node keeps symptoms no known run needs (a job-start record may come late).
    idle_retention_s: float = 7200.0
    #: How long after its verdict late evidence may still revise it.
    revision_horizon_s: float = 3600.0
    #: Hosts whose lines may name any job in their text (the scheduler's own: slurmctld's host).
    #: A job id read from any other line counts only when the line comes from one of the job's
    #: nodes (correlator/claims.py).
    scheduler_hosts: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if self.tail_s > self.grace_s:
            msg = "tail_s must not exceed grace_s: lines in the tail must arrive before the verdict"
            raise ValueError(msg)

    @property
    def grace_ms(self) -> int:
        return int(self.grace_s * 1000)
