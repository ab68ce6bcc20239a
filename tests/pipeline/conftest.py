"""Real Kafka and Redis for the live-pipeline tests, and a way to run workers as processes.

Services, in this order: ``KAFKA_BOOTSTRAP_SERVERS`` / ``REDIS_URL`` from the environment; else
testcontainers' Kafka and Redis when a Docker engine answers; else the project's own scripts
(``scripts/services.sh``), which start Apache Kafka in KRaft mode and Debian's redis-server.
Every test gets its own topic namespace and Redis key prefix.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import REPO


@dataclass(frozen=True)
class Services:
    kafka: str
    redis: str


def _docker_answers() -> bool:
    if shutil.which("docker") is None:
        return False
    return subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode == 0


@pytest.fixture(scope="session")
def services() -> Iterator[Services]:
    if os.environ.get("KAFKA_BOOTSTRAP_SERVERS") and os.environ.get("REDIS_URL"):
        yield Services(os.environ["KAFKA_BOOTSTRAP_SERVERS"], os.environ["REDIS_URL"])
        return
    if _docker_answers():
        yield from _testcontainers()
        return
    yield from _local_scripts()


def _testcontainers() -> Iterator[Services]:
    from testcontainers.kafka import KafkaContainer
    from testcontainers.redis import RedisContainer

    with KafkaContainer().with_kraft() as kafka, RedisContainer() as redis:
        url = f"redis://{redis.get_container_host_ip()}:{redis.get_exposed_port(6379)}/0"
        yield Services(kafka.get_bootstrap_server(), url)


def _local_scripts() -> Iterator[Services]:
    script = REPO / "scripts" / "services.sh"
    already = subprocess.run(["bash", str(script), "status"], capture_output=True).returncode == 0
    started = subprocess.run(["bash", str(script), "start"], capture_output=True, text=True, timeout=600)
    if started.returncode != 0:
        pytest.fail(f"could not start Kafka and Redis:\n{started.stderr[-3000:]}")
    exports = dict(line.removeprefix("export ").split("=", 1) for line in started.stdout.split("\n") if line)
    yield Services(exports["KAFKA_BOOTSTRAP_SERVERS"], exports["REDIS_URL"])
    if not already:
        subprocess.run(["bash", str(script), "stop"], capture_output=True, timeout=120)


@dataclass
class Pipeline:
    """Worker processes of one test, with their own namespace, prefix and log files."""

    services: Services
    workdir: Path
    namespace: str
    grace_s: float = 2.0
    redis_url: str | None = None
    overrides: dict[str, str] = field(default_factory=dict)  # environment for the next workers

    def __post_init__(self) -> None:
        self.processes: list[tuple[str, subprocess.Popen]] = []

    @property
    def prefix(self) -> str:
        return f"{self.namespace}"

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            {
                "KAFKA_BOOTSTRAP_SERVERS": self.services.kafka,
                "REDIS_URL": self.redis_url or self.services.redis,
                "FAULTSTREAM_NAMESPACE": self.namespace,
                "FAULTSTREAM_REDIS_PREFIX": self.prefix,
                "FAULTSTREAM_GRACE_S": str(self.grace_s),
                "FAULTSTREAM_TAIL_S": str(self.grace_s),
                "FAULTSTREAM_PARTITIONS": "4",
                "FAULTSTREAM_TICK_INTERVAL_S": "0.5",
                # scaled down with the grace: an ingest partition quiet this long stops holding
                # event time back (the default 10 s would add that to every test's last verdict)
                "FAULTSTREAM_IDLE_PARTITION_S": "3",
                "FAULTSTREAM_SESSION_TIMEOUT_S": "10",
                "PYTHONUNBUFFERED": "1",
                # the workers run the code under test, whatever else is installed
                "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
            }
        )
        env.update(self.overrides)
        return env

    def start(self, *command: str, name: str, defaults: dict[str, str] | None = None) -> subprocess.Popen:
        log = (self.workdir / f"{name}.log").open("ab")
        run_dir = self.workdir / name
        run_dir.mkdir(exist_ok=True)
        process = subprocess.Popen(
            [sys.executable, "-m", "streams", *command],
            cwd=run_dir,
            env={**(defaults or {}), **self.env()},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self.processes.append((name, process))
        return process

    def extractor(self, name: str = "extractor") -> subprocess.Popen:
        # its name is its instance id (its Kafka transactional id) unless the test sets one:
        # two extractors of one id would fence each other
        return self.start("worker", "extractor", name=name, defaults={"FAULTSTREAM_EXTRACTOR_ID": name})

    def correlator(self, name: str = "correlator") -> subprocess.Popen:
        level = os.environ.get("FS_TEST_LOG", "INFO")  # DEBUG logs every node report
        return self.start("worker", "correlator", "--log-level", level, name=name)

    def load(self, *recordings: Path, speed: float | None = None) -> None:
        pace = ["--speed", str(speed)] if speed else []
        subprocess.run(
            [sys.executable, "-m", "streams", "load", *pace, *map(str, recordings)],
            env=self.env(),
            check=True,
            capture_output=True,
            timeout=300,
        )

    def logs(self) -> str:
        return "\n".join(
            f"== {p.name}\n{p.read_text(errors='replace')[-4000:]}" for p in self.workdir.glob("*.log")
        )

    def stop(self) -> None:
        for _, process in self.processes:
            if process.poll() is None:
                process.terminate()
        for _, process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture
def pipeline(services, tmp_path) -> Iterator[Pipeline]:
    running = Pipeline(services, tmp_path, f"t{uuid.uuid4().hex[:8]}.")
    yield running
    running.stop()
