"""``faultstream load``: publish recordings to the ingest topics, fast or in real time.

Each record keeps its key and its Kafka timestamp from the recording, so the live pipeline sees
exactly what the backtest reads. A recording's topic names get the configured namespace.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import orjson
from aiokafka import AIOKafkaProducer

from streams.admin import ensure_topics
from streams.recording import RawRecord, read_recording
from streams.settings import Settings
from streams.topics import RECORDED_TIME_HEADER

__all__ = ["load_recordings"]


async def load_recordings(settings: Settings, paths: list[Path], speed: float | None = None) -> dict[str, int]:
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
    renamed = {
        "logs.syslog": settings.topic_syslog,
        "logs.dmesg": settings.topic_dmesg,
        "logs.applog": settings.topic_applog,
        "events.scheduler": settings.topic_scheduler,
    }
    return settings.topic(renamed.get(recorded, recorded))


async def _publish(
    producer: AIOKafkaProducer, settings: Settings, path: Path, speed: float | None, counts: dict[str, int]
) -> None:
    first_ts: int | None = None
    started = time.monotonic()
    pending = []
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
        pending.append(
            await producer.send(
                _topic_for(settings, record.topic),
                value,
                key=record.key.encode() if record.key else None,
                headers=recorded,  # the Kafka timestamp is the send time: see RECORDED_TIME_HEADER
            )
        )
        counts["records"] += 1
        if len(pending) >= 10_000:
            await asyncio.gather(*pending)
            pending.clear()
    await asyncio.gather(*pending)
