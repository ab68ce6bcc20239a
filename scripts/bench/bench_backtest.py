"""``faultstream backtest`` end to end (read, parse, normalize, extract, correlate), in one run
beside two baselines: only reading and JSON-decoding the same file, and the same backtest with
the ``re`` reference matcher on a slice of it.

    python -m scripts.bench.bench_backtest [--lines 1000000] [--keep FILE]

With ``--storm 128,1250,12500`` it measures failures instead: for each node count, a job whose
one node's GPU falls off the bus while every node's NCCL loses that peer for the last tenth of
the run (scripts/bench/workload.py), beside the sparse recording of the same size in the same
run; ``--pairwise`` adds the original pairwise refiners as a baseline, alternating with the
indexed ones (slow: minutes at 1,250 nodes).

    python -m scripts.bench.bench_backtest --storm 128,1250,12500 [--lines 1000000] [--pairwise]

Storm rows also give the CPU seconds per 1 M lines of the process and its worker processes (the
figure to compare on a shared machine) and the load average when the runs start.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import orjson

from extractors.loader import load_ruleset
from scripts.bench.pairwise_refiners import using_pairwise_refiners
from scripts.bench.workload import jobcomp_record as _jobcomp
from scripts.bench.workload import lines, storm_xid_node, write_storm_recording
from scripts.bench.workload import shipper_record as _record
from streams.backtest import BacktestResult, backtest, default_workers, latest_revisions

T0 = 1_714_557_600_000


def write_recording(path: Path, count: int) -> int:
    """``count`` log lines over ~3 h from 256 nodes, plus 64 jobs of 4 nodes each."""
    step = max(1, 3 * 3600 * 1000 // count)
    with path.open("wb") as out:
        for index, (text, source, host) in enumerate(lines(count)):
            out.write(orjson.dumps(_record(text, source, host, T0 + index * step)) + b"\n")
        for job in range(64):
            start = T0 + job * 60_000
            first = (job * 4) % 256
            out.write(
                orjson.dumps(
                    _jobcomp(9000 + job, start, start + 2 * 3600 * 1000, f"gpu[{first:04d}-{first + 3:04d}]")
                )
                + b"\n"
            )
    return count


def _read_only(path: Path) -> float:
    started = time.perf_counter()
    with path.open("rb") as handle:
        for raw in handle:
            orjson.loads(raw)
    return time.perf_counter() - started


def _backtest_with_re(path: Path, limit: int) -> tuple[int, float]:
    head = path.with_suffix(".head.jsonl")
    with path.open("rb") as src, head.open("wb") as dst:
        for _, raw in zip(range(limit), src, strict=False):
            dst.write(raw)
    result = backtest(head, load_ruleset(), workers=1, reference_matcher=True)
    return result.engine.stats.lines, result.seconds


def _cpu_seconds() -> float:
    """CPU seconds of this process and its reaped children (the backtest's worker processes)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _with_cpu(run: Callable[[], BacktestResult]) -> tuple[BacktestResult, float]:
    """A backtest and the CPU seconds it took in all its processes (the machine is shared: its
    lines per wall second swing with the other work, its CPU seconds much less)."""
    before = _cpu_seconds()
    result = run()
    return result, _cpu_seconds() - before


def _row(label: str, lines_: int, seconds: float, note: str = "", cpu: float | None = None) -> None:
    per_million = "" if cpu is None else f"{cpu * 1e6 / lines_:>10.2f}"
    print(f"{label:<52}{lines_:>12,}{seconds:>10.2f}{lines_ / seconds:>14,.0f}{per_million}  {note}")


def _outcome(result: BacktestResult) -> str:
    [verdict] = latest_revisions(result.verdicts)
    root = verdict.root_symptom.symptom if verdict.root_symptom else None
    return f"{verdict.sub_domain} {','.join(verdict.responsible_nodes)} {root}"


def storm_main(
    node_counts: list[int], count: int, pairwise: bool, runs: int, skip_single: bool = False
) -> None:
    """Storms beside the sparse recording of the same size, in one run; with ``pairwise``, the
    original refiners alternate with the indexed ones (this machine's speed swings)."""
    ruleset = load_ruleset()
    workers = default_workers()
    directory = Path(tempfile.mkdtemp())
    sparse = directory / "sparse.jsonl"
    write_recording(sparse, count)
    print(f"load average {' '.join(f'{load:.2f}' for load in os.getloadavg())}")
    print(f"{'workload':<52}{'lines':>12}{'seconds':>10}{'lines/s':>14}{'CPU s/1M':>10}  verdict")
    for nodes in node_counts:
        path = directory / f"storm-{nodes}.jsonl"
        write_storm_recording(path, nodes, count)
        for run in range(runs):
            base, cpu = _with_cpu(partial(backtest, sparse, ruleset, workers=workers))
            label = f"sparse (256 nodes, 0.1 % symptoms), {workers} processes"
            _row(label, base.engine.stats.lines, base.seconds, cpu=cpu)
            result, cpu = _with_cpu(partial(backtest, path, ruleset, workers=workers))
            stats = result.engine.stats
            label = f"storm {nodes:,} nodes, {workers} processes"
            _row(label, stats.lines, result.seconds, _outcome(result), cpu)
            if run == 0 and not skip_single:
                single, cpu = _with_cpu(partial(backtest, path, ruleset, workers=1))
                _row(f"storm {nodes:,} nodes, 1 process", stats.lines, single.seconds, _outcome(single), cpu)
            if pairwise:
                with using_pairwise_refiners():
                    old = backtest(path, ruleset, workers=workers)
                label = f"storm {nodes:,} nodes, pairwise refiners (baseline)"
                _row(label, stats.lines, old.seconds, _outcome(old))
        right = f"hardware {storm_xid_node(nodes)} gpu_fallen_off_bus"
        print(f"  storm {nodes:,}: {stats.symptoms:,} symptoms; the right verdict: {right}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--re-lines", type=int, default=20_000)
    parser.add_argument("--keep", type=Path, default=None, help="write the recording here and keep it")
    parser.add_argument("--storm", default="", help="node counts of storm workloads, e.g. 128,1250,12500")
    parser.add_argument("--pairwise", action="store_true", help="storms: the pairwise refiners as baseline")
    parser.add_argument("--runs", type=int, default=1, help="storms: alternations per node count")
    parser.add_argument("--no-single", action="store_true", help="storms: skip the 1-process run")
    args = parser.parse_args()
    if args.storm:
        storm_main(
            [int(n) for n in args.storm.split(",")], args.lines, args.pairwise, args.runs, args.no_single
        )
        return
    path = args.keep or Path(tempfile.mkdtemp()) / "bench.jsonl"
    write_recording(path, args.lines)
    ruleset = load_ruleset()
    read_s = _read_only(path)
    single = backtest(path, ruleset, workers=1)
    result = backtest(path, ruleset, workers=default_workers())
    re_lines, re_s = _backtest_with_re(path, args.re_lines)
    stats = result.engine.stats
    assert [v.model_dump() for v in single.verdicts] == [v.model_dump() for v in result.verdicts]
    print(
        f"recording: {path.stat().st_size / 2**20:,.0f} MiB, {result.records:,} records, "
        f"{stats.lines:,} lines, {stats.symptoms:,} symptoms, {len(result.verdicts)} verdicts"
    )
    print(f"{'stage':<44}{'lines':>12}{'seconds':>10}{'lines/s':>14}")
    print(
        f"{'read + orjson.loads only (upper bound)':<44}{stats.lines:>12,}{read_s:>10.2f}"
        f"{stats.lines / read_s:>14,.0f}"
    )
    print(
        f"{'faultstream backtest, 1 process':<44}{stats.lines:>12,}{single.seconds:>10.2f}"
        f"{stats.lines / single.seconds:>14,.0f}"
    )
    label = f"faultstream backtest, {default_workers()} worker processes"
    print(f"{label:<44}{stats.lines:>12,}{result.seconds:>10.2f}{stats.lines / result.seconds:>14,.0f}")
    print(f"{'faultstream backtest with re matcher':<44}{re_lines:>12,}{re_s:>10.2f}{re_lines / re_s:>14,.0f}")


if __name__ == "__main__":
    main()
