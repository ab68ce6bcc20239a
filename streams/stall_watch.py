"""Notice a correlator worker whose assigned partitions have stopped flowing.

faust-streaming 0.15.3 can come out of a rebalance "ready" and yet never fetch some of its
partitions again (faust issues #93, #594, #629). Nothing fails: verdicts simply stop. The
correlator's timer sends a tick to every partition twice a second, so a healthy partition always
has a recent event; one assigned partition silent for ``limit_s`` while its agent is idle and no
rebalance or recovery is under way is stalled, and the worker restarts itself (see
``streams/correlator_app.py``). An agent blocked inside an event — a verdict sink retrying during a
Redis outage — is back-pressure, not a stall, and is left alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["StallWatch"]

#: A rebalance plus table recovery longer than this many stall limits is taken as stuck.
SETTLE_LIMITS = 3


@dataclass
class StallWatch:
    limit_s: float
    last_event: dict[tuple[str, int], float] = field(default_factory=dict)
    busy: dict[str, int] = field(default_factory=dict)  # topic → the partition its agent is inside
    ready_since: float | None = None
    settling_since: float | None = None

    def settling(self, now: float) -> bool:
        """A rebalance or a table recovery is under way: silence is expected — for a while.
        True once it has lasted ``SETTLE_LIMITS`` times the limit: a recovery that never ends
        (the other way faust gets stuck) is a stall too."""
        self.ready_since = None
        if self.settling_since is None:
            self.settling_since = now
        return now - self.settling_since > SETTLE_LIMITS * self.limit_s

    def begin(self, topic: str, partition: int, now: float) -> None:
        self.last_event[(topic, partition)] = now
        self.busy[topic] = partition

    def end(self, topic: str, now: float) -> None:
        partition = self.busy.pop(topic, None)
        if partition is not None:  # a long event (a sink retrying) ends: count from its end
            self.last_event[(topic, partition)] = now

    def stalled(self, assigned: Iterable[tuple[str, int]], now: float) -> list[tuple[str, int]]:
        """The assigned partitions silent for longer than the limit (call it periodically)."""
        self.settling_since = None
        if self.ready_since is None:
            self.ready_since = now
        out = []
        for topic, partition in assigned:
            if topic in self.busy:
                continue
            seen = max(self.last_event.get((topic, partition), 0.0), self.ready_since)
            if now - seen > self.limit_s:
                out.append((topic, partition))
        return sorted(out)
