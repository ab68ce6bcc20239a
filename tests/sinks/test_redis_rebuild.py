"""Redis that lost its data, filled again from the verdicts topic's records (sinks/redis_rebuild.py).

The records are handed over as the topic would give them (raw JSON values, in batches); reading
Kafka is tested in tests/pipeline/test_redis_data_loss.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import orjson
import pytest
import redis

from sinks.redis_rebuild import RebuildCounts, RebuildLock, RebuildLost, restore
from sinks.redis_verdicts import RedisVerdictSink
from tests.sinks.test_redis_verdicts import snapshot, stored, worst, write
from tests.sinks.verdicts import make_verdict, run


async def _batches(*batches: list[dict]) -> AsyncIterator[list[bytes]]:
    for batch in batches:
        yield [orjson.dumps(v) for v in batch]


async def _restore_with(url: str, prefix: str, lock: RebuildLock | None, *batches: list[dict]) -> RebuildCounts:
    sink = RedisVerdictSink(url, prefix)
    try:
        return await restore(sink, _batches(*batches), lock)
    finally:
        await sink.close()


def rebuild(url: str, prefix: str, *batches: list[dict]) -> RebuildCounts:
    return run(_restore_with(url, prefix, None, *batches))


def fleet_nodes(db: redis.Redis, prefix: str) -> list[tuple[str, float]]:
    return db.zrevrange(f"{prefix}fleet:nodes", 0, -1, withscores=True)


def test_a_rebuild_writes_each_workloads_newest_revision_and_counts_each_workload_once(redis_url, prefix, db):
    # The topic as an uncompacted tail leaves it: job-1's revisions out of order and replayed,
    # job-2 once; the newest revision of job-1 blames node-b, not node-a.
    topic = [
        [
            make_verdict("job-1", revision=1, nodes=["node-a"]),
            make_verdict("job-2", nodes=["node-b"]),
            make_verdict("job-1", revision=3, nodes=["node-b"]),
        ],
        [
            make_verdict("job-1", revision=2, nodes=["node-a"]),
            make_verdict("job-1", revision=3, nodes=["node-b"]),
        ],
    ]

    counts = rebuild(redis_url, prefix, *topic)

    assert (counts.records, counts.written, counts.already, counts.unreadable) == (5, 2, 0, 0)
    assert stored(db, prefix, "job-1")["revision"] == "3"
    assert worst(db, prefix) == [("node-b", 2.0)]
    assert fleet_nodes(db, prefix) == [("node-b", 2.0)]
    assert db.hgetall(f"{prefix}node:node-a") == {}


def test_a_second_rebuild_changes_nothing(redis_url, prefix, db):
    topic = [[make_verdict("job-1", revision=2, nodes=["node-a"]), make_verdict("job-2", nodes=["node-a"])]]
    rebuild(redis_url, prefix, *topic)
    before = snapshot(db, prefix)

    counts = rebuild(redis_url, prefix, *topic)

    assert (counts.written, counts.already) == (0, 2)
    assert snapshot(db, prefix) == before
    assert worst(db, prefix) == [("node-a", 2.0)]


def test_a_live_verdict_written_before_the_rebuild_reaches_it_is_kept(redis_url, prefix, db):
    # Redis came back empty and the live sink wrote job-1's newest revision before the rebuild
    # read the topic, where revisions 1 and 2 still are.
    write(redis_url, prefix, make_verdict("job-1", revision=3, nodes=["node-c"]))

    counts = rebuild(redis_url, prefix, [make_verdict("job-1", revision=1), make_verdict("job-1", revision=2)])

    assert (counts.written, counts.already) == (0, 1)
    assert stored(db, prefix, "job-1")["revision"] == "3"
    assert worst(db, prefix) == [("node-c", 1.0)]


def test_a_stale_revision_written_after_the_rebuild_is_refused(redis_url, prefix, db):
    rebuild(redis_url, prefix, [make_verdict("job-1", revision=2, nodes=["node-b"])])

    # a correlator replaying an old event after a crash sends revision 1 again
    late = write(redis_url, prefix, make_verdict("job-1", revision=1, nodes=["node-a"]))

    assert (late.applied, late.skipped) == (0, 1)
    assert orjson.loads(stored(db, prefix, "job-1")["json"])["responsible_nodes"] == ["node-b"]
    assert worst(db, prefix) == [("node-b", 1.0)]


def test_records_that_are_no_verdicts_are_counted_and_skipped(redis_url, prefix, db):
    async def topic() -> AsyncIterator[list[bytes]]:
        yield [b"not json", b'{"workload_id": "job-9"}', b"[1, 2]", orjson.dumps(make_verdict("job-1"))]

    async def go():
        sink = RedisVerdictSink(redis_url, prefix)
        try:
            return await restore(sink, topic())
        finally:
            await sink.close()

    counts = run(go())

    assert (counts.records, counts.written, counts.unreadable) == (4, 1, 3)
    assert stored(db, prefix, "job-1")["revision"] == "1"


def test_the_marker_is_written_only_by_a_rebuild_whose_lock_survived(redis_url, prefix, db):
    async def story():
        lock = RebuildLock(redis_url, prefix)
        try:
            assert not await lock.built()  # a new Redis for this prefix: to be built
            assert await lock.claim()
            rival = RebuildLock(redis_url, prefix)
            assert not await rival.claim(), "a second rebuild must not start while one runs"
            await rival.close()
            await _restore_with(redis_url, prefix, lock, [make_verdict("job-1")])
            await lock.finish()
            assert await lock.built()
        finally:
            await lock.close()

    run(story())

    assert db.get(f"{prefix}sink:built")  # when it was built
    assert not db.exists(f"{prefix}sink:rebuilding")


def test_a_rebuild_that_loses_its_lock_midway_stops_and_marks_nothing(redis_url, prefix, db):
    async def story():
        lock = RebuildLock(redis_url, prefix)
        try:
            assert await lock.claim()
            # Redis loses its data while the rebuild runs (only this test's keys here)
            db.delete(*db.keys(f"{prefix}*"))
            with pytest.raises(RebuildLost):
                await _restore_with(redis_url, prefix, lock, [make_verdict("job-1")])
            with pytest.raises(RebuildLost):
                await lock.finish()
        finally:
            await lock.close()

    run(story())

    assert not db.exists(f"{prefix}sink:built"), "a half rebuild must leave the loss visible to the next check"
