"""A running ``faultstream api`` process on real Redis (and the live pipeline's fixtures)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.conftest import REPO
from tests.pipeline.conftest import pipeline, services  # noqa: F401  (fixtures for the stream tests)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class RunningApi:
    """One ``faultstream api`` process: its ports, its key prefix, and plain HTTP calls to it."""

    redis_url: str
    prefix: str
    workdir: Path
    port: int = field(default_factory=free_port)
    web_port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def web(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    def start(self) -> None:
        env = dict(
            os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
        )
        log = (self.workdir / "api.log").open("ab")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "streams",
                "api",
                "--port",
                str(self.port),
                "--web-port",
                str(self.web_port),
                "--redis-url",
                self.redis_url,
                "--prefix",
                self.prefix,
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"faultstream api exited:\n{self.log()}"
            try:
                if self.call("GET", "/v2/healthz") == (200, None):
                    return
            except OSError:
                time.sleep(0.2)
        raise AssertionError(f"faultstream api did not answer within 60 s:\n{self.log()}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=20)

    def log(self) -> str:
        path = self.workdir / "api.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    def raw(
        self, method: str, path: str, data: bytes | None = None, base: str | None = None
    ) -> tuple[int, bytes]:
        request = urllib.request.Request(f"{base or self.base}{path}", data=data, method=method)
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                return answer.status, answer.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        status, raw = self.raw(method, path, data)
        return status, json.loads(raw)

    def create(self, workload: dict[str, Any], metadata: dict[str, Any] | None = None) -> int:
        status, answer = self.call("POST", "/v2/attributor", {"workload": workload, "metadata": metadata or {}})
        assert status == 200, answer
        return answer["attributor_id"]

    def observe(self, attributor_id: int, source: str, lines: list[dict[str, Any]], **interval: str) -> int:
        context = {"source": source, **({"time_interval": interval} if interval else {})}
        status, answer = self.call(
            "POST",
            f"/v2/attributor/{attributor_id}/observation",
            {"context": context, "body": json.dumps(lines)},
        )
        assert status == 200, answer
        assert answer["model_type"] == "ObservationResponseV2"
        return answer["observation_id"]

    def attribution(self, attributor_id: int | str) -> dict[str, Any]:
        status, answer = self.call("GET", f"/v2/attributor/{attributor_id}/attribution")
        assert status == 200, answer
        assert answer["model_type"] == "AttributionResponseV2"
        return answer


def on(node: str, body: str, time: str | None = None) -> dict[str, Any]:
    """One observation line as NVIDIA's client sends it."""
    line: dict[str, Any] = {"body": body, "resources": [{"kind": "node", "hostname": node}]}
    if time:
        line["time"] = time
    return line


def delete_prefix(url: str, prefix: str) -> None:
    client = redis.Redis.from_url(url)
    try:
        keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


@pytest.fixture(scope="module")
def api(services, tmp_path_factory) -> Iterator[RunningApi]:  # noqa: F811
    running = RunningApi(services.redis, f"fsapi:{uuid.uuid4().hex[:10]}:", tmp_path_factory.mktemp("api"))
    running.start()
    yield running
    running.stop()
    delete_prefix(services.redis, running.prefix)
