"""A soak: the live pipeline under a mixed load at a fixed rate for a long time, with faults
injected on a schedule, checked against the backtest of exactly what was sent.

    eval "$(bash scripts/services.sh start)"
    python -m scripts.soak [--rate 1000] [--minutes 30] [--fault-every-s 240] [--out docs/soak]

It starts one extractor and one correlator (``faultstream worker …``, separate processes) in a
private topic namespace on the local Kafka, with a private redis-server of its own (so a Redis
restart disturbs nobody; ``--redis URL`` uses another one and skips that fault). The load
(scripts/soak_workload.py) is the golden failure stories with fresh job ids, a storm job of
``--storm-nodes`` nodes every ``--storm-every-s`` and healthy noise, sent at ``--rate`` records a
second; every record sent is also written to a recording. Faults rotate through ``--faults``
every ``--fault-every-s``: kill -9 the correlator (restarted after the session timeout), kill -9
the extractor (restarted at once), a second correlator joining and leaving ``--join-s`` later,
a Redis restart. Every ``--sample-s`` it samples records sent, verdicts (Redis and topic), dead
letters, the largest partition lag of each consumer group and each worker's RSS. At the end it
backtests the recording, waits for the pipeline to catch up, compares verdicts and writes
``<out>/<name>.json`` (summary and samples), ``<name>.csv`` and ``<name>.svg``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import csv
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.structs import TopicPartition
from redis.exceptions import RedisError

from correlator.settings import CorrelatorSettings
from extractors.loader import load_ruleset
from scripts.bench.kafka_load import REPO, Worker, delete_namespace_topics
from scripts.soak_svg import Panel, svg_plot
from scripts.soak_workload import STORM_JOB_BASE, segments
from sinks.redis_client import connect
from sinks.redis_keys import VerdictKeys
from streams.admin import ensure_topics
from streams.backtest import backtest, latest_revisions
from streams.publish import _topic_for
from streams.settings import Settings, load_settings
from streams.topics import RECORDED_TIME_HEADER, Topics
from tests.pipeline.results import comparable, read_topic

FAULTS = ("kill-correlator", "kill-extractor", "join-correlator", "restart-redis")
#: What decides a verdict, without any count: equal here but not as a whole means counts differ.
ATTRIBUTION = (
    "terminal_state",
    "sub_domain",
    "failure_domains",
    "responsible_nodes",
    "uncertainty_type",
    "cancellation_actor",
)
SESSION_TIMEOUT_S = 10
#: What the workers and the backtest run, taken from the last commit at the start (``snapshot_code``).
ENGINE = ("correlator", "extractors", "streams", "sinks", "rules")


# --- processes -----------------------------------------------------------------------------------


class PrivateRedis:
    """A redis-server of the soak's own on a free port; restarts keep its data (saved on shutdown)."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        argv = [
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
        ]
        subprocess.run(argv, check=True, capture_output=True)
        for _ in range(100):
            if self._cli("ping").stdout.strip() == b"PONG":
                return
            time.sleep(0.1)
        raise RuntimeError("private redis-server did not start")

    def stop(self, save: bool = True) -> None:
        self._cli("shutdown", "save" if save else "nosave")

    def _cli(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["redis-cli", "-p", str(self.port), *args], capture_output=True)


@dataclass
class Workers:
    """The pipeline's worker processes by role name; a restarted worker keeps its name."""

    namespace: str
    env: dict[str, str]
    workdir: Path
    running: dict[str, Worker] = field(default_factory=dict)

    def start(self, name: str) -> Worker:
        stage = "correlator" if name.startswith("correlator") else "extractor"
        worker = Worker.spawn(name, ["-m", "streams", "worker", stage], self.env, self.workdir)
        self.running[name] = worker
        return worker

    def kill(self, name: str) -> None:
        worker = self.running.pop(name)
        worker.process.send_signal(signal.SIGKILL)
        worker.process.wait()

    def leave(self, name: str) -> None:
        self.running.pop(name).stop()

    def rss_mb(self) -> dict[str, float]:
        return {name: _vm_rss_mb(w.process.pid) for name, w in self.running.items() if w.process.poll() is None}

    def stop_all(self) -> None:
        for name in list(self.running):
            self.leave(name)


