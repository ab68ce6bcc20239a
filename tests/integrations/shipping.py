"""Real shippers around a test's pipeline: rsyslog tailing files into Kafka, the Slurm event
script publishing job records, and a wait for the verdicts they lead to."""

from __future__ import annotations

import asyncio
import glob
import importlib.util
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

from sinks.redis_reader import recent_verdicts
from tests.conftest import REPO


def _deploy_renderer() -> ModuleType:
    """deploy/render.py, which ships as a file beside the configs, not as a module."""
    spec = importlib.util.spec_from_file_location("faultstream_deploy_render", REPO / "deploy" / "render.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


render_file = _deploy_renderer().render_file

RSYSLOG_CONF = REPO / "deploy" / "rsyslog" / "faultstream.conf"
SLURM_EVENT_SCRIPT = REPO / "deploy" / "slurm" / "faultstream-slurm-event.py"
HOST = socket.gethostname()


def missing_shippers() -> list[str]:
    """What the rsyslog tests need and this machine lacks (scripts/install-integrations.sh)."""
    missing = [program for program in ("rsyslogd", "kcat") if shutil.which(program) is None]
    if not glob.glob("/usr/lib*/rsyslog/omkafka.so") + glob.glob("/usr/lib/*/rsyslog/omkafka.so"):
        missing.append("rsyslog-kafka (omkafka)")
    return missing


def rfc3339_now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


@dataclass
class Rsyslog:
    """rsyslogd in the foreground with the rendered deploy config, tailing files of its own."""

    workdir: Path
    kafka: str
    namespace: str

    def __post_init__(self) -> None:
        self.root = self.workdir / "rsyslog"
        (self.root / "state").mkdir(parents=True, exist_ok=True)
        self.jobs_dir = self.root / "jobs"
        self.jobs_dir.mkdir(exist_ok=True)
        self.kern_log, self.syslog = self.root / "kern.log", self.root / "syslog"
        self.slurm_log = self.root / "slurmctld.log"
        for path in (self.kern_log, self.syslog, self.slurm_log):
            path.touch()
        self.conf = self.root / "faultstream.conf"
        self.process: subprocess.Popen | None = None

    def render(self, slurm_logs: str | None = None) -> Path:
        values = {
            "BROKERS": self.kafka,
            "TOPIC_PREFIX": self.namespace,
            "WORKDIR": str(self.root / "state"),
            "KERN_LOG": str(self.kern_log),
            "SYSLOG": str(self.syslog),
            "SLURM_LOGS": slurm_logs or str(self.root / "slurm*.log"),
            "JOB_OUTPUT_GLOB": str(self.jobs_dir / "*.out"),
        }
        render_file(RSYSLOG_CONF, self.conf, values)
        return self.conf

    def start(self, slurm_logs: str | None = None) -> None:
        self.render(slurm_logs)
        log = (self.root / "rsyslogd.log").open("ab")
        pidfile = self.root / "rsyslogd.pid"
        self.process = subprocess.Popen(
            ["rsyslogd", "-n", "-f", str(self.conf), "-i", str(pidfile)], stdout=log, stderr=subprocess.STDOUT
        )

    def append(self, path: Path, *lines: str) -> None:
        with path.open("a") as out:
            out.writelines(line + "\n" for line in lines)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def log(self) -> str:
        path = self.root / "rsyslogd.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""


def render_slurm_event_script(target: Path, kafka: str, namespace: str, slurm_conf: Path | None = None) -> Path:
    values = {
        "BROKERS": kafka,
        "TOPIC_PREFIX": namespace,
        "SLURM_CONF": str(slurm_conf or "/etc/slurm/slurm.conf"),
    }
    render_file(SLURM_EVENT_SCRIPT, target, values)
    return target


def run_slurm_event_script(script: Path, slurm_env: dict[str, str]) -> None:
    """Run the script as Slurm does: only Slurm's variables and a plain PATH."""
    env = {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", **slurm_env}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def wait_for(
    redis_url: str, prefix: str, done: Callable[[dict[str, dict]], bool], timeout_s: float = 90.0
) -> dict[str, dict]:
    """Latest revision per workload from Redis, once ``done`` holds for them (or at the timeout)."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = {v["workload_id"]: v for v in asyncio.run(recent_verdicts(redis_url, prefix, 1000))}
        if done(got) or time.monotonic() > deadline:
            return got
        time.sleep(0.5)
