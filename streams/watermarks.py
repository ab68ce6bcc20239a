"""The extractor's event-time watermark: the slowest of the input partitions it reads.

Each assigned ingest partition has its own event time (the latest line or job event it carried).
The extractor may only tell the correlator "event time has reached W" once *every* partition that
can still carry lines has reached W, so the watermark is the minimum over them, as in Flink and
Beam; taking the maximum let one fast partition run ahead of lines still waiting in another, and a
run was decided before its lines arrived (issue 11). A partition that has carried nothing for
``idle_ms`` of wall time drops out (Flink's ``withIdleness``), so a quiet partition cannot hold the
watermark back for ever; one that speaks again takes part again. Once all are idle, the latest
event time any of them carried stands for all.

The watermark never moves backwards within a *generation*. A rebalance starts a new generation
(a new source id, the watermark from zero): a partition new to the worker may lie behind what it
announced, and a batch fetched before the rebalance is dropped undelivered (it is read again). The
correlator keeps the last watermark of each source apart and takes the minimum over the sources it
has heard from lately, so the old generation's last word cannot speak for the new partitions.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

__all__ = ["InputWatermarks"]

Partition = tuple[str, int]  # (topic, partition); aiokafka's TopicPartition is one


class _Input:
    """One input partition: the latest event time it carried (0: none yet) and when it last spoke."""

    __slots__ = ("event_ms", "heard_ms")

    def __init__(self, heard_ms: int) -> None:
        self.event_ms = 0
        self.heard_ms = heard_ms


class InputWatermarks:
    def __init__(self, idle_ms: int, instance: str | None = None) -> None:
        self.idle_ms = idle_ms
        self.instance = instance or uuid.uuid4().hex[:12]
        self.generation = 0
        self.watermark_ms = 0
        self.inputs: dict[Partition, _Input] = {}

    @property
    def source(self) -> str:
        """Who speaks in the watermark records: this worker, in its current generation."""
        return f"{self.instance}.{self.generation}"

    def assign(self, partitions: Iterable[Partition], wall_ms: int) -> None:
        """The group's new assignment. Every partition is read again from its committed offset, so
        each starts over: it holds the watermark (it has said nothing yet) until it carries a
        record or has been idle. A worker that had a watermark starts a new generation: what it
        announced stays true of what it delivered, and a partition new to it may lie behind that."""
        self.inputs = {(tp[0], tp[1]): _Input(wall_ms) for tp in partitions}
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
        if event_ms is not None and event_ms > entry.event_ms:
            entry.event_ms = event_ms

    def advance(self, wall_ms: int) -> int:
        """The watermark at ``wall_ms``: the minimum over the live partitions, never lower than
        before. Once every partition is idle, everything they held has been read: the latest
        event time read is then the best word on how far time has come (a replay's partitions
        fall silent together, and the one that ended earliest must not hold the rest back)."""
        live = [entry.event_ms for entry in self.inputs.values() if wall_ms - entry.heard_ms < self.idle_ms]
        read = [entry.event_ms for entry in self.inputs.values()]
        self.watermark_ms = max(self.watermark_ms, min(live) if live else max(read, default=0))
        return self.watermark_ms
