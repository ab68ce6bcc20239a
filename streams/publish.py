"""``faultstream load``: publish recordings to the ingest topics, fast or in real time.

Each record keeps its key and its Kafka timestamp from the recording, so the live pipeline sees
exactly what the backtest reads. A recording's topic names get the configured namespace.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import orjson
from aiokafka import AIOKafkaProducer

from streams.admin import ensure_topics
from streams.recording import RawRecord, read_recording
from streams.settings import Settings
from streams.topics import RECORDED_TIME_HEADER

__all__ = ["publish_recordings"]


async def publish_recordings(
    settings: Settings, paths: list[Path], speed: float | None = None
) -> dict[str, int]:
    await ensure_topics(settings)
    producer = AIOKafkaProducer(acks="all", linger_ms=10, max_batch_size=1 << 20, **settings.aiokafka_options())
    await producer.start()
    counts = {"records": 0, "skipped": 0}
    try:
        for path in paths:
            await _publish(producer, settings, path, speed, counts)
        await producer.flush()
    finally:
        await producer.stop()
    return counts


def _topic_for(settings: Settings, recorded: str) -> str:
    """A recording names the default topics; publish to the configured ones (and namespace)."""
    return settings.configured_topics().get(recorded) or settings.topic(recorded)


class _Batches:
    """Records without a key (every shipper record) go out in batches built here, one per topic
    and partition, partitions in turn: several times faster than one ``send`` per record, which
    made publishing a 200,000-line recording take longer than processing it."""

    def __init__(self, producer: AIOKafkaProducer) -> None:
        self.producer = producer
        self.open: dict[tuple[str, int], Any] = {}
        self.partitions: dict[str, list[int]] = {}
        self.turn: dict[str, int] = {}

    async def add(self, topic: str, value: bytes, headers: list[tuple[str, bytes]]) -> asyncio.Future | None:
        if topic not in self.partitions:
            self.partitions[topic] = sorted(await self.producer.partitions_for(topic))
        partitions = self.partitions[topic]
        turn = self.turn[topic] = (self.turn.get(topic, -1) + 1) % len(partitions)
        key = (topic, partitions[turn])
        batch = self.open.get(key)
        if batch is None:
            batch = self.open[key] = self.producer.create_batch()
        if batch.append(key=None, value=value, timestamp=None, headers=headers) is not None:
            return None
        sent = await self._send(key)  # full: send it, start the next with this record
        self.open[key] = fresh = self.producer.create_batch()
        fresh.append(key=None, value=value, timestamp=None, headers=headers)
        return sent

    async def _send(self, key: tuple[str, int]) -> asyncio.Future:
        batch = self.open.pop(key)
        batch.close()
        return await self.producer.send_batch(batch, key[0], partition=key[1])

    async def flush(self) -> list[asyncio.Future]:
        return [await self._send(key) for key in list(self.open)]


async def _publish(
    producer: AIOKafkaProducer, settings: Settings, path: Path, speed: float | None, counts: dict[str, int]
) -> None:
    first_ts: int | None = None
    started = time.monotonic()
    pending = []
    batches = _Batches(producer)
    for record in read_recording(path):
        if not isinstance(record, RawRecord):
            counts["skipped"] += 1
            continue
        if speed and record.timestamp_ms is not None:
            first_ts = first_ts if first_ts is not None else record.timestamp_ms
            delay = (record.timestamp_ms - first_ts) / 1000 / speed - (time.monotonic() - started)
            if delay > 0:
                await asyncio.sleep(delay)
        value = record.value.encode() if isinstance(record.value, str) else orjson.dumps(record.value)
        recorded = (
            None if record.timestamp_ms is None else [(RECORDED_TIME_HEADER, b"%d" % record.timestamp_ms)]
        )
        topic = _topic_for(settings, record.topic)
        if record.key or speed:  # keyed records keep the client's partitioner; paced ones go now
            pending += await batches.flush()  # after the lines before them (a job's end after its lines)
            pending.append(
                await producer.send(
                    topic,
                    value,
                    key=record.key.encode() if record.key else None,
                    headers=recorded,  # the Kafka timestamp is the send time: see RECORDED_TIME_HEADER
                )
            )
        elif (sent := await batches.add(topic, value, recorded or [])) is not None:
            pending.append(sent)
        counts["records"] += 1
        if len(pending) >= 1_000:
            await asyncio.gather(*pending)
            pending.clear()
    pending += await batches.flush()
    await asyncio.gather(*pending)