def _vm_rss_mb(pid: int) -> float:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    return next((int(line.split()[1]) / 1024 for line in status.splitlines() if line.startswith("VmRSS:")), 0.0)


async def _wait_logged(worker: Worker, text: str, timeout_s: float = 180.0) -> None:
    deadline = time.monotonic() + timeout_s
    while text not in worker.log.read_text(errors="replace"):
        worker.check_alive()
        if time.monotonic() > deadline:
            raise TimeoutError(f"{worker.name}: no {text!r}:\n{worker.tail()}")
        await asyncio.sleep(0.5)


# --- the run ---------------------------------------------------------------------------------------


@dataclass
class Run:
    args: argparse.Namespace
    settings: Settings
    workers: Workers
    redis: PrivateRedis | None
    recording: Path
    snapshot: Path
    commit: str
    started: float = field(default_factory=time.monotonic)
    sent: int = 0
    sending: bool = True
    events: list[tuple[float, str]] = field(default_factory=list)
    samples: list[dict[str, Any]] = field(default_factory=list)
    segments: list[dict[str, Any]] = field(default_factory=list)
    finished: bool = False
    background: set[asyncio.Task] = field(default_factory=set)  # a second correlator's leaving

    def now(self) -> float:
        return time.monotonic() - self.started

    def event(self, label: str) -> None:
        self.events.append((round(self.now(), 1), label))
        print(f"[{self.now():7.1f} s] {label}", flush=True)


async def send_load(run: Run) -> None:
    """Records at ``--rate`` a second for ``--minutes``, each also written to the recording."""
    args = run.args
    producer = AIOKafkaProducer(acks="all", linger_ms=10, **run.settings.aiokafka_options())
    await producer.start()
    per_segment = int(args.rate * args.segment_s)
    storm_every = max(1, round(args.storm_every_s / args.segment_s)) if args.storm_every_s else 0
    stories = [name for name in args.stories.split(",") if name]
    load = segments(per_segment, storm_every, args.storm_nodes, args.storm_lines, stories)
    pending: list[tuple[asyncio.Future, dict[str, Any]]] = []
    began = time.monotonic()
    try:
        with run.recording.open("wb") as recording:
            upcoming = asyncio.create_task(asyncio.to_thread(next, load))  # built while the last one is sent
            while time.monotonic() - began < args.minutes * 60:
                segment = await upcoming
                upcoming = asyncio.create_task(asyncio.to_thread(next, load))
                run.segments.append(
                    {
                        "index": segment.index,
                        "story": segment.story,
                        "storm_nodes": segment.storm_nodes,
                        "sent_at_s": round(run.now(), 1),
                    }
                )
                for record in segment.records:
                    while run.sent >= args.rate * (time.monotonic() - began):
                        await asyncio.sleep(0.02)
                    recording.write(orjson.dumps(record) + b"\n")
                    pending.append((await _send(producer, run.settings, record), record))
                    run.sent += 1
                    if len(pending) >= 500:
                        await _settle(run, producer, pending)
            await _settle(run, producer, pending)
            await upcoming
    finally:
        await producer.stop()
        run.sending = False
        run.event(f"load stopped: {run.sent:,} records in {len(run.segments)} segments")


async def _settle(run: Run, producer: AIOKafkaProducer, pending: list[tuple[asyncio.Future, dict]]) -> None:
    """Wait for the acknowledgements; records the broker refused (a leader election on a shared
    broker) are sent again, later than the recording has them (the event log says so)."""
    for attempt in range(10):
        results = await asyncio.gather(*(future for future, _ in pending), return_exceptions=True)
        failed = [
            record
            for (_, record), result in zip(pending, results, strict=True)
            if isinstance(result, Exception)
        ]
        pending.clear()
        if not failed:
            return
        error = next(r for r in results if isinstance(r, Exception))
        run.event(
            f"{len(failed)} records refused by the broker ({error!r}), sent again (attempt {attempt + 1})"
        )
        await asyncio.sleep(2)
        pending += [(await _send(producer, run.settings, record), record) for record in failed]
    raise RuntimeError("the broker kept refusing records")


