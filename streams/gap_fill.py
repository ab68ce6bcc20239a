"""Records faust skipped: read them back so a partition is applied without holes.

Every record a partition processor applies moves its offset marker to that record's offset. So
the next record it sees is the marker + 1 — or an older one, a replay it skips — unless offsets in
between hold no record a reader sees: the extractor's transactions leave a commit marker after
each batch, and a batch it crashed in stays aborted. Otherwise a newer one means the stream
dropped records: faust-streaming 0.15.3 resumes fetching a newly assigned partition
while its table recovery runs, discards what it fetched then, and after seeking back to the
committed offset drops the re-fetched records as already read (seen in the test of a correlator
joining mid-run: a job's start and end records never reached the agent, and its verdict never
came). :class:`GapReader` reads the missing range with a plain consumer outside the group, so the
correlator applies it, in order, before the record that revealed the gap; a range of markers and
aborted records reads back empty.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaConsumer
from aiokafka.structs import TopicPartition

from streams.read_committed import READ_COMMITTED

__all__ = ["GapReader", "ReadBack"]

READ_TIMEOUT_MS = 1_000


@dataclass(frozen=True)
class ReadBack:
    """A record read back, with the fields of a faust message the correlator uses."""

    topic: str
    partition: int
    offset: int
    value: bytes
    timestamp: float  # seconds, as faust gives it


class GapReader:
    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options
        self.consumer: AIOKafkaConsumer | None = None
        # both agents read back through the one consumer: one at a time (a second read would move
        # the first's position, or meet a consumer still starting)
        self.busy = asyncio.Lock()

    async def read(self, topic: str, partition: int, first: int, end: int) -> list[ReadBack]:
        """Records ``first`` ≤ offset < ``end`` of one partition (fewer if retention took some)."""
        async with self.busy:
            return await self._read(await self._consumer(), topic, partition, first, end)

    async def _read(
        self, consumer: AIOKafkaConsumer, topic: str, partition: int, first: int, end: int
    ) -> list[ReadBack]:
        tp = TopicPartition(topic, partition)
        if consumer.assignment() != {tp}:
            consumer.assign([tp])
        consumer.seek(tp, first)
        out: list[ReadBack] = []
        while await consumer.position(tp) < end:  # the position moves past markers and aborted records
            batch = (await consumer.getmany(tp, timeout_ms=READ_TIMEOUT_MS)).get(tp, [])
            if not batch and await consumer.position(tp) < end:
                break  # nothing more to read: the broker no longer has them, or they are not there
            out += [
                ReadBack(r.topic, r.partition, r.offset, r.value, r.timestamp / 1000)
                for r in batch
                if r.offset < end
            ]
        return out

    async def _consumer(self) -> AIOKafkaConsumer:
        if self.consumer is None:
            self.consumer = AIOKafkaConsumer(
                enable_auto_commit=False,
                auto_offset_reset="earliest",
                isolation_level=READ_COMMITTED,  # never an aborted extractor batch
                **self.options,
            )
            await self.consumer.start()
        return self.consumer

    async def close(self) -> None:
        if self.consumer is not None:
            await self.consumer.stop()
            self.consumer = None
