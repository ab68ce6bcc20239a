"""The pipeline on a Kafka that wants TLS and credentials (issue 11).

A second broker of its own (``KAFKA_SECURE=1 scripts/kafka.sh``, other ports and state; the
shared one stays as it is): SASL_SSL with SCRAM-SHA-512 on its client port, and an SSL listener
that requires a client certificate. The extractor (aiokafka), the correlator (faust) and
``faultstream load`` run over SASL_SSL from settings alone and give the backtest's verdict;
a client certificate is enough on the SSL listener; a client without credentials, with a wrong
password or without a certificate is refused; and the password shows in no log and no --help.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError

from streams.settings import Settings
from tests.golden.stories import RECORDINGS
from tests.pipeline.conftest import Pipeline, Services
from tests.pipeline.results import expected_verdicts, wait_for_verdicts
from tests.private_kafka import PrivateKafka
from tests.secured import Certificates, free_port, make_certificates

pytestmark = [pytest.mark.slow, pytest.mark.services]

USER = "faultstream"


@dataclass(frozen=True)
class SecuredKafka:
    sasl_port: int
    ssl_port: int
    password: str
    certificates: Certificates
    state: Path

    def sasl_settings(self, password: str | None = None) -> dict[str, str]:
        """The environment of a client that logs in over SASL_SSL."""
        return {
            "KAFKA_BOOTSTRAP_SERVERS": f"127.0.0.1:{self.sasl_port}",
            "FAULTSTREAM_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
            "FAULTSTREAM_KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
            "FAULTSTREAM_KAFKA_SASL_USERNAME": USER,
            "FAULTSTREAM_KAFKA_SASL_PASSWORD": password or self.password,
            "FAULTSTREAM_KAFKA_SSL_CAFILE": str(self.certificates.ca),
        }


@pytest.fixture(scope="module")
def secured_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredKafka]:
    root = tmp_path_factory.mktemp("kafka-secured")
    kafka = SecuredKafka(
        free_port(), free_port(), secrets.token_urlsafe(18), make_certificates(root / "tls"), root
    )
    broker = PrivateKafka(
        root,
        port=kafka.sasl_port,
        env={
            "KAFKA_SSL_PORT": str(kafka.ssl_port),
            "KAFKA_SECURE": "1",
            "KAFKA_TLS_DIR": str(kafka.certificates.ca.parent),
            "KAFKA_SCRAM_USER": USER,
            "KAFKA_SCRAM_PASSWORD": kafka.password,
        },
    )
    try:
        started, ready = broker.start()
        assert kafka.password not in started.stderr + ready.stderr
        yield kafka
    finally:
        broker.stop()


def test_the_pipeline_runs_end_to_end_over_sasl_ssl(secured_kafka, services, tmp_path):
    recording = RECORDINGS / "xid79_one_of_sixteen.jsonl"
    pipeline = Pipeline(
        Services(f"127.0.0.1:{secured_kafka.sasl_port}", services.redis),
        tmp_path,
        f"t{uuid.uuid4().hex[:8]}.",
        overrides=secured_kafka.sasl_settings(),
    )
    try:
        pipeline.extractor()
        pipeline.correlator()
        pipeline.load(recording)
        expected = expected_verdicts([recording], pipeline.grace_s)
        got = wait_for_verdicts(pipeline.services.redis, pipeline.prefix, expected, timeout_s=90)
        assert set(got) == set(expected), pipeline.logs()
        [(workload, verdict)] = got.items()
        assert verdict["responsible_nodes"] == expected[workload]["responsible_nodes"] == ["gpu007"]
    finally:
        pipeline.stop()
    logs = "".join(p.read_text(errors="replace") for p in tmp_path.glob("*.log"))
    assert secured_kafka.password not in logs
    state_logs = "".join(p.read_text(errors="replace") for p in secured_kafka.state.rglob("*.log"))
    assert (
        secured_kafka.password
        not in state_logs + (secured_kafka.state / "state/kafka/logs/kafka.out").read_text()
    )


async def _produce(settings: Settings) -> None:
    producer = AIOKafkaProducer(request_timeout_ms=5000, **settings.aiokafka_options())
    try:
        await asyncio.wait_for(producer.start(), 20)
        await producer.send_and_wait("probe.secured", b"x")
    finally:
        await producer.stop()


def _sasl_client(kafka: SecuredKafka, **changes: str) -> Settings:
    values = {name.lower().removeprefix("faultstream_"): v for name, v in kafka.sasl_settings().items()}
    return Settings(**{**values, **changes})


def _ssl_client(kafka: SecuredKafka, with_certificate: bool) -> Settings:
    certificates = kafka.certificates
    own = {
        "kafka_ssl_certfile": str(certificates.client_cert),
        "kafka_ssl_keyfile": str(certificates.client_key),
    }
    return Settings(
        kafka_bootstrap_servers=f"127.0.0.1:{kafka.ssl_port}",
        kafka_security_protocol="SSL",
        kafka_ssl_cafile=str(certificates.ca),
        **(own if with_certificate else {}),
    )


def test_a_client_certificate_is_enough_on_the_ssl_listener(secured_kafka):
    asyncio.run(_produce(_ssl_client(secured_kafka, with_certificate=True)))


REFUSED = {
    "plain text": lambda kafka: _sasl_client(kafka, kafka_security_protocol="PLAINTEXT"),
    "wrong password": lambda kafka: _sasl_client(kafka, kafka_sasl_password="not-the-password"),
    "another user": lambda kafka: _sasl_client(kafka, kafka_sasl_username="admin"),
    "ssl without a client certificate": lambda kafka: _ssl_client(kafka, with_certificate=False),
}


@pytest.mark.parametrize("client", REFUSED.values(), ids=REFUSED.keys())
def test_a_client_without_credentials_is_refused(secured_kafka, client):
    with pytest.raises((KafkaError, OSError, asyncio.TimeoutError)):
        asyncio.run(_produce(client(secured_kafka)))


def test_the_password_is_not_in_help_or_the_settings_repr(secured_kafka):
    env = {**os.environ, **secured_kafka.sasl_settings()}
    for command in (["--help"], ["run", "--help"], ["worker", "--help"], ["load", "--help"]):
        shown = subprocess.run(
            [sys.executable, "-m", "streams", *command], env=env, capture_output=True, text=True
        )
        assert shown.returncode == 0, shown.stderr
        assert secured_kafka.password not in shown.stdout + shown.stderr
    settings = _sasl_client(secured_kafka)
    assert secured_kafka.password not in repr(settings) + str(settings.model_dump())
