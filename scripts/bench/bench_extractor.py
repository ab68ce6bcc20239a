"""The live extractor on a real Kafka, side by side with a plain faust per-event agent doing the
same work and with a consumer that does no work at all; then job-end → verdict latency with the
extractor busy and a correlator running.

    python -m scripts.bench.bench_extractor [--lines 1000000] [--latency-lines 1000000]

Rates are over each process's own progress, from its first committed batch (or first event) to
its last, so start-up (imports, rule database, group join) is left out and shown on its own;
"CPU %" is the process's and the local broker's CPU time over that span (100 = one core).

Every run gets its own topic namespace (``bench<random>.``), consumer groups and Redis prefix,
so runs never see each other's records; the records themselves are deterministic. Kafka and Redis
come from ``KAFKA_BOOTSTRAP_SERVERS`` / ``REDIS_URL``, else from ``scripts/services.sh`` (started,
and stopped again at the end, only if they were not running).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import math
import os
import re
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from scripts.bench.bench_backtest import T0
from scripts.bench.kafka_load import (
    REPO,
    CpuProbe,
    GroupProgress,
    Message,
    Worker,
    bulk_producer,
    delete_namespace_topics,
    jobcomp_message,
    log_messages,
    now_ms,
    publish,
)
from scripts.bench.workload import lines
from streams.admin import ensure_topics
from streams.settings import Settings, load_settings
from streams.topics import Topics

TARGET_RATE = 150_000  # lines/s per extractor process
TARGET_RATIO = 10.0  # extractor / faust per-event agent
TARGET_RSS_MB = 500.0
LATENCY_SLACK_S = 1.0  # p99 job end → verdict ≤ grace + this
GRACE_S = 2.0
LOADED_JOBS = 700_000  # job ids of the job ends sent under load
IDLE_JOBS = 800_000  # ... and of those sent once the pipeline has caught up
IDLE_JOBS_COUNT = 10
FAUST_MAX_S = 180.0  # longer than this for all records: the faust agent gets a time-boxed prefix
REPLAY_SPAN_MS = 3 * 3600 * 1000  # bench_backtest's event-time span for its lines
BENCH_JOBS = 64  # jobcomp records in the preload, as in bench_backtest
STATS = re.compile(r"extractor stopped: ExtractorStats\((.*?)\)$", re.MULTILINE)


# ---------------------------------------------------------------------------------------------
# Results and printing


@dataclass
class StageResult:
    stage: str
    lines: int  # lines in the measured span
    seconds: float
    startup_s: float  # process start → first progress seen (imports, group join, rule database)
    rss_mb: float
    note: str = ""
    cpu_s: tuple[float, float | None] | None = None  # CPU seconds in the span: (process, broker)

    @property
    def rate(self) -> float:
        return self.lines / self.seconds if self.seconds > 0 else 0.0

    def cpu_percent(self) -> str:
        """Share of one core used in the span by the process / by the broker (2 cores = 200 %)."""
        if self.cpu_s is None or self.seconds <= 0:
            return "-"
        worker, broker = self.cpu_s
        shown = f"{100 * broker / self.seconds:.0f}" if broker is not None else "-"
        return f"{100 * worker / self.seconds:.0f} / {shown}"


@dataclass
class JobSent:
    jobid: int
    end_s: int  # @end, whole seconds as Slurm writes it
    produced: float  # wall clock just before the send
    extractor_lag: int = 0  # ingest records not yet committed by the extractor at that moment
    verdict_at: float | None = None


@dataclass
class LatencyResult:
    jobs: list[JobSent]  # produced while the extractor worked through the backlog
    idle_jobs: list[JobSent]  # produced after the pipeline had caught up
    backlog: int
    live_rate: int
    spread_s: float
    drained_after_s: float | None  # first job publish → the extractor's backlog gone
    extractor_rss_mb: float
    correlator_rss_mb: float
    notes: list[str] = field(default_factory=list)


def _pass(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def print_table(rows: list[StageResult], extractor: StageResult, faust: StageResult) -> None:
    print(
        f"{'stage':<48}{'lines':>11}{'seconds':>9}{'lines/s':>10}{'start-up s':>12}"
        f"{'CPU % proc/broker':>19}{'peak RSS MB':>13}"
    )
    for row in rows:
        print(
            f"{row.stage:<48}{row.lines:>11,}{row.seconds:>9.2f}{row.rate:>10,.0f}"
            f"{row.startup_s:>12.1f}{row.cpu_percent():>19}{row.rss_mb:>13.0f}"
        )
        if row.note:
            print(f"{'':<4}{row.note}")
    ratio = extractor.rate / faust.rate if faust.rate else math.inf
    print()
    print(f"{'target':<34}{'measured':>14}{'':>4}result")
    checks = [
        (f"extractor ≥ {TARGET_RATE:,} lines/s", f"{extractor.rate:,.0f}", extractor.rate >= TARGET_RATE),
        (f"extractor ≥ {TARGET_RATIO:.0f}x faust per-event", f"{ratio:.1f}x", ratio >= TARGET_RATIO),
        (
            f"extractor peak RSS < {TARGET_RSS_MB:.0f} MB",
            f"{extractor.rss_mb:.0f} MB",
            extractor.rss_mb < TARGET_RSS_MB,
        ),
    ]
    for label, value, ok in checks:
        print(f"{label:<34}{value:>14}{'':>4}{_pass(ok)}")


def percentile(values: list[float], p: float) -> float:
    """Nearest rank: with 50 samples p99 is the largest, as it should be for a tail bound."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p * len(ordered)) - 1)]


