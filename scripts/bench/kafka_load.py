"""Helpers of the live-pipeline benchmarks: realistic ingest records, a fast preload producer,
topic and consumer-group offsets, and worker processes whose CPU time and peak memory can be read.

Record shapes are ``bench_backtest``'s (Fluent Bit / Vector JSON, Slurm jobcomp), so the live
figures compare with the backtest ones on the same workload.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.structs import TopicPartition

from scripts.bench.bench_backtest import _jobcomp, _record
from streams.settings import Settings

__all__ = [
    "REPO",
    "CpuProbe",
    "GroupProgress",
    "Message",
    "Offsets",
    "Worker",
    "bulk_producer",
    "delete_namespace_topics",
    "jobcomp_message",
    "log_messages",
    "now_ms",
    "publish",
]

REPO = Path(__file__).resolve().parents[2]
#: In-flight sends awaited together: bounds the producer's memory, keeps its batches full.
SEND_WINDOW = 20_000


@dataclass(frozen=True, slots=True)
class Message:
    topic: str  # without the namespace
    value: bytes
    key: bytes | None = None


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def log_messages(texts: Iterable[tuple[str, str, str]], t0_ms: int, step_ms: float) -> Iterator[Message]:
    """Log records for ``workload.lines`` tuples (text, source, host), event times t0 + i * step."""
    for index, (text, source, host) in enumerate(texts):
        record = _record(text, source, host, t0_ms + int(index * step_ms))
        yield Message(record["topic"], orjson.dumps(record["value"]))


def jobcomp_message(jobid: int, start_ms: int, end_ms: int, nodes: str) -> Message:
    """A Slurm jobcomp job-end record (state FAILED) keyed by job id, as slurmctld sends it."""
    record = _jobcomp(jobid, start_ms, end_ms, nodes)
    return Message(record["topic"], orjson.dumps(record["value"]), record["key"].encode())


async def publish(producer: AIOKafkaProducer, settings: Settings, messages: Iterable[Message]) -> int:
    """Send and wait for every acknowledgement. Keyless records go round-robin over the
    partitions (cheaper than the default partitioner and perfectly even); the Kafka timestamp is
    the send time, so broker retention never sees the workload's old event times."""
    pending: list[asyncio.Future] = []
    sent = 0
    for sent, message in enumerate(messages, start=1):
        partition = None if message.key is not None else sent % settings.partitions
        topic = settings.topic(message.topic)
        pending.append(await producer.send(topic, message.value, key=message.key, partition=partition))
        if len(pending) >= SEND_WINDOW:
            await asyncio.gather(*pending)
            pending.clear()
    await asyncio.gather(*pending)
    return sent


def bulk_producer(settings: Settings) -> AIOKafkaProducer:
    return AIOKafkaProducer(acks="all", linger_ms=20, max_batch_size=1 << 20, **settings.aiokafka_options())


class Offsets:
    """End offsets of topics and a consumer group's committed offsets, summed over partitions."""

    def __init__(self, settings: Settings) -> None:
        self.partitions = settings.partitions
        self.admin = AIOKafkaAdminClient(**settings.aiokafka_options())
        self.consumer = AIOKafkaConsumer(**settings.aiokafka_options())  # no group: reads metadata only

    async def __aenter__(self) -> Offsets:
        await self.admin.start()
        await self.consumer.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.consumer.stop()
        await self.admin.close()

    async def written(self, topics: Iterable[str]) -> int:
        parts = [TopicPartition(t, p) for t in topics for p in range(self.partitions)]
        return sum((await self.consumer.end_offsets(parts)).values())

    async def committed(self, group_id: str, topics: Iterable[str]) -> int:
        wanted = set(topics)
        offsets = await self.admin.list_consumer_group_offsets(group_id)
        return sum(o.offset for tp, o in offsets.items() if tp.topic in wanted and o.offset > 0)


