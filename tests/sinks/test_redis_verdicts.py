"""RedisVerdictSink against a real Redis: idempotent, revision-ordered, at-least-once."""

from __future__ import annotations

import asyncio
import time

import orjson
import pytest
import redis

from sinks import SinkError
from sinks.redis_verdicts import RedisVerdictSink
from tests.sinks.conftest import ThrowawayRedis, free_port
from tests.sinks.verdicts import make_verdict, run


async def _write(url: str, prefix: str, *verdicts: dict, **options) -> RedisVerdictSink:
    """One sink lifetime: add everything, flush once, close (one checkpoint of a worker)."""
    sink = RedisVerdictSink(url, prefix, **options)
    try:
        for verdict in verdicts:
            await sink.add(verdict)
        await sink.flush()
    finally:
        await sink.close()
    return sink


def write(url: str, prefix: str, *verdicts: dict, **options) -> RedisVerdictSink:
    return run(_write(url, prefix, *verdicts, **options))


def snapshot(db: redis.Redis, prefix: str) -> dict[str, object]:
    """Everything under the prefix, key by key, to compare before and after."""
    readers = {"hash": db.hgetall, "zset": lambda k: db.zrange(k, 0, -1, withscores=True), "stream": db.xrange}
    return {key: readers[db.type(key)](key) for key in sorted(db.scan_iter(match=f"{prefix}*"))}


def stored(db: redis.Redis, prefix: str, workload_id: str) -> dict[str, str]:
    return db.hgetall(f"{prefix}verdict:{workload_id}")


def worst(db: redis.Redis, prefix: str, domain: str = "hardware") -> list[tuple[str, float]]:
    return db.zrevrange(f"{prefix}nodes:{domain}", 0, -1, withscores=True)


def stream_revisions(db: redis.Redis, prefix: str) -> list[tuple[str, str]]:
    entries = db.xrange(f"{prefix}verdicts:stream")
    return [(fields["workload_id"], fields["revision"]) for _id, fields in entries]


def test_a_new_revision_replaces_the_old_and_moves_the_node_counters(redis_url, prefix, db):
    first = make_verdict("job-1", revision=1, nodes=["node-a"])
    # Late evidence: the second revision blames another node.
    second = make_verdict("job-1", revision=2, nodes=["node-b"])

    write(redis_url, prefix, first)
    assert db.hgetall(f"{prefix}node:node-a") == {"hardware": "1"}
    assert worst(db, prefix) == [("node-a", 1.0)]

    sink = write(redis_url, prefix, second)

    assert (sink.applied, sink.skipped) == (1, 0)
    verdict = stored(db, prefix, "job-1")
    assert orjson.loads(verdict["json"]) == second
    assert verdict["revision"] == "2"
    assert verdict["outcome"] == "Fail Hardware"
    assert verdict["sub_domain"] == "hardware"
    assert verdict["end"] == "2026-03-01T12:00:00.000Z"
    assert verdict["nodes"] == "node-b"
    assert db.hgetall(f"{prefix}node:node-a") == {}
    assert db.hgetall(f"{prefix}node:node-b") == {"hardware": "1"}
    assert worst(db, prefix) == [("node-b", 1.0)]
    assert db.zrange(f"{prefix}verdicts:recent", 0, -1) == ["job-1"]
    assert stream_revisions(db, prefix) == [("job-1", "1"), ("job-1", "2")]


def test_a_revision_that_changes_the_domain_moves_the_count_to_that_domain(redis_url, prefix, db):
    write(redis_url, prefix, make_verdict("job-1", revision=1, nodes=["node-a"]))
    write(redis_url, prefix, make_verdict("job-1", revision=2, sub_domain="system_software", nodes=["node-a"]))

    assert db.hgetall(f"{prefix}node:node-a") == {"system_software": "1"}
    assert worst(db, prefix, "hardware") == []
    assert worst(db, prefix, "system_software") == [("node-a", 1.0)]


def test_worst_nodes_count_each_workload_once_by_its_latest_revision(redis_url, prefix, db):
    write(
        redis_url,
        prefix,
        make_verdict("job-1", revision=1, nodes=["node-a", "node-b"]),
        make_verdict("job-2", revision=1, nodes=["node-a"]),
        make_verdict("job-1", revision=2, nodes=["node-a"]),  # node-b cleared by late evidence
        make_verdict("job-3", revision=1, terminal_state="success", sub_domain=None, nodes=[]),
        make_verdict("job-4", revision=1, sub_domain="user", nodes=[]),
    )

    assert worst(db, prefix) == [("node-a", 2.0)]
    assert db.hgetall(f"{prefix}node:node-a") == {"hardware": "2"}
    assert db.exists(f"{prefix}node:node-b") == 0


def test_success_verdicts_count_nothing(redis_url, prefix, db):
    success = make_verdict("job-ok", terminal_state="success", sub_domain=None, nodes=["node-a"])

    write(redis_url, prefix, success)

    assert stored(db, prefix, "job-ok")["outcome"] == "Success"
    assert list(db.scan_iter(match=f"{prefix}node*")) == []