def _drained(after_s: float | None) -> str:
    if after_s is None:
        return "the backlog never drained"
    if after_s <= 0:
        return f"the backlog drained {-after_s:.1f} s BEFORE the first job end (not under load)"
    return f"the backlog drained {after_s:.1f} s after the first job end"


def _print_percentiles(label: str, seconds: list[float]) -> None:
    target = GRACE_S + LATENCY_SLACK_S
    p50, p99 = percentile(seconds, 0.50), percentile(seconds, 0.99)
    print(
        f"  {label:<38}p50 {p50:5.2f} s  p99 {p99:5.2f} s  max {max(seconds):5.2f} s   "
        f"target p99 ≤ {target:.1f} s: {_pass(p99 <= target)}"
    )


def print_latency(result: LatencyResult, details: bool) -> None:
    done = [j for j in result.jobs if j.verdict_at is not None]
    lags = sorted(j.extractor_lag for j in result.jobs)
    print()
    print(
        f"latency under load: {len(result.jobs)} Slurm job-end records over {result.spread_s:.0f} s; "
        f"extractor backlog {result.backlog:,} lines, live producer {result.live_rate:,} lines/s"
    )
    print(
        f"  extractor lag when a job-end was produced: min {lags[0]:,}, median {lags[len(lags) // 2]:,}, "
        f"max {lags[-1]:,} records; {_drained(result.drained_after_s)}"
    )
    print(
        f"  peak RSS under load: extractor {result.extractor_rss_mb:.0f} MB, "
        f"correlator {result.correlator_rss_mb:.0f} MB"
    )
    if not done:
        print("  no verdict arrived")
        return
    for label, start in (("produced", lambda j: j.produced), ("@end", lambda j: float(j.end_s))):
        _print_percentiles(f"job-end {label:<9}→ verdict in Redis:", [j.verdict_at - start(j) for j in done])
    idle = [j.verdict_at - j.produced for j in result.idle_jobs if j.verdict_at is not None]
    if idle:
        _print_percentiles(f"caught up, {len(result.idle_jobs)} more job ends:", idle)
    if len(done) < len(result.jobs):
        print(f"  {len(result.jobs) - len(done)} of {len(result.jobs)} verdicts never arrived")
    for note in result.notes:
        print(f"  {note}")
    if details:
        for job in result.jobs + result.idle_jobs:
            arrived = f"{job.verdict_at - job.produced:6.2f} s" if job.verdict_at else "never"
            print(
                f"    job {job.jobid} @end {time.strftime('%H:%M:%S', time.gmtime(job.end_s))}Z "
                f"sent +{job.produced - job.end_s:.3f} s, lag {job.extractor_lag:,}, verdict after {arrived}"
            )


