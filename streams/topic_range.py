"""Read a time range of the raw ingest topics straight from Kafka, as recording records.

No consumer group and nothing committed: the live pipeline's groups never see this reader. Each
partition is read from the first offset whose timestamp is at or after ``since`` to the first at or
after ``until`` (``offsets_for_times``), and records are kept when their Kafka timestamp lies in
``[since, until)``. A record is written as a recording writes it (``streams.records.TopicRecord``):
the default topic name, the value as a JSON object or a raw line, the key, the record's own time
(the recorded time of a replayed record, see ``streams.topics.RECORDED_TIME_HEADER``), and its
partition and offset, so a dumped range backtests exactly as the live pipeline read it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from streams.settings import Settings
from streams.topics import record_time_ms

__all__ = ["KAFKA_TIME", "Progress", "TimeRange", "default_topic_names", "read_range"]

FETCH_TIMEOUT_MS = 1000
#: A yielded record's Kafka timestamp (not part of a recording: pop it before writing one).
KAFKA_TIME = "_kafka_ms"


@dataclass(frozen=True)
class TimeRange:
    since_ms: int
    until_ms: int

    def __post_init__(self) -> None:
        if self.until_ms <= self.since_ms:
            raise ValueError("--until must be after --since")

    def holds(self, time_ms: int) -> bool:
        return self.since_ms <= time_ms < self.until_ms


def default_topic_names(settings: Settings) -> dict[str, str]:
    """Configured ingest topic (with namespace) → the default name a recording uses."""
    return {topic: name for name, topic in settings.configured_topics().items()}


class Progress:
    """Records read of the total, rate and ETA on a terminal's stderr, at most twice a second."""

    def __init__(self, total: int, enabled: bool | None = None) -> None:
        self.total, self.done = total, 0
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.started = self.shown = time.monotonic()

    def advance(self, count: int) -> None:
        self.done += count
        now = time.monotonic()
        if self.enabled and now - self.shown >= 0.5:
            self.shown = now
            rate = self.done / max(now - self.started, 1e-9)
            eta = (self.total - self.done) / rate if rate else 0.0
            sys.stderr.write(f"\r{self.done:,}/{self.total:,} records, {rate:,.0f}/s, ETA {eta:,.0f}s   ")

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")


def _value(raw: bytes | None) -> dict[str, Any] | str:
    if raw is None:
        return ""
    if raw[:1] == b"{":
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
        else:
            if isinstance(data, dict):
                return data
    return raw.decode("utf-8", "replace")


async def _partitions(settings: Settings, topics: list[str]) -> list[TopicPartition]:
    """The partitions of the topics that exist (a consumer without a subscription knows none)."""
    admin = AIOKafkaAdminClient(**settings.aiokafka_options())
    await admin.start()
    try:
        described = await admin.describe_topics(topics)
    finally:
        await admin.close()
    return [
        TopicPartition(topic["topic"], part["partition"])
        for topic in described
        if topic.get("error_code") == 0
        for part in sorted(topic["partitions"], key=lambda p: p["partition"])
    ]


async def _bounds(
    consumer: AIOKafkaConsumer, partitions: list[TopicPartition], span: TimeRange
) -> dict[TopicPartition, tuple[int, int]]:
    """Per partition, [first offset at or after since, first offset at or after until)."""
    starts = await consumer.offsets_for_times(dict.fromkeys(partitions, span.since_ms))
    stops = await consumer.offsets_for_times(dict.fromkeys(partitions, span.until_ms))
    ends = await consumer.end_offsets(partitions)
    bounds = {}
    for tp in partitions:
        if starts[tp] is None:
            continue  # nothing at or after since
        stop = stops[tp].offset if stops[tp] is not None else ends[tp]
        if stop > starts[tp].offset:
            bounds[tp] = (starts[tp].offset, stop)
    return bounds


async def read_range(
    settings: Settings,
    span: TimeRange,
    topics: list[str] | None = None,
    progress: Callable[[int], Progress] | None = None,
) -> AsyncIterator[dict[str, Any]]:
    """Every record of the ingest topics (or ``topics``) in ``span``, in partition order."""
    names = default_topic_names(settings)
    wanted = topics or list(names)
    consumer = AIOKafkaConsumer(
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level="read_committed",  # an internal topic's aborted extractor batches are not records
        **settings.aiokafka_options(),
    )
    await consumer.start()
    try:
        partitions = await _partitions(settings, wanted)
        bounds = await _bounds(consumer, partitions, span) if partitions else {}
        meter = progress(sum(stop - start for start, stop in bounds.values())) if progress else None
        async for record in _records(consumer, bounds, meter):
            if span.holds(record.timestamp):
                yield {
                    "topic": names.get(record.topic, record.topic),
                    "value": _value(record.value),
                    "key": record.key.decode("utf-8", "replace") if record.key else None,
                    "timestamp": record_time_ms(record.timestamp, record.headers),
                    "partition": record.partition,
                    "offset": record.offset,
                    KAFKA_TIME: record.timestamp,
                }
        if meter:
            meter.close()
    finally:
        await consumer.stop()


async def _records(
    consumer: AIOKafkaConsumer, bounds: dict[TopicPartition, tuple[int, int]], meter: Progress | None
) -> AsyncIterator[Any]:
    if not bounds:
        return
    consumer.assign(list(bounds))
    for tp, (start, _) in bounds.items():
        consumer.seek(tp, start)
    open_parts = set(bounds)
    while open_parts:
        batches = await consumer.getmany(*open_parts, timeout_ms=FETCH_TIMEOUT_MS)
        for tp, records in batches.items():
            stop = bounds[tp][1]
            kept = [r for r in records if r.offset < stop]
            if meter:
                meter.advance(len(kept))
            for record in kept:
                yield record
            if records and records[-1].offset >= stop - 1:
                open_parts.discard(tp)
        for tp in list(open_parts):
            if await consumer.position(tp) >= bounds[tp][1]:
                open_parts.discard(tp)
