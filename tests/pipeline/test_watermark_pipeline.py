"""Recordings published as fast as the broker takes them give the backtest's verdicts, revision
numbers included (issue 11): the pipeline decides a run once every ingest partition that can
carry its lines has passed its end plus grace, not once the fastest one has."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer

from streams.topics import record_time_ms
from tests.pipeline.results import ALL_RECORDINGS, comparable, expected_verdicts, wait_for_verdicts

pytestmark = [pytest.mark.services, pytest.mark.slow]


def test_recordings_loaded_at_full_speed_give_the_backtests_revisions(pipeline):
    expected = expected_verdicts(ALL_RECORDINGS, pipeline.grace_s)
    pipeline.extractor()
    pipeline.correlator()
    pipeline.load(*ALL_RECORDINGS)  # no --speed: days of event time in a second or two

    latest = _latest_event_time_per_partition(pipeline.services.kafka, f"{pipeline.namespace}events.scheduler")
    assert len(latest) >= 2, f"the scheduler's records all went to one partition: {latest}"
    assert len(set(latest.values())) >= 2, "the partitions end at one time: nothing could run ahead"

    got = wait_for_verdicts(pipeline.services.redis, pipeline.prefix, expected, timeout_s=90)
    assert sorted(got) == sorted(expected), pipeline.logs()
    for workload_id, verdict in expected.items():
        assert comparable(got[workload_id]) == comparable(verdict), workload_id
    revisions = {workload_id: got[workload_id]["revision"] for workload_id in expected}
    assert revisions == {workload_id: verdict["revision"] for workload_id, verdict in expected.items()}


def _latest_event_time_per_partition(bootstrap: str, topic: str) -> dict[int, int]:
    """The event time each partition of ``topic`` ends at (the recorded time of its last record)."""

    async def read() -> dict[int, int]:
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest")
        await consumer.start()
        latest: dict[int, int] = {}
        try:
            while batch := await consumer.getmany(timeout_ms=2000):
                for tp, records in batch.items():
                    for record in records:
                        time_ms = record_time_ms(record.timestamp, record.headers)
                        latest[tp.partition] = max(latest.get(tp.partition, 0), time_ms)
        finally:
            await consumer.stop()
        return latest

    return asyncio.run(read())
