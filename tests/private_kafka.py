"""A Kafka broker of one test module's own (``scripts/kafka.sh`` with its own state and free
ports), so a test can stop, pause or starve it without touching the shared broker on :9092."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from tests.conftest import REPO
from tests.secured import free_port

__all__ = ["PrivateKafka"]

KAFKA_SH = REPO / "scripts" / "kafka.sh"


class PrivateKafka:
    """``start`` formats (first time) and launches the broker and waits until it answers;
    ``stop`` ends it (TERM), keeping its data, so a second ``start`` is a broker restart."""

    def __init__(self, root: Path, port: int | None = None, env: dict[str, str] | None = None) -> None:
        self.root = root
        self.port = port or free_port()
        self.env = {
            **os.environ,
            "FAULTSTREAM_STATE": str(root / "state"),
            "KAFKA_PORT": str(self.port),
            "KAFKA_CONTROLLER_PORT": str(free_port()),
            **(env or {}),
        }

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def state_dir(self) -> Path:
        return self.root / "state" / "kafka"

    @property
    def data_dir(self) -> Path:
        """``log.dirs`` (the KRaft metadata log lives there too)."""
        return self.state_dir / "data"

    @property
    def server_log(self) -> Path:
        return self.state_dir / "logs" / "server.log"

    def start(self, wait_s: int = 90) -> tuple[subprocess.CompletedProcess, subprocess.CompletedProcess]:
        """Launch and wait until the broker answers; returns both steps (what they printed)."""
        started = self._script("start", timeout=600)
        assert started.returncode == 0, started.stderr[-3000:]
        ready = self._script("wait", str(wait_s), timeout=wait_s + 30)
        assert ready.returncode == 0, ready.stderr[-3000:]
        return started, ready

    def stop(self) -> None:
        self._script("stop", timeout=120)

    def pid(self) -> int | None:
        try:
            pid = int((self.state_dir / "kafka.pid").read_text().strip())
            os.kill(pid, 0)
        except (OSError, ValueError):
            return None
        return pid

    def pause(self) -> None:
        """SIGSTOP: the broker keeps its sockets open and answers nothing (a GC pause, a hung disk)."""
        pid = self.pid()
        assert pid is not None, "the private broker is not running"
        os.kill(pid, signal.SIGSTOP)

    def resume(self) -> None:
        pid = self.pid()
        assert pid is not None, "the private broker is not running"
        os.kill(pid, signal.SIGCONT)

    def logs(self) -> str:
        return self._script("logs", "80", timeout=30).stdout

    def _script(self, *args: str, timeout: float) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["bash", str(KAFKA_SH), *args], env=self.env, capture_output=True, text=True, timeout=timeout
        )
