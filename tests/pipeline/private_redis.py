"""A redis-server of a test's own, without persistence: stopping it disturbs nobody, and a
restart brings it back empty, as a production Redis without RDB/AOF comes back."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

__all__ = ["PrivateRedis"]


class PrivateRedis:
    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        subprocess.run(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "yes",
                "--dir",
                str(self.directory),
                "--pidfile",
                str(self.directory / "redis.pid"),
            ],
            check=True,
            capture_output=True,
        )
        for _ in range(50):
            if self._answers():
                return
            time.sleep(0.1)
        raise AssertionError("private redis-server did not start")

    def stop(self) -> None:
        """Shut it down without saving, and wait until it is gone (so the port is free again)."""
        self.cli("shutdown", "nosave")
        for _ in range(50):
            if not self._answers():
                return
            time.sleep(0.1)
        raise AssertionError("private redis-server did not stop")

    def cli(self, *command: str) -> str:
        done = subprocess.run(["redis-cli", "-p", str(self.port), *command], capture_output=True, text=True)
        return done.stdout.strip()

    def _answers(self) -> bool:
        return self.cli("ping") == "PONG"
