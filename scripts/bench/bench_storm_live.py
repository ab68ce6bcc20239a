"""A failure at scale, live: the storm workload (scripts/bench/workload.py) published with
``faultstream load`` to the broker, one extractor and one correlator process, against the backtest
of the same recording.

    python -m scripts.bench.bench_storm_live [--nodes 1250,12500] [--lines 1000000] [--grace 5]

Per node count it prints: how long publishing took; the extractor's rate from its first commit
to the last; the latency from the moment the extractor had committed every record (the job's end
included) to the verdict in Redis (target ≤ grace + 1 s at 1,250 nodes, ≤ 10 s at 12,500); the
correlator's peak RSS (target < 1 GB at 12,500 nodes); whether the verdict is right and equal to
the backtest's. After the job's end the recording carries ``--after-s`` (30) seconds of the
cluster's healthy lines, as a live cluster goes on logging; with 0 the event time stops at the end
and the verdict waits for the input partitions to count as idle. Kafka and Redis come from
``KAFKA_BOOTSTRAP_SERVERS`` / ``REDIS_URL`` (``eval "$(bash scripts/services.sh start)"``). Each
run has its own namespace, deleted after.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from correlator.settings import CorrelatorSettings
from extractors.loader import load_ruleset
from scripts.bench.kafka_load import REPO, GroupProgress, Offsets, Worker, delete_namespace_topics
from scripts.bench.workload import AFTER_PER_SECOND, STORM_JOB, storm_xid_node, write_storm_recording
from sinks.redis_reader import recent_verdicts
from streams.backtest import backtest, latest_revisions
from streams.settings import load_settings

SAME = ("terminal_state", "sub_domain", "responsible_nodes", "failure_domains", "chain", "symptoms_seen")


def _env(namespace: str, grace_s: float) -> dict[str, str]:
    return {
        "FAULTSTREAM_NAMESPACE": namespace,
        "FAULTSTREAM_REDIS_PREFIX": namespace,
        "FAULTSTREAM_GRACE_S": str(grace_s),
        "FAULTSTREAM_TAIL_S": str(grace_s),
        "FAULTSTREAM_PARTITIONS": "4",
        "FAULTSTREAM_TICK_INTERVAL_S": "0.5",
    }


def _wait_ready(worker: Worker, timeout_s: float = 180.0) -> None:
    deadline = time.monotonic() + timeout_s
    while "Worker ready" not in worker.log.read_text(errors="replace"):
        worker.check_alive()
        if time.monotonic() > deadline:
            raise TimeoutError(f"{worker.name} not ready:\n{worker.tail()}")
        time.sleep(0.5)


async def _wait_verdict(
    redis_url: str, prefix: str, correlator: Worker, done: Callable[[dict], bool], timeout_s: float = 600.0
) -> dict | None:
    """The first revision in Redis for which ``done`` holds (None after the timeout)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = [v for v in await recent_verdicts(redis_url, prefix, 10) if v["workload_id"] == str(STORM_JOB)]
        if found and done(found[0]):
            return found[0]
        correlator.check_alive()
        await asyncio.sleep(0.1)
    return None


async def _caught_up(settings, namespace: str, since: float) -> float:
    """Seconds from ``since`` until the correlator has committed every node event written: the
    part of the latency that is the correlator's backlog (the rest is its clocks' wait)."""
    node_events = [settings.topic("faultstream.node-events")]
    async with GroupProgress(settings, f"{namespace}faultstream-correlator", node_events) as progress:
        while await progress.done() < await progress.written(node_events):
            await asyncio.sleep(0.1)
    return time.monotonic() - since


