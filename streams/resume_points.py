"""How far the extractor's own committed transactions took each input partition (issue 11).

aiokafka reads a group's committed offsets with OffsetFetch v<=3, without KIP-447's
``require_stable``. The transaction coordinator writes a transaction's commit markers, to
``__consumer_offsets`` too, after EndTxn has returned; so an extractor that rejoins its group right
after a commit (a broker that froze expired its session) can be told the offsets from before that
transaction and would read and send its batch again. The extractor remembers the next offset of
every partition its own committed transactions covered and never sends a record below it again: such
a record is dropped, and a partition that read only such records seeks to the commit. (Seeking in
the assignment callback raced aiokafka's own committed-offset refresh, which may be staler.) A fresh
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

    def skip_to(self, fetched: Mapping[P, list[R]]) -> dict[P, int]:
        """Where to seek the partitions whose fetched records all lie below this process's own last
        commit (the consumer resumed from a stale group offset): to the commit, instead of reading
        the rest of what was sent already. A partition with a record at or past it reads on."""
        return {
            partition: self._next[partition]
            for partition, records in fetched.items()
            if records and partition in self._next and records[-1].offset < self._next[partition]
        }

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