async def _send(producer: AIOKafkaProducer, settings: Settings, record: dict[str, Any]) -> asyncio.Future:
    value = record["value"]
    raw = value.encode() if isinstance(value, str) else orjson.dumps(value)
    key = record["key"].encode() if record.get("key") else None
    headers = [(RECORDED_TIME_HEADER, b"%d" % record["timestamp"])]
    return await producer.send(_topic_for(settings, record["topic"]), raw, key=key, headers=headers)


async def inject_faults(run: Run) -> None:
    """One fault every ``--fault-every-s`` from ``--first-fault-s``, rotating, while the load runs."""
    args = run.args
    faults = [f for f in args.faults.split(",") if f]
    if not faults:
        return
    at = args.first_fault_s
    for n in range(10_000):
        while run.now() < at:
            if not run.sending:
                return
            await asyncio.sleep(0.2)
        if not run.sending:
            return
        await _fault(run, faults[n % len(faults)])
        at += args.fault_every_s


async def _fault(run: Run, fault: str) -> None:
    workers = run.workers
    if fault == "kill-correlator":
        run.event("kill -9 correlator")
        workers.kill("correlator")
        await asyncio.sleep(run.args.restart_after_s)  # a supervisor's restart delay
        run.event("correlator restarted")
        workers.start("correlator")
    elif fault == "kill-extractor":
        run.event("kill -9 extractor")
        workers.kill("extractor")
        await asyncio.sleep(2)
        run.event("extractor restarted")
        workers.start("extractor")
    elif fault == "join-correlator":
        run.event("correlator-2 joins")
        workers.start("correlator-2")
        run.background.add(asyncio.create_task(_leave_later(run, "correlator-2")))
    elif fault == "restart-redis":
        if run.redis is None:
            run.event("Redis restart skipped: not a private redis-server")
            return
        run.event("Redis stopped")
        await asyncio.to_thread(run.redis.stop)
        await asyncio.sleep(5)
        await asyncio.to_thread(run.redis.start)
        run.event("Redis started")
    else:
        raise ValueError(f"unknown fault {fault!r}; known: {', '.join(FAULTS)}")


async def _leave_later(run: Run, name: str) -> None:
    await asyncio.sleep(run.args.join_s)
    if name in run.workers.running:
        run.event(f"{name} leaves")
        await asyncio.to_thread(run.workers.leave, name)  # a graceful stop: the group rebalances


# --- sampling --------------------------------------------------------------------------------------


