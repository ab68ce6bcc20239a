"""``faultstream replay`` against real time: how fast a rule author gets last week's diff.

    python -m scripts.bench.bench_replay [--nodes 128] [--lines 200000]

Writes the storm workload (scripts/bench/workload.py: a job on N nodes, healthy lines, one Xid 79,
an NCCL storm, the job's end), publishes it with ``faultstream load`` to its own namespace, then
times ``faultstream replay`` over the load's time range (read the topics into a recording, backtest
it with the baseline and the candidate rules, diff). Beside it, in the same run, the baseline:
``faultstream backtest`` of the same recording file, once. Prints lines/s for each and how many
times faster than real time the replay is (the recording's event-time span over the replay's
wall time). Kafka from ``KAFKA_BOOTSTRAP_SERVERS`` (``eval "$(bash scripts/services.sh start)"``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scripts.bench.kafka_load import REPO, delete_namespace_topics
from scripts.bench.workload import STORM_RUN_MS, write_storm_recording
from streams.settings import load_settings


def _faultstream(*argv: str, env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "streams.cli", *argv], cwd=REPO, env=env,
                          capture_output=True, text=True, check=True)  # fmt: skip
    return time.perf_counter() - started, done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=128)
    parser.add_argument("--lines", type=int, default=200_000)
    args = parser.parse_args()
    namespace = f"benchreplay{secrets.token_hex(3)}."
    env = {**os.environ, "FAULTSTREAM_NAMESPACE": namespace}
    with tempfile.TemporaryDirectory(prefix="bench-replay-") as scratch:
        recording = Path(scratch) / "storm.jsonl"
        write_storm_recording(recording, args.nodes, args.lines)
        since_ms = int(time.time() * 1000) - 1000
        load_s, _ = _faultstream("load", str(recording), env=env)
        until_ms = int(time.time() * 1000) + 1000
        backtest_s, _ = _faultstream("backtest", "-i", str(recording), "--format", "table", env=env)
        replay_s, out = _faultstream("replay", "--since", str(since_ms), "--until", str(until_ms),
                                     "--readback", "0s", "--json", env=env)  # fmt: skip
    diff = json.loads(out)
    span_s = STORM_RUN_MS / 1000
    print(f"storm workload: {args.nodes} nodes, {args.lines:,} lines, {span_s:,.0f} s of event time")
    print(f"  faultstream load (publish):        {load_s:7.1f} s  {args.lines / load_s:10,.0f} lines/s")
    print(f"  baseline: backtest of the file:    {backtest_s:7.1f} s  {args.lines / backtest_s:10,.0f} lines/s")
    print(f"  replay (read + 2 backtests + diff): {replay_s:6.1f} s  {args.lines / replay_s:10,.0f} lines/s, "
          f"{span_s / replay_s:,.0f}x real time")  # fmt: skip
    print(f"  verdicts {diff['verdicts']}, unchanged {diff['unchanged']}, changed {len(diff['changed'])}")
    asyncio.run(delete_namespace_topics(load_settings(None, namespace=namespace)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
