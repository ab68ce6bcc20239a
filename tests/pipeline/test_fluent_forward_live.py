"""``faultstream forward`` as a process: the verdicts topic in, a Fluent forward input out."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid

import orjson
import pytest
from aiokafka import AIOKafkaProducer

from streams.admin import ensure_topics
from streams.settings import load_settings
from tests.sinks.test_fluent_forward import VERDICT, ForwardReceiver

pytestmark = pytest.mark.services


@pytest.fixture
def receiver():
    r = ForwardReceiver()
    yield r
    r.close()


async def publish(settings, verdict: dict) -> None:
    await ensure_topics(settings)
    producer = AIOKafkaProducer(**settings.aiokafka_options())
    await producer.start()
    try:
        await producer.send_and_wait(settings.topic("faultstream.verdicts"), orjson.dumps(verdict), key=b"4101")
    finally:
        await producer.stop()


def test_faultstream_forward_sends_each_verdict_on_the_topic(receiver, services):
    namespace = f"fwd{uuid.uuid4().hex[:8]}."
    settings = load_settings(None, kafka_bootstrap_servers=services.kafka, namespace=namespace)
    asyncio.run(publish(settings, VERDICT))
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": services.kafka, "FAULTSTREAM_NAMESPACE": namespace}
    target = f"127.0.0.1:{receiver.port}"
    command = [sys.executable, "-m", "streams.cli", "forward", "--to", target, "--from-beginning"]
    worker = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
    try:
        [(tag, _, record)] = receiver.wait_for(1, timeout_s=60)
        assert tag == "faultstream.verdict.hardware" and record["workload_id"] == "4101"
    finally:
        worker.terminate()
        worker.wait(timeout=30)