class Probe:
    """End offsets, group lag and the Redis verdict count of the soak's namespace."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.topics = Topics.from_settings(settings)
        self.admin = AIOKafkaAdminClient(**settings.aiokafka_options())
        self.ends = AIOKafkaConsumer(**settings.aiokafka_options())

    async def __aenter__(self) -> Probe:
        await self.admin.start()
        await self.ends.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.ends.stop()
        await self.admin.close()

    def _parts(self, topics: list[str]) -> list[TopicPartition]:
        return [TopicPartition(t, p) for t in topics for p in range(self.settings.partitions)]

    async def written(self, topic: str) -> int:
        return sum((await self.ends.end_offsets(self._parts([topic]))).values())

    async def records(self, topic: str) -> int:
        """Records a read-committed reader sees on ``topic``: its end offsets also count the
        commit marker the transactional extractor leaves after each batch it wrote there."""
        parts = self._parts([topic])
        ends = await self.ends.end_offsets(parts)
        reader = AIOKafkaConsumer(
            **self.settings.aiokafka_options(), isolation_level="read_committed", enable_auto_commit=False
        )
        await reader.start()
        try:
            reader.assign(parts)
            await reader.seek_to_beginning(*parts)
            count = 0
            while [tp for tp in parts if await reader.position(tp) < ends[tp]]:
                batches = await reader.getmany(timeout_ms=1_000)
                if not batches:
                    break
                count += sum(len(records) for records in batches.values())
            return count
        finally:
            await reader.stop()

    async def max_lag(self, group: str, topics: list[str]) -> int:
        parts = self._parts(topics)
        committed = await self.admin.list_consumer_group_offsets(group, partitions=parts)
        ends = await self.ends.end_offsets(parts)
        done = {tp: o.offset for tp, o in committed.items() if o.offset >= 0}
        return max((ends[tp] - done.get(tp, 0) for tp in parts), default=0)

    async def redis_verdicts(self, url: str) -> int:
        client = connect(url, name="faultstream-soak")
        try:
            return await client.zcard(VerdictKeys(self.settings.redis_prefix).recent)
        finally:
            await client.aclose()

    async def sample(self, run: Run) -> dict[str, Any]:
        ns, topics = self.settings.namespace, self.topics
        row: dict[str, Any] = {"t_s": round(run.now(), 1), "sent": run.sent}
        row["verdicts_topic"] = await self.written(topics.verdicts)
        row["dead_letters"] = await self.records(topics.deadletter)
        row["lag_extractor"] = await self.max_lag(f"{ns}faultstream-extractor", list(topics.ingest))
        internal = [topics.node_events, topics.workload_events]
        row["lag_correlator"] = await self.max_lag(f"{ns}faultstream-correlator", internal)
        try:
            row["verdicts_redis"] = await self.redis_verdicts(self.settings.redis_url)
        except (OSError, RedisError):  # Redis is down for the restart fault
            row["verdicts_redis"] = None
        row["rss_mb"] = {k: round(v, 1) for k, v in run.workers.rss_mb().items()}
        return row


async def sample_until(run: Run, stop: asyncio.Event) -> None:
    async with Probe(run.settings) as probe:
        while not stop.is_set():
            try:
                run.samples.append(await probe.sample(run))
            except Exception as exc:  # a broker hiccup during a fault must not end the soak
                print(f"[{run.now():7.1f} s] sample failed: {exc!r}", flush=True)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), run.args.sample_s)


# --- the verdict check -----------------------------------------------------------------------------


def snapshot_code(workdir: Path) -> tuple[Path, str]:
    """The committed engine and rules (``git archive HEAD``) with the working tree's scripts and
    tests: the workers (restarted ones too) and the backtest run this copy, whatever is being
    edited in the checkout meanwhile. Returns the copy and the commit."""
    snapshot = workdir / "code"
    snapshot.mkdir()
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True)
    archive = subprocess.run(["git", "archive", "HEAD", *ENGINE], cwd=REPO, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(snapshot)], input=archive.stdout, check=True)
    for part in ("scripts", "tests"):
        shutil.copytree(REPO / part, snapshot / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return snapshot, commit.stdout.strip()


def expected_in(snapshot: Path, recording: Path, grace_s: float) -> tuple[dict[str, dict], int]:
    """The backtest of the recording, run by the snapshot's code in a process of its own."""
    out = recording.with_suffix(".expected.json")
    argv = [sys.executable, "-m", "scripts.soak", "--expect", str(recording), "--grace", str(grace_s)]
    subprocess.run(argv, cwd=snapshot, env={**os.environ, "PYTHONPATH": str(snapshot)}, check=True)
    expected = orjson.loads(out.read_bytes())
    return expected["verdicts"], expected["dead_letters"]


def expected_from_backtest(recording: Path, grace_s: float) -> tuple[dict[str, dict], int]:
    result = backtest(
        recording, load_ruleset(REPO / "rules"), CorrelatorSettings(grace_s=grace_s, tail_s=grace_s)
    )
    verdicts = {v.workload_id: v.model_dump(mode="json") for v in latest_revisions(result.verdicts)}
    return verdicts, len(result.dead_letters)


def _attribution(verdict: dict) -> dict:
    body = {k: verdict.get(k) for k in ATTRIBUTION}
    root = verdict.get("root_symptom") or {}
    body["root"] = (root.get("symptom"), root.get("node"))
    body["chain"] = [(c["symptom"], c["role"], c["nodes"]) for c in verdict.get("chain", [])]
    return body


def classify(got: dict | None, expected: dict) -> str:
    """equal | lines_seen (only the line count differs) | counts (attribution equal, some count
    differs) | different | missing."""
    if got is None:
        return "missing"
    mine, theirs = comparable(got), comparable(expected)
    if mine == theirs:
        return "equal"
    mine.pop("lines_seen"), theirs.pop("lines_seen")
    if mine == theirs:
        return "lines_seen"
    return "counts" if _attribution(got) == _attribution(expected) else "different"