def run_one(nodes: int, count: int, grace_s: float, workdir: Path, after_s: int = 30) -> None:
    namespace = f"storm{secrets.token_hex(3)}."
    settings = load_settings(namespace=namespace)
    recording = workdir / f"storm-{nodes}.jsonl"
    write_storm_recording(recording, nodes, count, after_s=after_s)
    records = count + 1 + after_s * AFTER_PER_SECOND  # the lines, the job end, the lines after it
    windows = CorrelatorSettings(grace_s=grace_s, tail_s=grace_s)
    [expected] = latest_revisions(backtest(recording, load_ruleset(), windows, workers=1).verdicts)
    env = {**os.environ, **_env(namespace, grace_s), "PYTHONPATH": str(REPO)}
    workers = [
        Worker.spawn(
            f"{namespace}{stage}", ["-m", "streams", "worker", stage], _env(namespace, grace_s), workdir
        )
        for stage in ("extractor", "correlator")
    ]
    extractor, correlator = workers
    try:
        _wait_ready(correlator)
        started = time.monotonic()
        subprocess.run([sys.executable, "-m", "streams", "load", str(recording)], env=env, check=True)
        loaded = time.monotonic() - started

        backtest_says = expected.model_dump(mode="json")

        def same(verdict: dict) -> bool:
            return all(verdict[f] == backtest_says[f] for f in SAME)

        async def measure() -> tuple[float, float, dict, float | None]:
            ingest = list(settings.ingest_topics())
            async with GroupProgress(settings, f"{namespace}faultstream-extractor", ingest) as progress:
                span = await progress.wait_for(records, extractor.check_alive, poll_s=0.05)
            consumed = time.monotonic()
            caught_up = asyncio.create_task(_caught_up(settings, namespace, consumed))
            first = await _wait_verdict(settings.redis_url, namespace, correlator, lambda v: True)
            if first is None:
                raise TimeoutError(f"no verdict:\n{correlator.tail()}")
            latency = time.monotonic() - consumed
            node_state = f"{namespace}faultstream-correlator-node-state-changelog"
            async with Offsets(settings) as offsets:
                changelog.append(await offsets.written([node_state]))
            caught_up.cancel()
            behind.append(caught_up.result() if caught_up.done() and not caught_up.cancelled() else None)
            # a verdict decided before every node reported (the overdue fallback) is revised later
            redis = settings.redis_url
            final = first if same(first) else await _wait_verdict(redis, namespace, correlator, same)
            settled = time.monotonic() - consumed if final else None
            return span.records / span.seconds, latency, first, settled

        behind: list[float | None] = []
        changelog: list[int] = []  # node-state changelog records written by the verdict
        rate, latency, verdict, settled = asyncio.run(measure())
        caught = f"{behind[0]:.2f} s" if behind and behind[0] is not None else "not before the verdict"
        rss = correlator.peak_rss_mb()
        right = (verdict["sub_domain"], verdict["responsible_nodes"]) == ("hardware", [storm_xid_node(nodes)])
        settled_s = f"{settled:.1f} s" if settled is not None else "never (timed out)"
        revised = "" if same(verdict) else f"; a later revision equal to backtest after {settled_s}"
        print(
            f"{nodes:>7,} nodes {count:>10,} lines | load {loaded:6.1f} s | extractor {rate:>9,.0f} lines/s | "
            f"consumed → verdict {latency:5.2f} s (grace {grace_s:g} s, {after_s} s after; "
            f"correlator committed every node event {caught}) | "
            f"correlator peak RSS {rss:6.0f} MB, node-state changelog {changelog[0]:,} records | "
            f"first verdict right: {right}, equal to backtest: {same(verdict)}{revised}",
            flush=True,
        )
    finally:
        for worker in workers:
            worker.stop()
        asyncio.run(delete_namespace_topics(settings))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", default="1250,12500")
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--grace", type=float, default=5.0)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument(
        "--after-s", type=int, default=30, help="seconds of the cluster's lines after the job's end (0: none)"
    )
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="storm-live-"))
    for _ in range(args.runs):
        for nodes in (int(n) for n in args.nodes.split(",")):
            run_one(nodes, args.lines, args.grace, workdir, args.after_s)


if __name__ == "__main__":
    main()
