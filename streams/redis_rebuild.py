"""Redis rebuilt from the verdicts topic: the correlator's watch and ``faultstream verdicts rebuild``.

The watch (:class:`RedisWatch`) runs beside the correlator's agents. It looks for the marker of
sinks/redis_rebuild.py every ``redis_check_interval_s`` and right after the live sink had to
reconnect, never per verdict; when the marker is missing it takes the lock and rebuilds. The
rebuild reads the topic from its beginning up to where it ended when the rebuild started
(``read_committed``): what comes later is written by the live sink itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaError

from sinks.base import SinkError
from sinks.redis_client import RedisError
from sinks.redis_rebuild import RebuildCounts, RebuildLock, RebuildLost, restore
from sinks.redis_verdicts import RedisVerdictSink
from streams.admin import wait_for_kafka
from streams.settings import Settings
from streams.topics import Topics

__all__ = ["RebuildBusy", "RedisWatch", "rebuild", "verdict_batches", "verdict_sink"]

log = logging.getLogger("faultstream.redis-rebuild")

BATCH_RECORDS = 500
POLL_S = 1.0  # how often the watch looks at the live sink's reconnect count (no I/O)
RETRY_S = 2.0  # after a failed check or rebuild
LOST_MESSAGE = (
    "Redis held no %ssink:built (new, or restarted without its data): "
    "rebuilt from the verdicts topic in %.1f s: %s"
)


class RebuildBusy(Exception):
    """Another rebuild holds the lock."""


def verdict_sink(settings: Settings, switch_ports: dict[str, str] | None = None) -> RedisVerdictSink:
    """The sink as the correlator configures it: a rebuild must file verdicts exactly as it does."""
    return RedisVerdictSink(
        settings.redis_url,
        prefix=settings.redis_prefix,
        fleet_window_s=settings.fleet_window_s,
        switch_ports=switch_ports,
    )


async def verdict_batches(settings: Settings) -> AsyncIterator[list[bytes]]:
    """The verdicts topic's values from its beginning to its end as of now, in batches."""
    topic = Topics.from_settings(settings).verdicts
    partitions = [TopicPartition(topic, p) for p in await _partitions(settings, topic)]
    if not partitions:
        return  # no verdicts topic yet: nothing to rebuild
    consumer = AIOKafkaConsumer(
        **settings.aiokafka_options(),
        group_id=None,
        enable_auto_commit=False,
        isolation_level="read_committed",
        client_id="faultstream-rebuild",
    )
    await consumer.start()
    try:
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        ends = await consumer.end_offsets(partitions)  # read_committed: the last stable offsets
        remaining = dict(ends)
        while remaining:
            for tp in list(remaining):
                if await consumer.position(tp) >= remaining[tp]:
                    del remaining[tp]
            if not remaining:
                return
            fetched = await consumer.getmany(*remaining, timeout_ms=1000, max_records=BATCH_RECORDS)
            values = [r.value for tp, rows in fetched.items() for r in rows if r.offset < ends[tp]]
            yield [v for v in values if v is not None]  # tombstones are no verdicts
    finally:
        await consumer.stop()


async def _partitions(settings: Settings, topic: str) -> list[int]:
    admin = await wait_for_kafka(settings)
    try:
        [description] = await admin.describe_topics([topic])
    finally:
        await admin.close()
    return sorted(p["partition"] for p in description.get("partitions") or [])


async def rebuild(
    settings: Settings, switch_ports: dict[str, str] | None = None, *, only_if_lost: bool = False
) -> RebuildCounts | None:
    """Rebuild under the lock; ``only_if_lost``: do nothing (None) while the marker is there.

    Raises :class:`RebuildBusy` when another rebuild holds the lock, :class:`RebuildLost` when
    Redis lost the lock meanwhile (nothing is marked built then: the next check starts over).
    """
    lock = RebuildLock(settings.redis_url, settings.redis_prefix)
    try:
        if only_if_lost and await lock.built():
            return None
        if not await lock.claim():
            raise RebuildBusy("another rebuild of these keys is under way")
        return await _rebuild_holding(settings, switch_ports, lock)
    finally:
        await lock.close()


async def _rebuild_holding(
    settings: Settings, switch_ports: dict[str, str] | None, lock: RebuildLock
) -> RebuildCounts:
    sink = verdict_sink(settings, switch_ports)
    try:
        counts = await restore(sink, verdict_batches(settings), lock)
        await lock.finish()
    except BaseException:
        await _quietly(lock.release())
        raise
    finally:
        await sink.close()
    return counts


async def _quietly(step: Awaitable[None]) -> None:
    with contextlib.suppress(RedisError):  # the lock expires by itself
        await step


class RedisWatch:
    """Notices that Redis lost the sink's keys (see the module docstring) and rebuilds them."""

    def __init__(
        self, settings: Settings, live: RedisVerdictSink, switch_ports: dict[str, str] | None = None
    ) -> None:
        self.settings, self.live, self.switch_ports = settings, live, switch_ports
        self.interval_s = settings.redis_check_interval_s
        self._next_check = 0.0  # at once: a new Redis for an existing topic
        self._seen_reconnects = live.reconnects
        self._failing = False

    async def run(self) -> None:
        while True:
            if self._due():
                await self.check()
            await asyncio.sleep(POLL_S)

    def _due(self) -> bool:
        return time.monotonic() >= self._next_check or self.live.reconnects != self._seen_reconnects

    async def check(self) -> None:
        reconnects, started = self.live.reconnects, time.monotonic()
        try:
            counts = await rebuild(self.settings, self.switch_ports, only_if_lost=True)
        except RebuildBusy:
            self._schedule(reconnects, RETRY_S)  # see whether the other one finishes
            return
        except (RedisError, SinkError, KafkaError, RebuildLost, OSError) as exc:
            if not self._failing:
                log.warning("Redis check or rebuild failed, retrying every %.0f s: %s", RETRY_S, exc)
            self._failing = True
            self._schedule(reconnects, RETRY_S)
            return
        if counts is not None:
            took = time.monotonic() - started
            log.warning(LOST_MESSAGE, self.settings.redis_prefix, took, counts)
        self._failing = False
        self._schedule(reconnects, self.interval_s)

    def _schedule(self, reconnects: int, after_s: float) -> None:
        self._seen_reconnects = reconnects
        self._next_check = time.monotonic() + after_s