def compare(got: dict[str, dict], expected: dict[str, dict]) -> dict[str, Any]:
    classes = {w: classify(got.get(w), e) for w, e in expected.items()}
    out: dict[str, Any] = {"expected": len(expected), "arrived": len(set(got) & set(expected))}
    for kind in ("equal", "lines_seen", "counts", "different", "missing"):
        out[kind] = sorted(w for w, c in classes.items() if c == kind)
    out["unexpected"] = sorted(set(got) - set(expected))
    out["lines_seen_delta"] = {
        w: got[w]["lines_seen"] - expected[w]["lines_seen"] for w in out["lines_seen"] + out["counts"]
    }
    return out


async def redis_latest(url: str, prefix: str) -> dict[str, dict]:
    keys = VerdictKeys(prefix)
    client = connect(url, name="faultstream-soak")
    try:
        ids = [w.decode() for w in await client.zrange(keys.recent, 0, -1)]
        blobs = [await client.hget(keys.verdict(w), "json") for w in ids]
    finally:
        await client.aclose()
    return {w: orjson.loads(b) for w, b in zip(ids, blobs, strict=True) if b is not None}


async def wait_for_pipeline(run: Run, expected: dict[str, dict]) -> dict[str, dict]:
    """Until Redis holds every expected verdict equal but for counts, or ``--drain-s`` passed."""
    deadline = time.monotonic() + run.args.drain_s
    got: dict[str, dict] = {}
    while time.monotonic() < deadline:
        got = await redis_latest(run.settings.redis_url, run.settings.redis_prefix)
        pending = [w for w, e in expected.items() if classify(got.get(w), e) in ("missing", "different")]
        if not pending:
            await asyncio.sleep(5)  # late revisions, if any, come now
            return await redis_latest(run.settings.redis_url, run.settings.redis_prefix)
        await asyncio.sleep(2)
    return got


def topic_latest(settings: Settings) -> dict[str, dict]:
    latest: dict[str, dict] = {}
    for _, verdict in read_topic(settings.kafka_bootstrap_servers, Topics.from_settings(settings).verdicts):
        if verdict["revision"] >= latest.get(verdict["workload_id"], {}).get("revision", 0):
            latest[verdict["workload_id"]] = verdict
    return latest


def segment_of(workload_id: str) -> int | None:
    """The segment a workload was sent in (its fresh id says: scripts/soak_workload.py)."""
    if "-s" in workload_id:
        return int(workload_id.rsplit("-s", 1)[1].split("-")[0].split("/")[0])
    if workload_id.isdigit():
        number = int(workload_id)
        return number - STORM_JOB_BASE if number >= STORM_JOB_BASE else (number - 100_000) // 100
    return None


# --- output ----------------------------------------------------------------------------------------


def summarize(run: Run, redis: dict, topic: dict, dead_expected: int) -> dict[str, Any]:
    samples = run.samples
    names = sorted({n for s in samples for n in s["rss_mb"]})
    rss = {}
    for name in names:
        values = [s["rss_mb"][name] for s in samples if name in s["rss_mb"]]
        rss[name] = {"start": values[0], "max": max(values), "end": values[-1]}
    last = samples[-1] if samples else {}
    return {
        "rate": run.args.rate,
        "minutes": run.args.minutes,
        "records_sent": run.sent,
        "segments": len(run.segments),
        "storm_jobs": sum(1 for s in run.segments if s["storm_nodes"]),
        "redis": redis,
        "topic": topic,
        "dead_letters": last.get("dead_letters"),
        "dead_letters_expected": dead_expected,
        "max_lag_extractor": max((s["lag_extractor"] for s in samples), default=0),
        "max_lag_correlator": max((s["lag_correlator"] for s in samples), default=0),
        "rss_mb": rss,
        "faults": run.events,
    }


