"""Read verdicts back from Redis: the latest ones, and new ones as they are written."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import orjson

from sinks.redis_client import connect
from sinks.redis_keys import VerdictKeys

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["follow_verdicts", "recent_verdicts", "stream_position"]

FOLLOW_BATCH = 100


async def recent_verdicts(url: str, prefix: str, limit: int) -> list[dict]:
    """Up to ``limit`` verdicts (latest revision each), latest job end first."""
    if limit < 1:
        return []
    keys = VerdictKeys(prefix)
    client = connect(url, name="faultstream-reader")
    try:
        workload_ids = await client.zrevrange(keys.recent, 0, limit - 1)
        async with client.pipeline(transaction=False) as pipe:
            for workload_id in workload_ids:
                pipe.hget(keys.verdict(workload_id.decode()), "json")
            blobs = await pipe.execute()
    finally:
        await client.aclose()
    # A hash can vanish between the two reads (someone deleted it): skip rather than fail.
    return [orjson.loads(blob) for blob in blobs if blob is not None]


async def stream_position(url: str, prefix: str) -> str:
    """The id of the newest stream entry ("0-0" if none): follow from here to miss nothing."""
    client = connect(url, name="faultstream-reader")
    try:
        return await _last_id(client, VerdictKeys(prefix).stream)
    finally:
        await client.aclose()


async def follow_verdicts(
    url: str, prefix: str, last_id: str = "$", *, block_ms: int = 5000
) -> AsyncIterator[dict]:
    """Yield each verdict revision written after ``last_id`` ("$": after now), forever.

    Close it with ``aclose()`` (or ``contextlib.aclosing``) to release the connection.
    """
    stream = VerdictKeys(prefix).stream
    # The socket must outlive the server-side block, or every quiet period looks like an outage.
    client = connect(url, name="faultstream-follow", socket_timeout=block_ms / 1000 + 10)
    try:
        # "$" is pinned to a real id once: passing "$" again on each XREAD would lose entries
        # written between two reads.
        cursor = await _last_id(client, stream) if last_id == "$" else last_id
        while True:
            reply = await client.xread({stream: cursor}, count=FOLLOW_BATCH, block=block_ms)
            for _name, entries in reply or []:
                for entry_id, fields in entries:
                    cursor = entry_id
                    yield orjson.loads(fields[b"json"])
    finally:
        await client.aclose()


async def _last_id(client: Redis, stream: str) -> str:
    newest = await client.xrevrange(stream, count=1)
    return newest[0][0].decode() if newest else "0-0"
