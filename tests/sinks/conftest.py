"""Real Redis for sink tests: ``REDIS_URL`` if set, else the one ``scripts/redis.sh`` runs."""

from __future__ import annotations

import os
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from tests.conftest import REPO

REDIS_SH = REPO / "scripts" / "redis.sh"
LOCAL_URL = "redis://127.0.0.1:6379/0"


def _answers(url: str) -> bool:
    # No client-side retries: a refused connection must answer False at once.
    client = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1, retry=Retry(NoBackoff(), 0))
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False
    finally:
        client.close()


def _script(*args: str) -> None:
    subprocess.run(["bash", str(REDIS_SH), *args], check=True, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """Stop the local Redis at the end only if this session started it."""
    if os.environ.get("REDIS_URL"):
        yield os.environ["REDIS_URL"]
        return
    started = not _answers(LOCAL_URL)
    if started:
        _script("start")
        _script("wait", "30")
    try:
        yield LOCAL_URL
    finally:
        if started:
            _script("stop")


@pytest.fixture
def prefix(redis_url: str) -> Iterator[str]:
    """A key prefix no other test (or run) uses; every key under it is deleted afterwards."""
    name = f"fstest:{uuid.uuid4().hex[:12]}:"
    yield name
    _delete_prefix(redis_url, name)


def _delete_prefix(url: str, name: str) -> None:
    client = redis.Redis.from_url(url)
    try:
        keys = list(client.scan_iter(match=f"{name}*", count=1000))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


@pytest.fixture
def db(redis_url: str) -> Iterator[redis.Redis]:
    """A plain synchronous client to look at what the sink wrote."""
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    yield client
    client.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ThrowawayRedis:
    """A second, private redis-server this test may stop and start at will."""

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.workdir = workdir
        self.pidfile = workdir / "redis.pid"
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        subprocess.run(
            [
                "redis-server",
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "yes",
                "--pidfile",
                str(self.pidfile),
                "--dir",
                str(self.workdir),
                "--logfile",
                str(self.workdir / "redis.log"),
            ],
            check=True,
            stdin=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while not _answers(self.url):
            assert time.monotonic() < deadline, "throwaway redis-server did not answer"
            time.sleep(0.05)

    def shutdown(self) -> None:
        client = redis.Redis.from_url(self.url)
        try:
            client.shutdown(nosave=True)
        finally:
            client.close()
        deadline = time.monotonic() + 10
        while _answers(self.url):
            assert time.monotonic() < deadline, "throwaway redis-server did not stop"
            time.sleep(0.05)

    def kill(self) -> None:
        """Teardown: stop it by the pid it wrote, whatever state the test left it in."""
        if not self.pidfile.exists():
            return
        pid = int(self.pidfile.read_text().strip())
        comm = Path(f"/proc/{pid}/comm")
        if not comm.exists() or not comm.read_text().startswith("redis-server"):
            return  # already gone, and the pid may belong to someone else now
        try:
            os.kill(pid, 15)
        except ProcessLookupError:
            return


@pytest.fixture
def throwaway_redis(tmp_path: Path) -> Iterator[ThrowawayRedis]:
    server = ThrowawayRedis(tmp_path)
    server.start()
    yield server
    server.kill()
