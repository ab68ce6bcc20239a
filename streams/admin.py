"""Create the pipeline's topics up front, with the configured partition count."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaConnectionError, TopicAlreadyExistsError

from streams.settings import Settings
from streams.topics import Topics

__all__ = ["VERDICTS_CONFIG", "ensure_topics", "wait_for_kafka"]

log = logging.getLogger("faultstream.admin")


async def wait_for_kafka(settings: Settings, timeout_s: float = 60.0) -> AIOKafkaAdminClient:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        admin = AIOKafkaAdminClient(**settings.aiokafka_options())
        try:
            await admin.start()
            return admin
        except KafkaConnectionError:
            await admin.close()
            if asyncio.get_running_loop().time() > deadline:
                msg = f"cannot reach Kafka at {settings.kafka_bootstrap_servers}"
                raise ConnectionError(msg) from None
            await asyncio.sleep(1.0)


async def _check_partitions(admin: AIOKafkaAdminClient, names: list[str], expected: int) -> None:
    """Internal topics are partitioned by key with ``crc32(key) % partitions``: a topic with another
    partition count would silently send keys where no state for them lives."""
    for description in await admin.describe_topics(names):
        count = len(description.get("partitions") or [])
        if count and count != expected:
            msg = (
                f"topic {description['topic']} has {count} partitions but partitions={expected}; "
                "set FAULTSTREAM_PARTITIONS to match, or use a new namespace"
            )
            raise ValueError(msg)


#: The verdicts topic keeps the last revision of every workload for as long as the topic lives:
#: a Redis that lost its data is rebuilt from it (streams/redis_rebuild.py), whatever its age.
VERDICTS_CONFIG = {"cleanup.policy": "compact"}


def _new_topic(name: str, topics: Topics) -> NewTopic:
    configs = VERDICTS_CONFIG if name == topics.verdicts else None
    return NewTopic(name, topics.partitions, 1, topic_configs=configs)


async def ensure_topics(settings: Settings) -> None:
    topics = Topics.from_settings(settings)
    admin = await wait_for_kafka(settings)
    try:
        existing = set(await admin.list_topics())
        missing = [_new_topic(name, topics) for name in topics.all_names() if name not in existing]
        if missing:
            with contextlib.suppress(TopicAlreadyExistsError):  # another worker created them first
                await admin.create_topics(missing)
            log.info("created topics %s", [t.name for t in missing])
        await _check_partitions(admin, [topics.node_events, topics.workload_events], topics.partitions)
    finally:
        await admin.close()
