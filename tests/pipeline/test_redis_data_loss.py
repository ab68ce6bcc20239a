"""Redis restarted without persistence: the verdicts come back from the verdicts topic (issue 11)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import uuid
from collections import Counter

import orjson
import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from sinks.redis_reader import recent_verdicts
from streams.admin import ensure_topics
from streams.settings import Settings
from tests.conftest import REPO
from tests.pipeline.private_redis import PrivateRedis
from tests.pipeline.results import ALL_RECORDINGS, comparable, expected_verdicts, wait_for_verdicts
from tests.sinks.verdicts import make_verdict

pytestmark = [pytest.mark.services, pytest.mark.slow]

REBUILT = "rebuilt from the verdicts topic"


def test_verdicts_written_before_redis_restarted_empty_are_rebuilt_beside_the_new_ones(pipeline, tmp_path):
    half = len(ALL_RECORDINGS) // 2  # the halves the other mid-run tests load
    before_loss, after_loss = ALL_RECORDINGS[:half], ALL_RECORDINGS[half:]
    everything = expected_verdicts(ALL_RECORDINGS, pipeline.grace_s)
    redis = PrivateRedis(tmp_path / "redis")
    redis.start()
    pipeline.redis_url = redis.url
    pipeline.overrides = {"FAULTSTREAM_REDIS_CHECK_INTERVAL_S": "2"}
    try:
        pipeline.extractor()
        pipeline.correlator()
        pipeline.load(*before_loss)
        first = _first_verdicts(redis, pipeline)
        server = _run_id(redis)

        redis.stop()  # no RDB, no AOF: it comes back empty
        redis.start()
        assert _run_id(redis) != server, "Redis was not restarted"
        pipeline.load(*after_loss)

        got = wait_for_verdicts(redis.url, pipeline.prefix, everything)
        _assert_same(got, everything, pipeline)
        assert all(got[w]["revision"] >= revision for w, revision in first.items()), "an older revision won"
        assert _node_counters(redis, pipeline.prefix) == _blamed(everything), "a node counted twice, or lost"
        log = (pipeline.workdir / "correlator.log").read_text(errors="replace")
        # once for the new Redis at start-up, once after the restart
        assert log.count(REBUILT) == 2, pipeline.logs()
    finally:
        redis.stop()


def test_faultstream_verdicts_rebuild_fills_an_empty_redis_and_a_second_run_writes_nothing(services, tmp_path):
    redis = PrivateRedis(tmp_path / "redis")
    redis.start()
    settings = Settings(
        kafka_bootstrap_servers=services.kafka, redis_url=redis.url, namespace=f"t{uuid.uuid4().hex[:8]}."
    )
    # Three revisions of job-1 (the last one blames gpu002) and one of job-2 on the topic.
    on_topic = [
        make_verdict("job-1", revision=1, nodes=["gpu001"]),
        make_verdict("job-2", nodes=["gpu001"]),
        make_verdict("job-1", revision=2, nodes=["gpu001"]),
        make_verdict("job-1", revision=3, nodes=["gpu002"]),
    ]
    try:
        asyncio.run(_publish(settings, on_topic))
        assert asyncio.run(_cleanup_policy(settings)) == "compact"

        first = _rebuild_command(settings)
        again = _rebuild_command(settings)

        stored = {
            v["workload_id"]: v for v in asyncio.run(recent_verdicts(redis.url, settings.redis_prefix, 10))
        }
        assert stored == {"job-1": on_topic[3], "job-2": on_topic[1]}
        assert _node_counters(redis, settings.redis_prefix) == {
            ("hardware", "gpu001"): 1,
            ("hardware", "gpu002"): 1,
        }
        assert "4 records read" in first and "0 verdicts written, 2 already there" in again
        assert redis.cli("exists", f"{settings.redis_prefix}sink:built") == "1"
    finally:
        redis.stop()


def _first_verdicts(redis: PrivateRedis, pipeline, count: int = 5, timeout_s: float = 60.0) -> dict[str, int]:
    """Wait until Redis holds ``count`` verdicts; their revisions by workload."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        stored = asyncio.run(recent_verdicts(redis.url, pipeline.prefix, 1000))
        if len(stored) >= count:
            return {v["workload_id"]: v["revision"] for v in stored}
        time.sleep(0.5)
    raise AssertionError(f"fewer than {count} verdicts in Redis after {timeout_s:g} s\n{pipeline.logs()}")


def _assert_same(got: dict[str, dict], expected: dict[str, dict], pipeline) -> None:
    missing = sorted(set(expected) - set(got))
    assert not missing, f"no verdict for {missing}\n{pipeline.logs()}"
    for workload_id, verdict in expected.items():
        mine, theirs = comparable(got[workload_id]), comparable(verdict)
        mine.pop("lines_seen"), theirs.pop("lines_seen")  # the extractor may count a batch twice
        assert mine == theirs, workload_id


def _run_id(redis: PrivateRedis) -> str:
    info = redis.cli("info", "server")
    return next(line.split(":", 1)[1] for line in info.splitlines() if line.startswith("run_id:"))


def _node_counters(redis: PrivateRedis, prefix: str) -> dict[tuple[str, str], int]:
    """``nodes:{domain}`` as {(domain, node): workloads blaming it}."""
    counters = {}
    for key in redis.cli("--scan", "--pattern", f"{prefix}nodes:*").split():
        domain = key.removeprefix(f"{prefix}nodes:")
        pairs = redis.cli("zrange", key, "0", "-1", "withscores").split()
        counters.update(
            {(domain, node): int(score) for node, score in zip(pairs[::2], pairs[1::2], strict=True)}
        )
    return counters


def _blamed(verdicts: dict[str, dict]) -> dict[tuple[str, str], int]:
    """What the node counters hold when each workload's latest verdict was counted once."""
    counts: Counter[tuple[str, str]] = Counter()
    for verdict in verdicts.values():
        if verdict["terminal_state"] != "success" and verdict["sub_domain"]:
            counts.update((verdict["sub_domain"], node) for node in dict.fromkeys(verdict["responsible_nodes"]))
    return dict(counts)


async def _publish(settings: Settings, verdicts: list[dict]) -> None:
    await ensure_topics(settings)
    producer = AIOKafkaProducer(bootstrap_servers=settings.kafka_bootstrap_servers, acks="all")
    await producer.start()
    try:
        for verdict in verdicts:
            topic = settings.topic("faultstream.verdicts")
            await producer.send_and_wait(topic, orjson.dumps(verdict), key=verdict["workload_id"].encode())
    finally:
        await producer.stop()


async def _cleanup_policy(settings: Settings) -> str:
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka_bootstrap_servers)
    await admin.start()
    try:
        topic = ConfigResource(ConfigResourceType.TOPIC, settings.topic("faultstream.verdicts"))
        [response] = await admin.describe_configs([topic])
        entries = response.resources[0][4]
        return next(entry[1] for entry in entries if entry[0] == "cleanup.policy")
    finally:
        await admin.close()


def _rebuild_command(settings: Settings) -> str:
    env = {name: value for name, value in os.environ.items() if not name.startswith("FAULTSTREAM_")}
    env.update(
        KAFKA_BOOTSTRAP_SERVERS=settings.kafka_bootstrap_servers,
        REDIS_URL=settings.redis_url,
        FAULTSTREAM_NAMESPACE=settings.namespace,
        PYTHONPATH=str(REPO),  # the code under test, whatever else is installed
    )
    command = [sys.executable, "-m", "streams", "verdicts", "rebuild"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stderr
