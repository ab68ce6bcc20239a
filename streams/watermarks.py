"""The extractor's event-time watermark: the slowest of the input partitions it reads.

Each assigned ingest partition has its own event time (the latest line or job event it carried).
The extractor may only tell the correlator "event time has reached W" once *every* partition that
can still carry lines has reached W, so the watermark is the minimum over them, as in Flink and
Beam; taking the maximum let one fast partition run ahead of lines still waiting in another, and a
run was decided before its lines arrived (issue 11). A partition drops out (it is *idle*) once it
has carried nothing for ``idle_ms`` of wall time *and* the consumer has read it to its end, so a
quiet partition cannot hold the watermark back for ever; one that speaks again takes part again.
Silence alone (Flink's ``withIdleness``) is not enough: a consumer whose fetches lag on a loaded
machine is silent too, and the watermark passed lines still waiting unread in the partition. The
worker tells where its consumer stands against the partition's end (``read_up_to``) for the
partitions that have been silent that long (``silent``). Once all are idle, the latest event time
any of them carried stands for all.

The watermark never moves backwards within a *generation*. A rebalance starts a new generation
(a new source id, the watermark from zero): a partition new to the worker may lie behind what it
announced, and a batch fetched before the rebalance is dropped undelivered (it is read again). A
partition the worker keeps starts from the event time its *delivered* batches reached (``deliver``),
not from zero: it is read again from the offset they committed, so that much of it is in. Without
it, a worker whose partitions had all been read before a rebalance had no event time left to
announce, and the correlators' clocks stood still (two extractors joining while a load was read). The
correlator keeps the last watermark of each source apart and takes the minimum over the sources it
has heard from lately, so the old generation's last word cannot speak for the new partitions.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping

__all__ = ["InputWatermarks"]

Partition = tuple[str, int]  # (topic, partition); aiokafka's TopicPartition is one


class _Input:
    """One input partition: the latest event time it carried (0: none yet), when it last spoke, and
    how many records the consumer had still to read when last told (None: not told since it spoke)."""

    __slots__ = ("event_ms", "heard_ms", "unread")

    def __init__(self, heard_ms: int, event_ms: int = 0) -> None:
        self.event_ms = event_ms
        self.heard_ms = heard_ms
        self.unread: int | None = None

    def idle(self, wall_ms: int, idle_ms: int) -> bool:
        return wall_ms - self.heard_ms >= idle_ms and self.unread == 0


class InputWatermarks:
    def __init__(self, idle_ms: int, instance: str | None = None) -> None:
        self.idle_ms = idle_ms
        self.instance = instance or uuid.uuid4().hex[:12]
        self.generation = 0
        self.watermark_ms = 0
        self.inputs: dict[Partition, _Input] = {}
        #: per assigned partition, the latest event time of its records in delivered batches
        self.delivered: dict[Partition, int] = {}

    @property
    def source(self) -> str:
        """Who speaks in the watermark records: this worker, in its current generation."""
        return f"{self.instance}.{self.generation}"

    def assign(self, partitions: Iterable[Partition], wall_ms: int) -> None:
        """The group's new assignment. Every partition is read again from its committed offset, so
        each starts over: it holds the watermark (it has said nothing yet) until it carries a
        record or has been idle. A worker that had a watermark starts a new generation: what it
        announced stays true of what it delivered, and a partition new to it may lie behind that.
        A partition it keeps starts from the event time its delivered batches reached."""
        keys = [(tp[0], tp[1]) for tp in partitions]
        self.delivered = {tp: self.delivered[tp] for tp in keys if tp in self.delivered}
        self.inputs = {tp: _Input(wall_ms, self.delivered.get(tp, 0)) for tp in keys}
        if self.watermark_ms > 0:
            self.generation += 1
            self.watermark_ms = 0

    def observe(self, partition: Partition, event_ms: int | None, wall_ms: int) -> None:
        """A record of ``partition`` (its lines' or job event's latest time, None for a record that
        carried neither: it still shows the partition is live)."""
        entry = self.inputs.get((partition[0], partition[1]))
        if entry is None:  # fetched before a rebalance took the partition away: its new owner's
            return
        entry.heard_ms = wall_ms
        entry.unread = None  # it may have more: it must be read to its end again before it is idle
        if event_ms is not None and event_ms > entry.event_ms:
            entry.event_ms = event_ms

    def deliver(self, latest: Mapping[Partition, int | None]) -> None:
        """A batch's outputs and input offsets are committed: the latest event time it carried per
        partition (None: none) is in, and stays true of the partition after a rebalance."""
        for tp, event_ms in latest.items():
            key = (tp[0], tp[1])
            if event_ms is not None and key in self.inputs and event_ms > self.delivered.get(key, 0):
                self.delivered[key] = event_ms

    def silent(self, wall_ms: int) -> list[Partition]:
        """The partitions that have carried nothing for the idle time: idle once read to their end."""
        return [tp for tp, entry in self.inputs.items() if wall_ms - entry.heard_ms >= self.idle_ms]

    def read_up_to(self, partition: Partition, position: int, end: int | None) -> None:
        """Where the consumer stands in ``partition``: ``position``, the offset of the next record it
        will hand out, against ``end``, the partition's end (the offset after its last record) as
        the broker told it lately (None: not known, so it is not idle). The word stands until the
        partition speaks or is told again, so the worker tells it afresh before each ``advance``
        (the partition may have grown since)."""
        entry = self.inputs.get((partition[0], partition[1]))
        if entry is not None:
            entry.unread = None if end is None else max(0, end - position)

    def advance(self, wall_ms: int) -> int:
        """The watermark at ``wall_ms``: the minimum over the partitions that are not idle, never
        lower than before. Once every partition is idle, everything they held has been read: the
        latest event time read is then the best word on how far time has come (a replay's
        partitions fall silent together, and the one that ended earliest must not hold the rest
        back)."""
        live = [entry.event_ms for entry in self.inputs.values() if not entry.idle(wall_ms, self.idle_ms)]
        read = [entry.event_ms for entry in self.inputs.values()]
        self.watermark_ms = max(self.watermark_ms, min(live) if live else max(read, default=0))
        return self.watermark_ms