# ---------------------------------------------------------------------------------------------
# Services and per-run context


def ensure_services() -> Callable[[], None] | None:
    """Point KAFKA_BOOTSTRAP_SERVERS / REDIS_URL at running services; returns how to stop the
    ones this run started (None when they were already up or are external)."""
    if os.environ.get("KAFKA_BOOTSTRAP_SERVERS") and os.environ.get("REDIS_URL"):
        return None
    script = REPO / "scripts" / "services.sh"
    already = subprocess.run(["bash", str(script), "status"], capture_output=True).returncode == 0
    started = subprocess.run(["bash", str(script), "start"], capture_output=True, text=True, check=True)
    for line in started.stdout.splitlines():
        if line.startswith("export "):
            name, _, value = line.removeprefix("export ").partition("=")
            os.environ[name] = value
    if already:
        return None
    return lambda: subprocess.run(["bash", str(script), "stop"], capture_output=True, check=False)


@dataclass
class Run:
    settings: Settings
    workdir: Path
    records: int = 0  # ingest records published

    @property
    def namespace(self) -> str:
        return self.settings.namespace

    @property
    def ingest(self) -> list[str]:
        return list(Topics.from_settings(self.settings).ingest)

    def env(self, **extra: str) -> dict[str, str]:
        return {"FAULTSTREAM_NAMESPACE": self.namespace, **extra}

    def spawn(self, name: str, argv: list[str], **extra_env: str) -> Worker:
        return Worker.spawn(name, argv, self.env(**extra_env), self.workdir)

    def spawn_role(self, name: str, role: str, *args: str) -> Worker:
        argv = ["-m", "scripts.bench.bench_extractor", "--role", role, "--namespace", self.namespace, *args]
        return self.spawn(name, argv)


# ---------------------------------------------------------------------------------------------
# Preload


def preload_messages(count: int, span_ms: int) -> Iterator[Message]:
    """bench_backtest's workload: ``count`` lines over ``span_ms`` of event time from 256 nodes,
    and 64 jobs of 4 nodes ending in that span."""
    yield from log_messages(lines(count), T0, span_ms / count)
    for job in range(BENCH_JOBS):
        start = T0 - 3600_000 + job * span_ms // BENCH_JOBS
        first = (job * 4) % 256
        yield jobcomp_message(9000 + job, start, start + 3600_000, f"gpu[{first:04d}-{first + 3:04d}]")


async def preload(run: Run, messages: Iterator[Message]) -> float:
    await ensure_topics(run.settings)
    producer = bulk_producer(run.settings)
    await producer.start()
    started = time.perf_counter()
    try:
        run.records += await publish(producer, run.settings, messages)
    finally:
        await producer.stop()
    return time.perf_counter() - started


# ---------------------------------------------------------------------------------------------
# Stage 1: a consumer that does nothing (runs as a child process under --role plain-consumer)


async def plain_consumer(settings: Settings, expected: int) -> None:
    """getmany with the extractor's fetch settings, counting only; prints one JSON line."""
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(
        *Topics.from_settings(settings).ingest,
        group_id=f"{settings.namespace}bench-plain",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        max_partition_fetch_bytes=8 << 20,
        fetch_max_bytes=64 << 20,
        **settings.aiokafka_options(),
    )
    await consumer.start()
    count, first = 0, None
    try:
        while count < expected:
            fetched = await consumer.getmany(timeout_ms=settings.batch_timeout_ms, max_records=5000)
            got = sum(len(batch) for batch in fetched.values())
            count += got
            if got and first is None:  # like the extractor's span: from the first batch done
                first = (time.monotonic(), count, time.process_time())
    finally:
        await consumer.stop()
    assert first is not None
    span = {
        "first": first[0],
        "first_count": first[1],
        "last": time.monotonic(),
        "count": count,
        "cpu_s": time.process_time() - first[2],
    }
    print("RESULT " + orjson.dumps(span).decode(), flush=True)


