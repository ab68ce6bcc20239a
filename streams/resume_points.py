"""How far the extractor's own committed transactions took each input partition (issue 11).

aiokafka reads a group's committed offsets with OffsetFetch v<=3, without KIP-447's
``require_stable``. The transaction coordinator writes a transaction's commit markers, to
``__consumer_offsets`` too, after EndTxn has returned; so an extractor that rejoins its group right
after a commit (a broker that froze expired its session) can be told the offsets from before that
transaction and would read and send its batch again. The extractor remembers the next offset of
every partition its own committed transactions covered and never reads below it: on an assignment
it seeks to the larger of that and the group's offset, and a record below it is dropped. A fresh
process remembers nothing; it needs none of this, since its producer's InitProducerId (same
transactional id) returns only once the previous transaction is complete, markers written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Generic, Protocol, TypeVar

__all__ = ["ResumePoints"]


class _Offset(Protocol):
    offset: int


P = TypeVar("P")  # a partition (aiokafka's TopicPartition in the worker)
R = TypeVar("R", bound=_Offset)  # a record


class ResumePoints(Generic[P]):
    def __init__(self) -> None:
        self._next: dict[P, int] = {}

    def committed(self, offsets: Mapping[P, int]) -> None:
        """A transaction carrying these next offsets has committed (EndTxn returned)."""
        for partition, offset in offsets.items():
            self._next[partition] = max(self._next.get(partition, 0), offset)

    def own(self, partition: P) -> int | None:
        return self._next.get(partition)

    def seek_to(self, partition: P, group_offset: int | None) -> int | None:
        """Where to resume a just-assigned partition, given the group's committed offset (None: none
        known), or None to leave it where the consumer puts it: the group's offset is the right one
        unless it is behind this process's own last commit (its markers not yet applied)."""
        own = self._next.get(partition)
        if own is None or (group_offset is not None and group_offset >= own):
            return None
        return own

    def unseen(self, fetched: Mapping[P, list[R]]) -> dict[P, list[R]]:
        """The fetched records not yet in a committed transaction of this process: one below its
        remembered offset was sent already (a fetch from a stale position)."""
        kept: dict[P, list[R]] = {}
        for partition, records in fetched.items():
            floor = self._next.get(partition, 0)
            fresh = [record for record in records if record.offset >= floor]
            if fresh:
                kept[partition] = fresh
        return kept
