"""Reading verdicts back: the latest first, and new ones as they are written."""

from __future__ import annotations

import asyncio
from contextlib import aclosing

from redis.asyncio import Redis

from sinks.redis_reader import follow_verdicts, recent_verdicts
from sinks.redis_verdicts import RedisVerdictSink
from tests.sinks.verdicts import make_verdict, run


async def _write(url: str, prefix: str, *verdicts: dict) -> None:
    sink = RedisVerdictSink(url, prefix)
    try:
        for verdict in verdicts:
            await sink.add(verdict)
        await sink.flush()
    finally:
        await sink.close()


async def _until_a_follower_blocks(url: str) -> None:
    """Wait until some client sits in XREAD BLOCK, i.e. the follower has pinned its position."""
    client = Redis.from_url(url)
    try:
        for _ in range(200):
            clients = await client.client_list()
            if any(c["name"] == "faultstream-follow" and "b" in c["flags"] for c in clients):
                return
            await asyncio.sleep(0.02)
        raise AssertionError("follow_verdicts never blocked on XREAD")
    finally:
        await client.aclose()


def test_recent_verdicts_come_latest_first(redis_url, prefix):
    morning = make_verdict("job-morning", end="2026-03-01T09:00:00.000Z")
    noon = make_verdict("job-noon", end="2026-03-01T12:00:00.000Z")
    evening = make_verdict("job-evening", end="2026-03-01T18:00:00.000Z")
    noon_revised = make_verdict("job-noon", revision=2, nodes=["node-z"], end="2026-03-01T12:00:00.000Z")

    async def story() -> tuple[list[dict], list[dict], list[dict]]:
        await _write(redis_url, prefix, noon, evening, morning, noon_revised)
        everything = await recent_verdicts(redis_url, prefix, limit=10)
        two = await recent_verdicts(redis_url, prefix, limit=2)
        none = await recent_verdicts(redis_url, prefix, limit=0)
        return everything, two, none

    everything, two, none = run(story())

    assert everything == [evening, noon_revised, morning]
    assert two == [evening, noon_revised]
    assert none == []


def test_follow_yields_new_verdicts_as_they_are_written(redis_url, prefix):
    history = make_verdict("job-old")
    first, second = make_verdict("job-1"), make_verdict("job-2", revision=2)

    async def story() -> list[dict]:
        await _write(redis_url, prefix, history)  # written before following: not yielded
        async with aclosing(follow_verdicts(redis_url, prefix, block_ms=200)) as new:
            waiting = asyncio.ensure_future(anext(new))
            await _until_a_follower_blocks(redis_url)
            await _write(redis_url, prefix, first)
            got = [await asyncio.wait_for(waiting, timeout=5)]
            await _write(redis_url, prefix, second)
            got.append(await asyncio.wait_for(anext(new), timeout=5))
        return got

    assert run(story()) == [first, second]


def test_follow_from_an_explicit_id_replays_what_came_after_it(redis_url, prefix):
    verdicts = [make_verdict(f"job-{i}") for i in range(3)]

    async def story() -> list[dict]:
        await _write(redis_url, prefix, *verdicts)
        async with aclosing(follow_verdicts(redis_url, prefix, last_id="0-0")) as new:
            return [await asyncio.wait_for(anext(new), timeout=5) for _ in verdicts]

    assert run(story()) == verdicts
