"""What a backtest worker spends per line, stage by stage, in one process (CPU time):

    python -m scripts.bench.backtest_stages [--nodes 1250] [--lines 200000] [--profile]

On a storm recording (scripts/bench/workload.py): normalizing each 1 MiB block
(``streams.backtest._normalize``), extraction (``extract_batch`` and the claim check), collapsing,
pickling the batch's result as the pool hands it to the main process, and unpickling it there.
The second pass over the blocks is measured (the first warms caches and the matcher).
``--profile`` adds cProfile's top functions of one more pass.
"""

from __future__ import annotations

import argparse
import cProfile
import pickle
import pstats
import tempfile
import time
from collections import Counter
from pathlib import Path

from correlator.batching import collapse_batch
from extractors.loader import load_ruleset
from scripts.bench.workload import write_storm_recording
from streams import backtest


def _stages(blocks: list[tuple[int, bytes]]) -> tuple[Counter, int]:
    """CPU seconds per stage over all blocks, and the lines they made."""
    spent: Counter = Counter()
    lines_made = 0
    assert backtest._MATCHER is not None
    for first, block in blocks:
        started = time.process_time()
        marks = backtest._Marks()
        records, lines, events, dead = backtest._normalize(
            first, block, backtest._REFERENCE_MS, marks, backtest._PICK_LINE
        )
        normalized = time.process_time()
        symptoms = backtest._CLAIMS.keep_own_nodes(backtest._MATCHER.extract_batch(lines))
        extracted = time.process_time()
        batch = collapse_batch(lines, symptoms)
        collapsed = time.process_time()
        latest = max((line.time_ms for line in lines), default=None)
        by_rule = Counter(s.rule_id for s in symptoms)
        result = backtest._Extracted(records, len(lines), events, batch, latest, dead, by_rule, marks)
        blob = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
        pickled = time.process_time()
        pickle.loads(blob)
        unpickled = time.process_time()
        spent["normalize"] += normalized - started
        spent["extract"] += extracted - normalized
        spent["collapse"] += collapsed - extracted
        spent["pickle (worker)"] += pickled - collapsed
        spent["unpickle (main)"] += unpickled - pickled
        lines_made += len(lines)
    return spent, lines_made


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1250)
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--profile", action="store_true", help="also cProfile one more pass")
    args = parser.parse_args()
    path = Path(tempfile.mkdtemp()) / "storm.jsonl"
    write_storm_recording(path, args.nodes, args.lines)
    ruleset = load_ruleset()
    backtest._worker_init(backtest._WorkerSetup(ruleset, reference_ms=backtest.recording_time_ms(path)))
    blocks = list(backtest._raw_blocks(path, backtest.BATCH_BYTES))
    _stages(blocks)
    spent, lines = _stages(blocks)
    total = sum(spent.values())
    print(f"compiled picker: {'on' if backtest._PICK_LINE is not None else 'off (pure Python path)'}")
    for stage, seconds in spent.items():
        print(f"{stage:<18}{seconds:>8.2f} s{seconds / total:>7.1%}{seconds * 1e6 / lines:>8.2f} µs/line")
    print(f"{'total':<18}{total:>8.2f} s  {lines:,} lines: {lines / total:,.0f} lines per CPU s")
    if args.profile:
        profile = cProfile.Profile()
        profile.runcall(_stages, blocks)
        pstats.Stats(profile).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
