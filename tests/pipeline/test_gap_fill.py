"""Records the faust stream skipped are read back from the broker (streams/gap_fill.py)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from streams.gap_fill import GapReader

pytestmark = pytest.mark.services


def test_a_skipped_range_of_one_partition_is_read_back_in_order_with_its_record_times(services):
    topic = f"gap{uuid.uuid4().hex[:8]}.faultstream.node-events"

    async def scenario() -> list:
        admin = AIOKafkaAdminClient(bootstrap_servers=services.kafka)
        await admin.start()
        await admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])
        await admin.close()
        producer = AIOKafkaProducer(bootstrap_servers=services.kafka, acks="all")
        await producer.start()
        for n in range(10):
            await producer.send_and_wait(topic, b"r%d" % n, partition=1, timestamp_ms=1_796_000_000_000 + n)
        await producer.stop()
        reader = GapReader({"bootstrap_servers": services.kafka})
        try:
            return await reader.read(topic, 1, 3, 8)
        finally:
            await reader.close()

    got = asyncio.run(scenario())
    assert [(r.offset, r.value) for r in got] == [(n, b"r%d" % n) for n in range(3, 8)]
    assert all(r.partition == 1 and r.topic == topic for r in got)
    assert got[0].timestamp == pytest.approx(1_796_000_000.003)  # seconds, as faust's messages have it