async def measure_plain(run: Run) -> StageResult:
    worker = run.spawn_role("plain-consumer", "plain-consumer", "--expect", str(run.records))
    rss = 0.0
    while worker.process.poll() is None:  # the child exits by itself once it has read everything
        with contextlib.suppress(OSError, StopIteration):
            rss = max(rss, worker.peak_rss_mb())
        await asyncio.sleep(0.05)
    line = next((x for x in worker.tail().splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        raise RuntimeError(f"plain consumer failed:\n{worker.tail()}")
    span = orjson.loads(line.removeprefix("RESULT "))
    return StageResult(
        "plain aiokafka getmany, no work (upper bound)",
        span["count"] - span["first_count"],
        span["last"] - span["first"],
        span["first"] - worker.started,
        rss,
        cpu_s=(span["cpu_s"], None),
    )


# ---------------------------------------------------------------------------------------------
# Stage 2: the extractor worker


async def measure_extractor(run: Run, label: str) -> StageResult:
    worker = run.spawn("extractor", ["-m", "streams", "worker", "extractor"])
    topics = Topics.from_settings(run.settings)
    try:
        async with GroupProgress(run.settings, f"{run.namespace}faultstream-extractor", run.ingest) as group:
            cpu = CpuProbe(worker.process.pid)
            span = await group.wait_for(run.records, alive=worker.check_alive, cpu=cpu)
            rss = worker.peak_rss_mb()
            # What it sent on: every one of these is an event for the per-event correlator.
            node = await group.written([topics.node_events])
            work = await group.written([topics.workload_events])
    finally:
        worker.stop()
    stats = STATS.search(worker.tail(20_000))
    busy = re.search(r"batches=(\d+).*seconds_busy=([\d.]+)", stats.group(1)) if stats else None
    notes = [
        f"wrote {node:,} node-events + {work:,} workload-events records "
        f"({(node + work) / run.records * 1000:,.0f} per 1,000 lines)",
        f"{busy.group(1)} batches, busy {float(busy.group(2)):.2f} s" if busy else "no stats line in its log",
    ]
    startup = span.start - worker.started
    return StageResult(label, span.records, span.seconds, startup, rss, "; ".join(notes), span.cpu_s)


# ---------------------------------------------------------------------------------------------
# Stage 3: a plain faust per-event agent doing the same work (child process, --role faust-agent)


def faust_agent(settings: Settings, progress_path: Path) -> None:
    """A minimal faust app: per event decode, normalize, extract, send each symptom."""
    import faust

    from extractors.loader import load_ruleset
    from extractors.matchers import HyperscanMatcher
    from streams.normalize import normalize_record

    topics = Topics.from_settings(settings)
    matcher = HyperscanMatcher(load_ruleset(), settings.matcher_cache_dir)
    app = faust.App(
        f"{settings.namespace}bench-faust-agent",
        broker=f"kafka://{settings.kafka_bootstrap_servers}",
        store="memory://",
        web_enabled=False,
        topic_partitions=settings.partitions,
        consumer_auto_offset_reset="earliest",
    )
    ingest = app.topic(*topics.ingest, key_serializer="raw", value_serializer="raw")
    out = app.topic(settings.topic("bench.faust-symptoms"), key_serializer="raw", value_serializer="raw")
    progress = {"records": 0, "lines": 0, "symptoms": 0, "first": 0.0, "last": 0.0}

    @app.agent(ingest)
    async def extract(stream: faust.StreamT) -> None:
        async for value in stream:
            message = stream.current_event.message  # type: ignore[union-attr]
            progress["first"] = progress["first"] or time.time()
            origin = f"{message.topic}:{message.partition}:{message.offset}"
            key = message.key.decode() if message.key else None
            normalized = normalize_record(
                message.topic, orjson.loads(value), key, int(message.timestamp * 1000), origin, topics.ingest
            )
            symptoms = matcher.extract_batch(normalized.lines)
            for symptom in symptoms:
                await out.send(key=(symptom.node or "").encode(), value=orjson.dumps(symptom.to_dict()))
            progress["records"] += 1
            progress["lines"] += len(normalized.lines)
            progress["symptoms"] += len(symptoms)
            progress["last"] = time.time()

    @app.timer(interval=0.2)
    async def report() -> None:  # the parent reads this file: a commit-offset poll is too coarse
        scratch = progress_path.with_suffix(".tmp")
        scratch.write_bytes(orjson.dumps(progress))
        scratch.replace(progress_path)

    faust.Worker(app, loglevel="info").execute_from_commandline()


def _time_boxed(progress: dict, total: int, time_box_s: float) -> bool:
    """Stop at the time box only when reading everything would take over FAUST_MAX_S."""
    elapsed = time.time() - progress["first"]
    projected = elapsed * total / max(progress["records"], 1)
    return elapsed >= time_box_s and projected > FAUST_MAX_S


async def _follow_progress(
    worker: Worker, path: Path, total: int, time_box_s: float
) -> tuple[dict, tuple[float, float]]:
    """The agent's progress once it has read ``total`` records or ran for ``time_box_s``, and
    the CPU seconds (agent, broker) used since its progress was first seen."""
    progress: dict = {"first": 0.0}
    cpu, mark = CpuProbe(worker.process.pid), None
    while True:
        worker.check_alive()
        with contextlib.suppress(FileNotFoundError):
            progress = orjson.loads(path.read_bytes())
        if progress["first"] and mark is None:
            mark = cpu()
        if mark and (progress["records"] >= total or _time_boxed(progress, total, time_box_s)):
            return progress, cpu.since(mark)
        if not progress["first"] and time.monotonic() - worker.started > 120:
            raise RuntimeError(f"faust agent consumed nothing in 120 s:\n{worker.tail()}")
        await asyncio.sleep(0.2)


async def measure_faust(run: Run, time_box_s: float) -> StageResult:
    progress_path = run.workdir / "faust-progress.json"
    worker = run.spawn_role("faust-agent", "faust-agent", "--progress", str(progress_path))
    try:
        progress, cpu_s = await _follow_progress(worker, progress_path, run.records, time_box_s)
        rss = worker.peak_rss_mb()
    finally:
        worker.stop()
    complete = progress["records"] >= run.records
    note = (
        "consumed everything"
        if complete
        else f"time-boxed: {progress['records']:,} of {run.records:,} records in {time_box_s:.0f} s "
        f"(all would take > {FAUST_MAX_S:.0f} s)"
    )
    return StageResult(
        "plain faust per-event agent, 1 process",
        progress["lines"],
        progress["last"] - progress["first"],
        progress["first"] - worker.started_wall,
        rss,
        f"{note}; {progress['symptoms']:,} symptoms sent",
        cpu_s,
    )


# ---------------------------------------------------------------------------------------------
# Stage 4: job end → verdict latency with the extractor busy


async def follow(url: str, prefix: str, position: str, jobs: dict[str, JobSent]) -> None:
    """Stamp each job with the wall time its first verdict revision reached Redis."""
    from sinks.redis_reader import follow_verdicts

    async for verdict in follow_verdicts(url, prefix, position, block_ms=1000):
        job = jobs.get(str(verdict.get("workload_id")))
        if job is not None and job.verdict_at is None:
            job.verdict_at = time.time()


async def live_lines(run: Run, rate: int, stop: asyncio.Event) -> None:
    """Keep the cluster talking: ``rate`` lines/s with event time now, in 100 ms chunks."""
    # Drawn from a pool made once: workload.lines() loads the ruleset (~0.8 s) on every call.
    pool = itertools.cycle(list(lines(max(rate, 1) * 10, seed=13)))
    producer = bulk_producer(run.settings)
    await producer.start()
    try:
        while not stop.is_set():
            tick = time.monotonic()
            chunk = log_messages(itertools.islice(pool, rate // 10), now_ms(), 0)
            run.records += await publish(producer, run.settings, chunk)
            await asyncio.sleep(max(0.0, 0.1 - (time.monotonic() - tick)))
    finally:
        await producer.stop()


async def job_ends(run: Run, count: int, spread_s: float, jobs: dict[str, JobSent], first_id: int) -> None:
    """``count`` job-end records over ``spread_s``, each sent just after a whole second so that
    its ``@end`` (whole seconds, as Slurm writes it) is the moment it is produced. Each job is
    registered in ``jobs`` before it is sent, so the Redis follower can stamp its verdict."""
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(acks="all", linger_ms=0, **run.settings.aiokafka_options())
    await producer.start()
    begin = time.time()
    try:
        for index in range(count):
            end_s = math.ceil(begin + index * spread_s / count)
            await asyncio.sleep(max(0.0, end_s - time.time()))
            first = (index * 4) % 256
            jobid = first_id + index
            message = jobcomp_message(
                jobid, (end_s - 600) * 1000, end_s * 1000, f"gpu[{first:04d}-{first + 3:04d}]"
            )
            jobs[str(jobid)] = JobSent(jobid, end_s, time.time())
            await producer.send_and_wait(run.settings.topic(message.topic), message.value, key=message.key)
            run.records += 1
    finally:
        await producer.stop()


@dataclass(frozen=True)
class Sample:
    at: float  # wall clock
    extractor_lag: int  # ingest records acknowledged by the broker, not committed by the extractor
    node_written: int  # records on node-events (the extractor's and the correlator's own)
    node_lag: int  # of those, not yet committed by the correlator
    workload_lag: int  # the same on workload-events


@dataclass
class LoadLog:
    """Both stages' consumer lag, sampled every 0.25 s by one task (so the job-end sends never
    wait for an admin round trip)."""

    samples: list[Sample] = field(default_factory=list)

    async def run(self, run: Run, group: GroupProgress, stop: asyncio.Event) -> None:
        topics = Topics.from_settings(run.settings)
        correlator = f"{run.namespace}faultstream-correlator"
        while not stop.is_set():
            done = await group.done()
            node = await group.written([topics.node_events])
            node_done = await group.committed(correlator, [topics.node_events])
            work = await group.written([topics.workload_events])
            work_done = await group.committed(correlator, [topics.workload_events])
            # Acks trail commits a little, hence the max(0, ...).
            lag = max(0, run.records - done)
            self.samples.append(Sample(time.time(), lag, node, node - node_done, work - work_done))
            await asyncio.sleep(0.25)

    def at(self, wall: float) -> Sample:
        before = [s for s in self.samples if s.at <= wall]
        return before[-1] if before else self.samples[0]

    def first(self, after: float, test: Callable[[Sample], bool]) -> float | None:
        return next((s.at for s in self.samples if s.at >= after and test(s)), None)

    def correlator_summary(self, since: float) -> list[str]:
        """How far the correlator fell behind on node-events, and how fast it caught up."""
        worst = max(self.samples, key=lambda s: s.node_lag)
        caught_up = self.first(worst.at, lambda s: s.node_lag <= 100)
        consumed = [s.node_written - s.node_lag for s in self.samples]
        busy = [(s.at, c) for s, c in zip(self.samples, consumed, strict=True) if s.node_lag > 100]
        rate = (busy[-1][1] - busy[0][1]) / (busy[-1][0] - busy[0][0]) if len(busy) > 1 else 0.0
        return [
            f"node-events: {self.samples[-1].node_written:,} records written during the run; correlator "
            f"lag max {worst.node_lag:,} records at +{worst.at - since:.1f} s, back under 100 "
            + (f"at +{caught_up - since:.1f} s" if caught_up else "never")
            + f" (after the first job end); it consumed {rate:,.0f} records/s while behind",
            f"workload-events: correlator lag max {max(s.workload_lag for s in self.samples):,} records",
        ]


async def wait_ready(worker: Worker, marker: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while marker not in worker.tail(200_000):
        worker.check_alive()
        if time.monotonic() > deadline:
            raise TimeoutError(f"{worker.name} not ready after {timeout_s:.0f} s:\n{worker.tail()}")
        await asyncio.sleep(0.2)


def correlator_env(prefix: str) -> dict[str, str]:
    return {
        "FAULTSTREAM_GRACE_S": str(GRACE_S),
        "FAULTSTREAM_TAIL_S": str(GRACE_S),
        "FAULTSTREAM_REDIS_PREFIX": prefix,
    }


async def measure_latency(run: Run, args: argparse.Namespace, spread_s: float) -> LatencyResult:
    from sinks.redis_reader import stream_position

    prefix = f"{run.namespace.rstrip('.')}:"
    redis_url = run.settings.redis_url
    # The backlog: the last minute of the cluster's logs, not yet extracted.
    backlog = log_messages(lines(args.latency_lines, seed=11), now_ms() - 60_000, 60_000 / args.latency_lines)
    await preload(run, backlog)
    argv = ["-m", "streams", "worker", "correlator", "--log-level", args.correlator_log_level]
    workers = [run.spawn("correlator", argv, **correlator_env(prefix))]
    stop, load = asyncio.Event(), LoadLog()
    jobs: dict[str, JobSent] = {}
    tasks: list[asyncio.Task] = []
    try:
        await wait_ready(workers[0], "Worker ready", 120)  # table recovery done, fetching
        position = await stream_position(redis_url, prefix)
        tasks.append(asyncio.create_task(follow(redis_url, prefix, position, jobs)))
        workers.append(run.spawn("extractor", ["-m", "streams", "worker", "extractor"]))
        async with GroupProgress(run.settings, f"{run.namespace}faultstream-extractor", run.ingest) as group:
            await group.wait_for(1, alive=workers[1].check_alive)  # busy on the backlog from here on
            tasks.append(asyncio.create_task(live_lines(run, args.live_rate, stop)))
            tasks.append(asyncio.create_task(load.run(run, group, stop)))
            await job_ends(run, args.jobs, spread_s, jobs, LOADED_JOBS)
            await _wait_verdicts(list(jobs.values()), workers, args.verdict_timeout)
            # The same pipeline once it has caught up: what the latency is without a backlog.
            loaded = len(jobs)
            await job_ends(run, IDLE_JOBS_COUNT, 5.0, jobs, IDLE_JOBS)
            await _wait_verdicts(list(jobs.values()), workers, args.verdict_timeout)
        rss = [w.peak_rss_mb() for w in workers]
    finally:
        stop.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for worker in workers:
            worker.stop()
    sent = sorted(jobs.values(), key=lambda j: j.jobid)
    for job in sent:
        job.extractor_lag = load.at(job.produced).extractor_lag
    sent, idle = sent[:loaded], sent[loaded:]
    drained = load.first(0.0, lambda s: s.extractor_lag <= 5_000)
    return LatencyResult(
        sent,
        idle,
        args.latency_lines,
        args.live_rate,
        spread_s,
        drained - sent[0].produced if drained else None,
        extractor_rss_mb=rss[1],
        correlator_rss_mb=rss[0],
        notes=[*load.correlator_summary(sent[0].produced), f"logs: {run.workdir}/{{correlator,extractor}}.log"],
    )


async def _wait_verdicts(jobs: list[JobSent], workers: list[Worker], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while any(j.verdict_at is None for j in jobs) and time.monotonic() < deadline:
        for worker in workers:
            worker.check_alive()
        await asyncio.sleep(0.1)


async def cleanup_redis(url: str, prefix: str) -> None:
    from sinks.redis_client import connect

    client = connect(url, name="bench-cleanup")
    try:
        keys = [key async for key in client.scan_iter(match=f"{prefix}*")]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


# ---------------------------------------------------------------------------------------------
# Main


async def bench(args: argparse.Namespace) -> None:
    tag = secrets.token_hex(3)  # a fresh namespace per run: inputs are deterministic, names are not
    workdir = Path(tempfile.mkdtemp(prefix=f"bench-extractor-{tag}-"))
    live = Run(load_settings(namespace=f"bench{tag}."), workdir / "throughput")
    replay = Run(load_settings(namespace=f"bench{tag}-replay."), workdir / "replay")
    latency = Run(load_settings(namespace=f"bench{tag}-lat."), workdir / "latency")
    # Event time as a cluster logging at the target rate would stamp it; the replay row spreads
    # the same lines over 3 h (bench_backtest's recording), which multiplies the extractor's
    # per-node, per-minute line-count records.
    live_span_ms = max(1, args.lines * 1000 // TARGET_RATE)
    try:
        preload_s = await preload(live, preload_messages(args.lines, live_span_ms))
        print(
            f"namespace {live.namespace}: preloaded {live.records:,} records ({args.lines:,} log lines over "
            f"{live_span_ms / 1000:.1f} s of event time, {BENCH_JOBS} Slurm job ends) to 4 ingest topics x "
            f"{live.settings.partitions} partitions in {preload_s:.1f} s; "
            f"broker {live.settings.kafka_bootstrap_servers}, {os.cpu_count()} cores"
        )
        rows = [
            await measure_plain(live),
            await measure_extractor(live, "faultstream extractor worker, 1 process"),
        ]
        if args.replay_row:
            await preload(replay, preload_messages(args.lines, REPLAY_SPAN_MS))
            rows.append(await measure_extractor(replay, "  same, event times spread over 3 h"))
        rows.append(await measure_faust(live, args.faust_seconds))
        print()
        print_table(rows, rows[1], rows[-1])
        if args.latency_lines:
            spread = min(60.0, max(5.0, 0.8 * args.latency_lines / max(rows[1].rate, 1.0)))
            print_latency(await measure_latency(latency, args, spread), args.details)
    finally:
        if not args.keep_topics:
            for run in (live, replay, latency):
                await delete_namespace_topics(run.settings)
            await cleanup_redis(latency.settings.redis_url, f"{latency.namespace.rstrip('.')}:")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=1_000_000, help="log lines in the throughput preload")
    parser.add_argument("--latency-lines", type=int, default=1_000_000, help="latency-run backlog; 0 skips it")
    parser.add_argument(
        "--faust-seconds",
        type=float,
        default=90.0,
        help=f"faust agent's time box if all takes > {FAUST_MAX_S:.0f} s",
    )
    parser.add_argument("--jobs", type=int, default=50, help="job-end records in the latency run")
    parser.add_argument(
        "--live-rate", type=int, default=0, help="also publish this many lines/s during the latency run"
    )
    parser.add_argument("--verdict-timeout", type=float, default=150.0)
    parser.add_argument("--correlator-log-level", default="INFO")
    parser.add_argument(
        "--replay-row",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also time the extractor on the lines spread over 3 h of event time",
    )
    parser.add_argument("--keep-topics", action="store_true")
    parser.add_argument("--details", action="store_true", help="print every job's latency")
    # Child-process roles (the benchmark starts these itself).
    roles = ("bench", "plain-consumer", "faust-agent")
    parser.add_argument("--role", default="bench", choices=roles, help=argparse.SUPPRESS)
    parser.add_argument("--namespace", default="", help=argparse.SUPPRESS)
    parser.add_argument("--expect", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--progress", type=Path, default=None, help=argparse.SUPPRESS)
    return parser


def main() -> None:
    parser = _parser()
    args = parser.parse_args()
    if args.latency_lines and args.jobs < 1:
        parser.error("--jobs must be at least 1 (or --latency-lines 0)")
    if args.role == "plain-consumer":
        asyncio.run(plain_consumer(load_settings(namespace=args.namespace), args.expect))
        return
    if args.role == "faust-agent":
        faust_agent(load_settings(namespace=args.namespace), args.progress)
        return
    stop_services = ensure_services()
    try:
        asyncio.run(bench(args))
    finally:
        if stop_services is not None:
            stop_services()
    sys.stdout.flush()


if __name__ == "__main__":
    main()
