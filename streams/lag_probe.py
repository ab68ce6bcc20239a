"""Consumer lag of one consumer group, as the ``faultstream_consumer_lag`` gauge.

Lag is the standard group lag: a partition's end offset minus the group's committed offset (no
commit yet: the whole partition). It is what a crash would have to replay and what the pipeline
still has to work through. Each worker reports only the partitions assigned to it, so a
partition appears once across a scaled group; the alert takes the max per partition anyway.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable

from aiokafka import AIOKafkaConsumer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.structs import TopicPartition

from streams import metrics

__all__ = ["LagProbe"]

log = logging.getLogger("faultstream.lag")

PROBE_INTERVAL_S = 5.0


class LagProbe:
    def __init__(
        self,
        kafka_options: dict,
        group_id: str,
        assigned: Callable[[], Iterable[tuple[str, int]]],
        interval_s: float = PROBE_INTERVAL_S,
    ) -> None:
        self.kafka_options = kafka_options
        self.group_id = group_id
        self.assigned = assigned  # the (topic, partition) pairs this worker owns right now
        self.interval_s = interval_s

    async def run(self) -> None:
        """Measure every ``interval_s`` until cancelled; a failed probe is logged, not fatal."""
        admin = AIOKafkaAdminClient(**self.kafka_options)
        ends = AIOKafkaConsumer(**self.kafka_options)  # no group: reads end offsets only
        await admin.start()
        await ends.start()
        try:
            while True:
                try:
                    metrics.set_lag(self.group_id, await self.measure(admin, ends))
                except Exception as exc:  # a broker hiccup must not stop the worker
                    log.warning("consumer lag of %s not measured: %s", self.group_id, exc)
                await asyncio.sleep(self.interval_s)
        finally:
            await ends.stop()
            await admin.close()

    async def measure(self, admin: AIOKafkaAdminClient, ends: AIOKafkaConsumer) -> dict[tuple[str, int], int]:
        mine = [TopicPartition(topic, partition) for topic, partition in self.assigned()]
        if not mine:
            return {}
        committed = await admin.list_consumer_group_offsets(self.group_id, partitions=mine)
        end_offsets = await ends.end_offsets(mine)
        lag = {}
        for tp in mine:
            done = committed.get(tp)
            position = done.offset if done is not None and done.offset >= 0 else 0
            lag[(tp.topic, tp.partition)] = max(0, end_offsets.get(tp, 0) - position)
        return lag