def _report_lines(summary: dict[str, Any], run: Run) -> list[str]:
    out = [
        f"records sent {summary['records_sent']:,} at {summary['rate']:,}/s in {summary['segments']} segments "
        f"({summary['storm_jobs']} storm jobs of {run.args.storm_nodes} nodes)"
    ]
    for where in ("redis", "topic"):
        c = summary[where]
        out.append(
            f"verdicts ({where}): expected {c['expected']}, arrived {c['arrived']}, equal {len(c['equal'])}, "
            f"lines_seen only {len(c['lines_seen'])}, counts only {len(c['counts'])}, "
            f"different {len(c['different'])}, missing {len(c['missing'])}, unexpected {len(c['unexpected'])}"
        )
        for kind in ("different", "missing", "counts", "lines_seen"):
            for w in c[kind][:20]:
                seg = segment_of(w)
                story = run.segments[seg]["story"] if seg is not None and seg < len(run.segments) else "?"
                if w.isdigit() and int(w) >= STORM_JOB_BASE:
                    story = f"storm job beside {story}"
                delta = c["lines_seen_delta"].get(w)
                out.append(
                    f"  {kind}: {w} (segment {seg}, {story}{'' if delta is None else f', Δlines {delta:+d}'})"
                )
    out.append(f"dead letters {summary['dead_letters']} (backtest: {summary['dead_letters_expected']})")
    out.append(
        f"max lag: extractor {summary['max_lag_extractor']:,}, correlator {summary['max_lag_correlator']:,}"
    )
    for name, r in summary["rss_mb"].items():
        out.append(f"RSS {name}: start {r['start']:.0f} MB, max {r['max']:.0f} MB, end {r['end']:.0f} MB")
    return out


def write_outputs(run: Run, summary: dict[str, Any], out: Path, name: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    document = {"summary": summary, "segments": run.segments, "samples": run.samples}
    (out / f"{name}.json").write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2))
    names = sorted({n for s in run.samples for n in s["rss_mb"]})
    columns = [
        "t_s",
        "sent",
        "verdicts_redis",
        "verdicts_topic",
        "dead_letters",
        "lag_extractor",
        "lag_correlator",
    ]
    with (out / f"{name}.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns + [f"rss_mb_{n}" for n in names])
        for s in run.samples:
            writer.writerow([s.get(c) for c in columns] + [s["rss_mb"].get(n, "") for n in names])
    (out / f"{name}.svg").write_text(_plot(run, names))


def _plot(run: Run, names: list[str]) -> str:
    def series(value: Callable[[dict], float | None]) -> list[tuple[float, float]]:
        return [(s["t_s"], v) for s in run.samples if (v := value(s)) is not None]

    rss = Panel(
        "Resident memory per worker", "MB", {n: series(lambda s, n=n: s["rss_mb"].get(n)) for n in names}
    )
    lag = Panel(
        "Largest partition lag per consumer group",
        "records",
        {
            "extractor (ingest)": series(lambda s: s["lag_extractor"]),
            "correlator (internal)": series(lambda s: s["lag_correlator"]),
        },
    )
    caption = (
        f"{run.args.rate:,} records/s for {run.args.minutes:g} min; "
        "dashed lines: faults (a shared, busy machine: figures are noisy)"
    )
    return svg_plot([rss, lag], run.events, caption)


# --- main ------------------------------------------------------------------------------------------


def _worker_env(namespace: str, redis_url: str, grace_s: float, segment_s: float) -> dict[str, str]:
    return {
        "KAFKA_BOOTSTRAP_SERVERS": os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092"),
        "REDIS_URL": redis_url,
        "FAULTSTREAM_NAMESPACE": namespace,
        "FAULTSTREAM_REDIS_PREFIX": namespace,
        "FAULTSTREAM_GRACE_S": str(grace_s),
        "FAULTSTREAM_TAIL_S": str(grace_s),
        "FAULTSTREAM_PARTITIONS": "4",
        "FAULTSTREAM_TICK_INTERVAL_S": "0.5",
        "FAULTSTREAM_SESSION_TIMEOUT_S": str(SESSION_TIMEOUT_S),
        # a day of event time passes every segment (8 s): the production horizon, an hour of
        # wall time for late evidence, is that many days of the soak's event time
        "FAULTSTREAM_REVISION_HORIZON_S": str(3600.0 * 86_400 / segment_s),
    }


async def soak(args: argparse.Namespace) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="soak-"))
    print(f"work directory (worker logs, recording): {workdir}", flush=True)
    namespace = f"soak{secrets.token_hex(3)}."
    redis = PrivateRedis(workdir / "redis") if args.redis == "private" else None
    redis_url = redis.url if redis else args.redis
    snapshot, commit = snapshot_code(workdir)
    print(f"workers and backtest run commit {commit}", flush=True)
    env = {**_worker_env(namespace, redis_url, args.grace, args.segment_s), "PYTHONPATH": str(snapshot)}
    settings = load_settings(namespace=namespace, redis_url=redis_url, redis_prefix=namespace)
    workers = Workers(namespace, env, workdir)
    run = Run(args, settings, workers, redis, workdir / "sent.jsonl", snapshot, commit)
    try:
        if redis:
            redis.start()
        await ensure_topics(settings)
        await _wait_logged(workers.start("extractor"), "extractor started")
        await _wait_logged(workers.start("correlator"), "Worker ready")
        run.started = time.monotonic()
        run.event("load starts")
        summary = await _run(run, args, workdir)
        run.finished = True
        return summary
    finally:
        workers.stop_all()
        if redis:
            redis.stop(save=False)
        if run.finished and not args.keep_topics:  # a failed run's topics stay, to be looked at
            await delete_namespace_topics(settings)


