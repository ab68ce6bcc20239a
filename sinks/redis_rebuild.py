"""Rebuilding the sink's keys when Redis lost them (docs/sinks.md, "When Redis loses its data").

Redis without persistence comes back from a restart empty, and a new Redis for an existing
pipeline starts empty: either way the verdicts are still on the verdicts topic. A finished
rebuild leaves a marker key (``{prefix}sink:built``); its absence is how a worker notices the
loss. The rebuild holds a lock key (``{prefix}sink:rebuilding``, a token with a short TTL) that
only this rebuild renews: if it is gone at the end, Redis lost its data again meanwhile (or the
rebuild stalled past the TTL), so no marker is written and the next check starts over.

Every verdict is written through :class:`~sinks.redis_verdicts.RedisVerdictSink`, whose apply
script refuses any revision not newer than the stored one: live verdicts written meanwhile are
never overwritten by older ones, and a second rebuild changes nothing. Kafka is not read here
(the caller hands over the topic's records, streams/redis_rebuild.py).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterable
from dataclasses import dataclass
from datetime import UTC, datetime

import orjson

from sinks.redis_client import connect
from sinks.redis_keys import VerdictKeys
from sinks.redis_verdicts import RedisVerdictSink

__all__ = ["RebuildCounts", "RebuildLock", "RebuildLost", "restore"]

log = logging.getLogger(__name__)

LOCK_TTL_MS = 30_000  # renewed after every written batch; a dead rebuilder frees it this soon

# KEYS: lock, marker. ARGV: token, marker value. Only the lock's holder may write the marker.
FINISH_LUA = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[2], ARGV[2])
redis.call('DEL', KEYS[1])
return 1
"""

# KEYS: lock. ARGV: token, ttl ms.
RENEW_LUA = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])
"""


class RebuildLost(Exception):
    """The lock vanished while rebuilding: Redis lost its data again, or another rebuild took over."""


class RebuildLock:
    """The marker and the lock of one prefix; one instance per rebuild attempt (its own token)."""

    def __init__(self, url: str, prefix: str, ttl_ms: int = LOCK_TTL_MS) -> None:
        self._keys = VerdictKeys(prefix)
        self._client = connect(url, name="faultstream-rebuild")
        self._finish = self._client.register_script(FINISH_LUA)
        self._renew = self._client.register_script(RENEW_LUA)
        self.token = uuid.uuid4().hex
        self.ttl_ms = ttl_ms

    async def built(self) -> bool:
        """Whether these keys were built (or rebuilt) since Redis last lost its data."""
        return bool(await self._client.exists(self._keys.built))

    async def claim(self) -> bool:
        """Take the lock unless another rebuild holds it."""
        return bool(await self._client.set(self._keys.rebuilding, self.token, nx=True, px=self.ttl_ms))

    async def renew(self) -> None:
        if not await self._renew(keys=[self._keys.rebuilding], args=[self.token, self.ttl_ms]):
            raise RebuildLost(f"lost {self._keys.rebuilding} while rebuilding: Redis lost its data again?")

    async def finish(self) -> None:
        """Write the marker and free the lock, if the lock (and so everything written) survived."""
        built_at = datetime.now(UTC).isoformat(timespec="seconds")
        if not await self._finish(keys=[self._keys.rebuilding, self._keys.built], args=[self.token, built_at]):
            raise RebuildLost(f"lost {self._keys.rebuilding} before the end: Redis lost its data again?")

    async def release(self) -> None:
        """Free the lock after a failed rebuild (only if it is still this rebuild's)."""
        await self._client.eval(
            "if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end",
            1,
            self._keys.rebuilding,
            self.token,
        )

    async def close(self) -> None:
        await self._client.aclose()


@dataclass
class RebuildCounts:
    records: int = 0  # verdict records read
    written: int = 0  # revisions the sink applied
    already: int = 0  # revisions Redis already had (or had newer): skipped
    unreadable: int = 0  # records that are no verdict

    def __str__(self) -> str:
        return (
            f"{self.records} records read, {self.written} verdicts written, "
            f"{self.already} already there, {self.unreadable} unreadable"
        )


async def restore(
    sink: RedisVerdictSink, batches: AsyncIterable[list[bytes]], lock: RebuildLock | None = None
) -> RebuildCounts:
    """Write the newest revision of every workload in ``batches`` (raw topic values) to Redis.

    Only the newest revision of a batch is sent, and a revision is sent only if it is newer than
    what this rebuild sent before: a compacted topic holds one record per workload, and the rest
    (the uncompacted tail) costs one script call per newer revision. ``sink`` must be the
    rebuild's own (its buffer is flushed here).
    """
    counts = RebuildCounts()
    sent: dict[str, int] = {}  # workload -> newest revision sent; small next to the verdicts
    async for batch in batches:
        newest: dict[str, dict] = {}
        for value in batch:
            counts.records += 1
            verdict = _verdict(value)
            if verdict is None:
                counts.unreadable += 1
            elif verdict["revision"] > sent.get(verdict["workload_id"], 0):
                sent[verdict["workload_id"]] = verdict["revision"]
                newest[verdict["workload_id"]] = verdict
        for verdict in newest.values():
            await sink.add(verdict)
        await sink.flush()
        if lock is not None:
            await lock.renew()
    counts.written, counts.already = sink.applied, sink.skipped
    return counts


def _verdict(value: bytes) -> dict | None:
    try:
        verdict = orjson.loads(value)
        verdict["workload_id"], verdict["revision"] = str(verdict["workload_id"]), int(verdict["revision"])
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        log.warning("not a verdict on the verdicts topic, skipped: %.80r", value)
        return None
    return verdict