class GroupProgress(Offsets):
    """How far one consumer group has committed through some topics."""

    def __init__(self, settings: Settings, group_id: str, topics: Iterable[str]) -> None:
        super().__init__(settings)
        self.group_id = group_id
        self.topics = list(topics)

    async def __aenter__(self) -> GroupProgress:
        await super().__aenter__()
        return self

    async def done(self) -> int:
        return await self.committed(self.group_id, self.topics)

    async def wait_for(
        self,
        total: int,
        alive: Callable[[], None],
        cpu: CpuProbe | None = None,
        poll_s: float = 0.05,
        timeout_s: float = 600.0,
    ) -> Span:
        """Poll until ``total`` records are committed; the span runs from the first commit seen.
        ``alive`` raises when the consumer's process died (no point waiting for it then)."""
        deadline = time.monotonic() + timeout_s
        first: tuple[float, int, tuple[float, float]] | None = None
        while True:
            alive()
            done, at = await self.done(), time.monotonic()
            if done and first is None:
                first = (at, done, cpu() if cpu else (0.0, 0.0))
            if done >= total:
                assert first is not None
                used = cpu.since(first[2]) if cpu else (0.0, 0.0)
                return Span(first[0], at, first[1], done, used)
            if at > deadline:
                msg = f"{self.group_id}: only {done:,} of {total:,} records committed after {timeout_s:.0f}s"
                raise TimeoutError(msg)
            await asyncio.sleep(poll_s)


@dataclass(frozen=True)
class Span:
    """Progress between two observations (monotonic seconds, cumulative record counts)."""

    start: float
    end: float
    start_count: int
    end_count: int
    cpu_s: tuple[float, float] = (0.0, 0.0)  # CPU seconds used in the span: (worker, broker)

    @property
    def records(self) -> int:
        return self.end_count - self.start_count

    @property
    def seconds(self) -> float:
        return self.end - self.start


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a live process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def broker_pid() -> int | None:
    """The Kafka broker's JVM when it runs on this machine: it shares the cores being measured."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if b"kafka.Kafka\0" in (entry / "cmdline").read_bytes():
                    return int(entry.name)
            except OSError:
                continue
    return None


class CpuProbe:
    """CPU seconds of one process and of the local broker (0 when the broker is elsewhere)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.broker = broker_pid()

    def __call__(self) -> tuple[float, float]:
        return cpu_seconds(self.pid), cpu_seconds(self.broker) if self.broker else 0.0

    def since(self, mark: tuple[float, float]) -> tuple[float, float]:
        now = self()
        return now[0] - mark[0], now[1] - mark[1]


@dataclass
class Worker:
    """One benchmarked process, its log file, and its peak resident memory."""

    name: str
    process: subprocess.Popen
    log: Path
    started: float  # monotonic
    started_wall: float  # time.time(), to compare with times other processes report

    @classmethod
    def spawn(cls, name: str, argv: list[str], env: dict[str, str], workdir: Path) -> Worker:
        # Own working directory: faust writes its data directory there, not in the repository.
        run_dir = workdir / name
        run_dir.mkdir(parents=True, exist_ok=True)
        log = workdir / f"{name}.log"
        full_env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1", **env}
        with log.open("ab") as out:
            process = subprocess.Popen(
                [sys.executable, *argv], cwd=run_dir, env=full_env, stdout=out, stderr=subprocess.STDOUT
            )
        return cls(name, process, log, time.monotonic(), time.time())

    def peak_rss_mb(self) -> float:
        """VmHWM: the high-water mark of resident memory (read while the process still lives)."""
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        kib = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:"))
        return kib / 1024

    def check_alive(self) -> None:
        if self.process.poll() is not None:
            msg = f"{self.name} exited with {self.process.returncode}:\n{self.tail()}"
            raise RuntimeError(msg)

    def tail(self, chars: int = 3000) -> str:
        """The end of the log (without reading a DEBUG log of many megabytes whole)."""
        with self.log.open("rb") as handle:
            handle.seek(max(0, self.log.stat().st_size - chars))
            return handle.read().decode(errors="replace")

    def stop(self, timeout_s: float = 30.0) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


async def delete_namespace_topics(settings: Settings) -> int:
    """Delete every topic whose name starts with the namespace (ours and faust's own)."""
    if not settings.namespace:
        raise ValueError("refusing to delete topics without a namespace: that would be all of them")
    admin = AIOKafkaAdminClient(**settings.aiokafka_options())
    await admin.start()
    try:
        names = [t for t in await admin.list_topics() if t.startswith(settings.namespace)]
        if names:
            await admin.delete_topics(names)
        return len(names)
    finally:
        await admin.close()