async def _run(run: Run, args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    stop = asyncio.Event()
    sampler = asyncio.create_task(sample_until(run, stop))
    faults = asyncio.create_task(inject_faults(run))
    try:
        await send_load(run)
    except Exception as exc:
        run.event(f"load failed: {exc!r}")
        stop.set()
        await sampler
        write_outputs(run, {"error": repr(exc), "faults": run.events}, args.out, args.name)
        raise
    await faults
    await asyncio.gather(*run.background)
    expected, dead_expected = await asyncio.to_thread(expected_in, run.snapshot, run.recording, args.grace)
    run.event(f"backtest: {len(expected)} verdicts expected")
    got = await wait_for_pipeline(run, expected)
    run.event("pipeline caught up" if len(got) >= len(expected) else "drain time over")
    await asyncio.sleep(args.sample_s)
    stop.set()
    await sampler
    topic = await asyncio.to_thread(topic_latest, run.settings)
    summary = summarize(run, compare(got, expected), compare(topic, expected), dead_expected)
    summary["workdir"], summary["commit"] = str(workdir), run.commit
    write_outputs(run, summary, args.out, args.name)
    print("\n".join(_report_lines(summary, run)), flush=True)
    return summary


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=int, default=1000, help="records sent per second")
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--segment-s", type=float, default=8.0, help="wall seconds of load per story")
    parser.add_argument("--stories", default="", help="golden stories to rotate through (default: all)")
    parser.add_argument("--storm-every-s", type=float, default=180.0, help="0: no storm jobs")
    parser.add_argument("--storm-nodes", type=int, default=400)
    parser.add_argument("--storm-lines", type=int, default=12_000)
    parser.add_argument("--faults", default=",".join(FAULTS), help=f"rotation, from {', '.join(FAULTS)}")
    parser.add_argument("--fault-every-s", type=float, default=240.0)
    parser.add_argument("--first-fault-s", type=float, default=120.0)
    parser.add_argument("--restart-after-s", type=float, default=SESSION_TIMEOUT_S + 2.0)
    parser.add_argument("--join-s", type=float, default=120.0, help="how long the second correlator stays")
    parser.add_argument("--grace", type=float, default=5.0, help="grace and tail (event-time seconds)")
    parser.add_argument("--sample-s", type=float, default=5.0)
    parser.add_argument("--drain-s", type=float, default=300.0, help="longest wait for verdicts after the load")
    parser.add_argument("--redis", default="private", help="'private' (own redis-server) or a URL")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "soak")
    parser.add_argument("--name", default="soak")
    parser.add_argument("--keep-topics", action="store_true")
    parser.add_argument("--expect", type=Path, help=argparse.SUPPRESS)  # internal: backtest this recording
    args = parser.parse_args(argv)
    unknown = set(filter(None, args.faults.split(","))) - set(FAULTS)
    if unknown:
        parser.error(f"unknown faults {sorted(unknown)}; known: {', '.join(FAULTS)}")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.expect:
        verdicts, dead = expected_from_backtest(args.expect, args.grace)
        document = {"verdicts": verdicts, "dead_letters": dead}
        args.expect.with_suffix(".expected.json").write_bytes(orjson.dumps(document))
        return
    asyncio.run(soak(args))


if __name__ == "__main__":
    main()
