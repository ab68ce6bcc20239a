"""Attributors and their observations, kept in Redis so that a restarted API keeps them.

=================================================  ======  ======================================
key                                                type    content
=================================================  ======  ======================================
``{prefix}api:attributor-ids``                     string  counter; attributor ids are BASE + n
``{prefix}api:observation-ids``                    string  counter of observation ids
``{prefix}api:attributors``                        zset    attributor id scored by creation (ms)
``{prefix}api:attributor:{id}``                    string  the create request and its time (JSON)
``{prefix}api:attributor:{id}:observations``       list    accepted observations, in order (JSON)
=================================================  ======  ======================================

An observation is pushed only while its attributor exists (one server-side script), so a
DELETE racing a POST never leaves an orphan list, and a GET after a POST's answer sees it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import orjson
from redis.asyncio import Redis

__all__ = ["ATTRIBUTOR_ID_BASE", "AttributorStore", "StoredAttributor", "StoredObservation"]

#: Attributor ids start here, far above any Slurm job id (32 bits with federation), so the same
#: path segment can name an attributor or, failing that, a workload the stream decided.
ATTRIBUTOR_ID_BASE = 1_000_000_000_000

_PUSH_IF_EXISTS = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
return redis.call('RPUSH', KEYS[2], ARGV[1])
"""


@dataclass(frozen=True)
class StoredObservation:
    observation_id: int
    source: str
    interval_start: str | None
    interval_end: str | None
    lines: list[dict[str, Any]]  # {body, hostname, time}: time RFC 3339 or None
    accepted_ms: int


@dataclass(frozen=True)
class StoredAttributor:
    attributor_id: int
    request: dict[str, Any]  # the create request as JSON (workload, metadata)
    created_ms: int


class AttributorStore:
    def __init__(self, client: Redis, prefix: str) -> None:
        self.client = client
        self.prefix = f"{prefix}api:"
        self._push = client.register_script(_PUSH_IF_EXISTS)

    def _attributor_key(self, attributor_id: int) -> str:
        return f"{self.prefix}attributor:{attributor_id}"

    def _observations_key(self, attributor_id: int) -> str:
        return f"{self.prefix}attributor:{attributor_id}:observations"

    async def create(self, request: dict[str, Any]) -> StoredAttributor:
        attributor_id = ATTRIBUTOR_ID_BASE + await self.client.incr(f"{self.prefix}attributor-ids")
        stored = StoredAttributor(attributor_id, request, int(time.time() * 1000))
        blob = orjson.dumps({"request": request, "created_ms": stored.created_ms})
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.set(self._attributor_key(attributor_id), blob)
            pipe.zadd(f"{self.prefix}attributors", {str(attributor_id): stored.created_ms})
            await pipe.execute()
        return stored

    async def get(self, attributor_id: int) -> StoredAttributor | None:
        blob = await self.client.get(self._attributor_key(attributor_id))
        if blob is None:
            return None
        data = orjson.loads(blob)
        return StoredAttributor(attributor_id, data["request"], data["created_ms"])

    async def delete(self, attributor_id: int) -> bool:
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.delete(self._attributor_key(attributor_id))
            pipe.delete(self._observations_key(attributor_id))
            pipe.zrem(f"{self.prefix}attributors", str(attributor_id))
            removed, _, _ = await pipe.execute()
        return bool(removed)

    async def page(self, offset: int, limit: int) -> tuple[int, list[StoredAttributor]]:
        """Attributors oldest first: the total, and ``limit`` of them from ``offset``."""
        index = f"{self.prefix}attributors"
        total = await self.client.zcard(index)
        ids = [int(raw) for raw in await self.client.zrange(index, offset, offset + limit - 1)]
        if not ids:
            return total, []
        blobs = await self.client.mget([self._attributor_key(attributor_id) for attributor_id in ids])
        # one deleted between the two reads is skipped, not an error
        return total, [
            StoredAttributor(attributor_id, data["request"], data["created_ms"])
            for attributor_id, blob in zip(ids, blobs, strict=True)
            if blob is not None and (data := orjson.loads(blob))
        ]

    async def add_observation(
        self, attributor_id: int, source: str, interval: tuple[str | None, str | None], lines: list[dict]
    ) -> StoredObservation | None:
        """Store an observation; ``None`` when the attributor does not exist (any more)."""
        observation_id = await self.client.incr(f"{self.prefix}observation-ids")
        observation = StoredObservation(observation_id, source, *interval, lines, int(time.time() * 1000))
        blob = orjson.dumps(observation.__dict__)
        pushed = await self._push(
            keys=[self._attributor_key(attributor_id), self._observations_key(attributor_id)], args=[blob]
        )
        return observation if pushed else None

    async def observations(self, attributor_id: int) -> list[StoredObservation]:
        blobs = await self.client.lrange(self._observations_key(attributor_id), 0, -1)
        return [StoredObservation(**orjson.loads(blob)) for blob in blobs]