def test_replaying_the_same_verdict_twice_changes_nothing(redis_url, prefix, db):
    verdict = make_verdict("job-1", revision=3, nodes=["node-a"])
    write(redis_url, prefix, verdict)
    before = snapshot(db, prefix)

    # A worker restarted before committing re-reads and re-sends the same verdict; inside one
    # flush a retried pipeline can also carry it twice.
    replay = write(redis_url, prefix, verdict, verdict)

    assert (replay.applied, replay.skipped) == (0, 2)
    assert snapshot(db, prefix) == before
    assert db.hgetall(f"{prefix}node:node-a") == {"hardware": "1"}
    assert stream_revisions(db, prefix) == [("job-1", "3")]


def test_a_stale_revision_never_overwrites_a_newer_one(redis_url, prefix, db):
    newer = make_verdict("job-1", revision=2, nodes=["node-b"])
    older = make_verdict("job-1", revision=1, nodes=["node-a"])
    write(redis_url, prefix, newer)
    before = snapshot(db, prefix)

    sink = write(redis_url, prefix, older)  # arrives late, e.g. from a lagging partition

    assert (sink.applied, sink.skipped) == (0, 1)
    assert snapshot(db, prefix) == before
    assert orjson.loads(stored(db, prefix, "job-1")["json"]) == newer
    assert worst(db, prefix) == [("node-b", 1.0)]


def test_each_applied_revision_is_published_once(redis_url, prefix, db):
    verdict = make_verdict("job-1")
    pubsub = db.pubsub(ignore_subscribe_messages=True)
    try:
        pubsub.subscribe(f"{prefix}verdicts")
        pubsub.get_message(timeout=1.0)  # the subscribe confirmation
        write(redis_url, prefix, verdict, verdict)
        messages = [pubsub.get_message(timeout=0.5) for _ in range(2)]
    finally:
        pubsub.close()

    assert orjson.loads(messages[0]["data"]) == verdict
    assert messages[1] is None


def test_recent_keeps_only_the_newest_recent_limit_workloads(redis_url, prefix, db):
    verdicts = [
        make_verdict(f"job-{hour}", end=f"2026-03-01T{hour:02d}:00:00.000Z") for hour in (9, 13, 11, 12, 10)
    ]

    write(redis_url, prefix, *verdicts, recent_limit=3)

    assert db.zrevrange(f"{prefix}verdicts:recent", 0, -1) == ["job-13", "job-12", "job-11"]


def test_flush_retries_while_redis_is_down_and_delivers_after_it_returns(
    throwaway_redis: ThrowawayRedis, prefix
):
    server = throwaway_redis
    verdicts = [make_verdict(f"job-{i}", nodes=["node-a"]) for i in range(3)]

    async def story() -> RedisVerdictSink:
        sink = RedisVerdictSink(server.url, prefix, retry_for_s=30)
        try:
            server.shutdown()  # SHUTDOWN NOSAVE: Redis is really gone
            for verdict in verdicts:
                await sink.add(verdict)
            flushing = asyncio.create_task(sink.flush())
            await asyncio.sleep(2.0)
            assert not flushing.done(), "flush must keep retrying while Redis is down"
            assert sink.pending == 3
            server.start()
            await asyncio.wait_for(flushing, timeout=10)
        finally:
            await sink.close()
        return sink

    sink = run(story())

    assert (sink.pending, sink.applied, sink.skipped) == (0, 3, 0)
    db = redis.Redis.from_url(server.url, decode_responses=True)
    try:
        assert sorted(db.zrange(f"{prefix}verdicts:recent", 0, -1)) == ["job-0", "job-1", "job-2"]
        assert db.xlen(f"{prefix}verdicts:stream") == 3
        assert worst(db, prefix) == [("node-a", 3.0)]
    finally:
        db.close()


def test_flush_gives_up_with_sink_error_after_retry_window(prefix):
    nobody_there = f"redis://127.0.0.1:{free_port()}/0"

    async def story() -> tuple[RedisVerdictSink, float]:
        sink = RedisVerdictSink(nobody_there, prefix, retry_for_s=1.0)
        try:
            await sink.add(make_verdict("job-1"))
            started = time.monotonic()
            with pytest.raises(SinkError, match="gave up writing 1 verdicts"):
                await sink.flush()
            return sink, time.monotonic() - started
        finally:
            await sink.close()

    sink, elapsed = run(story())

    assert 1.0 <= elapsed < 3.0
    assert sink.pending == 1, "the verdict stays buffered: the caller must not commit"


def test_a_key_of_the_wrong_type_fails_the_flush_at_once_and_writes_nothing(redis_url, prefix, db):
    db.set(f"{prefix}nodes:hardware", "someone else's string")

    async def story() -> float:
        sink = RedisVerdictSink(redis_url, prefix, retry_for_s=30)
        try:
            await sink.add(make_verdict("job-1", nodes=["node-a"]))
            started = time.monotonic()
            with pytest.raises(SinkError, match=r"WRONGTYPE .*nodes:hardware is a string"):
                await sink.flush()
            return time.monotonic() - started
        finally:
            await sink.close()

    assert run(story()) < 1.0, "retrying cannot fix a wrong key type"
    assert sorted(db.scan_iter(match=f"{prefix}*")) == [f"{prefix}nodes:hardware"]


def test_a_record_without_workload_id_or_revision_is_refused_at_add(redis_url, prefix):
    async def story() -> None:
        sink = RedisVerdictSink(redis_url, prefix)
        try:
            with pytest.raises(SinkError, match="needs workload_id and revision"):
                await sink.add({"workload_id": "job-1"})
            assert sink.pending == 0
        finally:
            await sink.close()

    run(story())
