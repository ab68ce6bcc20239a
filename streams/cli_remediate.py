"""``faultstream remediate --policy FILE [--execute]``: act on verdicts as they are published.

Its own consumer group (``<namespace>faultstream-remediate``) on ``faultstream.verdicts``; every
action, dry run, duplicate and refusal goes to ``faultstream.actions`` (key: the node), and only
then are the verdicts' offsets committed (at least once; the Redis bookkeeping makes a second
delivery a ``duplicate``). Dry-run unless ``--execute``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from pathlib import Path

__all__ = ["add_parser"]

log = logging.getLogger("faultstream.remediate")


def add_parser(commands: argparse._SubParsersAction) -> None:
    remediate = commands.add_parser("remediate", help="act on verdicts with a policy (dry-run by default)")
    remediate.add_argument("--policy", type=Path, required=True, help="YAML remediation policy")
    remediate.add_argument("--execute", action="store_true", help="act (default: publish what it would do)")
    remediate.add_argument(
        "--from-beginning",
        action="store_true",
        help="a new consumer group starts at the oldest verdict (default: the newest); "
        "verdicts older than max_verdict_age_s are refused either way",
    )
    remediate.add_argument("--config", type=Path, default=None, help="YAML config file (docs/operations.md)")
    remediate.add_argument("--log-level", default="INFO")
    remediate.set_defaults(handler=_remediate)


def _remediate(args: argparse.Namespace) -> int:
    from streams.remediation_policy import load_policy
    from streams.settings import load_settings

    log_format = "%(asctime)s %(levelname)s %(name)s: %(message)s"
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr, format=log_format)
    policy = load_policy(args.policy)
    settings = load_settings(args.config)
    return asyncio.run(_consume(settings, policy, args.execute, args.from_beginning))


async def _consume(settings, policy, execute: bool, from_beginning: bool) -> int:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    from sinks.redis_client import connect
    from streams.remediation import Remediator

    await _ensure_actions_topic(settings)
    verdicts_topic = settings.topic("faultstream.verdicts")
    actions_topic = settings.topic("faultstream.actions")
    consumer = AIOKafkaConsumer(
        verdicts_topic,
        group_id=settings.topic("faultstream-remediate"),
        enable_auto_commit=False,
        auto_offset_reset="earliest" if from_beginning else "latest",
        **settings.aiokafka_options(),
    )
    producer = AIOKafkaProducer(acks="all", **settings.aiokafka_options())
    redis = connect(settings.redis_url, name="faultstream-remediate")
    remediator = Remediator(policy, redis, settings.redis_prefix, execute=execute)
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(signum, stop.set)
    await consumer.start()
    await producer.start()
    mode = "EXECUTING" if execute else "dry run"
    log.info("remediate (%s): %s -> %s, %d rule(s)", mode, verdicts_topic, actions_topic, len(policy.rules))
    try:
        while not stop.is_set():
            batch = await consumer.getmany(timeout_ms=500, max_records=100)
            for records in batch.values():
                for record in records:
                    await _handle(record, remediator, producer, actions_topic)
            if batch:
                await consumer.commit()
    finally:
        with contextlib.suppress(Exception):
            await consumer.stop()
        await producer.stop()
        await redis.aclose()
    return 0


async def _handle(record, remediator, producer, actions_topic: str) -> None:
    import orjson

    try:
        verdict = orjson.loads(record.value)
        workload_id = verdict["workload_id"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        log.error("not a verdict at %s:%d:%d; skipped", record.topic, record.partition, record.offset)
        return
    for action in await _decide_while_redis_is_away(remediator, verdict):
        key = (action.node or str(workload_id)).encode()
        await producer.send_and_wait(actions_topic, action.to_json(), key=key)
        what = (action.outcome, action.action or "-", action.node or "-", workload_id, action.detail)
        log.info("%s %s %s %s: %s", *what)


async def _decide_while_redis_is_away(remediator, verdict: dict) -> list:
    """Redis holds the cap and what was done: without it nothing is decided. Wait for it (the
    verdict's offset is not committed meanwhile), then decide again: actions marked done are
    skipped; one done but not yet marked when Redis went away runs again, which for an exclusion
    or a drain changes nothing."""
    from sinks.redis_client import RedisError, is_transient

    delay = 0.5
    while True:
        try:
            return await remediator.handle(verdict)
        except RedisError as error:
            if not is_transient(error):
                raise
            log.warning("Redis unavailable (%s); retrying in %.0f s", error, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 10.0)


async def _ensure_actions_topic(settings) -> None:
    """Create faultstream.actions when missing (brokers may not auto-create topics)."""
    from aiokafka.admin import NewTopic
    from aiokafka.errors import TopicAlreadyExistsError

    from streams.admin import wait_for_kafka

    admin = await wait_for_kafka(settings)
    try:
        name = settings.topic("faultstream.actions")
        if name not in set(await admin.list_topics()):
            with contextlib.suppress(TopicAlreadyExistsError):
                await admin.create_topics([NewTopic(name, settings.partitions, 1)])
    finally:
        await admin.close()
