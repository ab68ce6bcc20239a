"""``faultstream backtest``: replay recordings through the engine and print verdicts."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import orjson

if TYPE_CHECKING:
    from streams.backtest import BacktestResult

__all__ = ["add_parser"]


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("backtest", help="replay a recording through the engine, offline")
    parser.add_argument(
        "--input",
        "-i",
        type=Path,
        action="append",
        required=True,
        help="recording file (JSON Lines of topic records); repeat for several",
    )
    parser.add_argument("--rules", type=Path, default=None, help="rules directory (default: bundled)")
    parser.add_argument("--output", "-o", type=Path, default=None, help="write verdicts here, not stdout")
    parser.add_argument("--format", choices=("json", "table"), default="json")
    parser.add_argument("--all-revisions", action="store_true", help="every revision, not only the last")
    parser.add_argument("--grace", type=float, default=None, help="grace period for late lines, seconds")
    parser.add_argument(
        "--baseline",
        type=Path,
        default=None,
        help="baseline rules: print what --rules (default: bundled) changes against them, not verdicts",
    )
    parser.add_argument("--fail-on-change", action="store_true", help="with --baseline: exit 1 on any change")
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="processes for parsing and extraction (default: CPUs, at most 4)",
    )
    parser.set_defaults(handler=run_backtest)


def _check_inputs(paths: list[Path]) -> None:
    from streams.cli import UsageError

    for path in paths:
        if not path.is_file():
            raise UsageError(f"recording not found: {path}")


def run_backtest(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from correlator.settings import CorrelatorSettings
    from extractors.loader import load_ruleset
    from streams.backtest import backtest, default_workers, latest_revisions
    from streams.settings import load_settings
    from streams.verdict_table import verdict_table

    _check_inputs(args.input)
    ruleset = load_ruleset(args.rules)
    settings = (
        CorrelatorSettings()
        if args.grace is None
        else CorrelatorSettings(grace_s=args.grace, tail_s=min(args.grace, CorrelatorSettings.tail_s))
    )
    # the scheduler hosts are the site's, as the live pipeline has them (FAULTSTREAM_SCHEDULER_HOSTS)
    site = load_settings()
    cache_dir = site.matcher_cache_dir
    settings = replace(settings, scheduler_hosts=site.correlator_settings().scheduler_hosts)
    if args.baseline is not None:
        return _diff_against_baseline(args, ruleset, settings, cache_dir)
    out: TextIO = args.output.open("w", encoding="utf-8") if args.output else sys.stdout
    try:
        for path in args.input:
            workers = args.workers or default_workers(path.stat().st_size)
            result = backtest(path, ruleset, settings, workers=workers, matcher_cache_dir=cache_dir)
            verdicts = result.verdicts if args.all_revisions else latest_revisions(result.verdicts)
            if args.format == "table":
                out.write(verdict_table(verdicts) + "\n")
            else:
                for verdict in verdicts:
                    out.write(orjson.dumps(verdict.model_dump(mode="json")).decode() + "\n")
            _summary(path, result, ruleset.version)
    finally:
        if args.output:
            out.close()
    return 0


def _diff_against_baseline(args: argparse.Namespace, candidate, settings, matcher_cache_dir: Path) -> int:
    from extractors.loader import load_ruleset
    from streams.cli_replay import diff_recording, print_diff

    baseline = load_ruleset(args.baseline)
    changed = False
    for path in args.input:
        diff = diff_recording(path, baseline, candidate, settings, matcher_cache_dir)
        print_diff(diff, args.format == "json", f"{path}:")
        changed = changed or bool(diff.changes)
    return 1 if args.fail_on_change and changed else 0


def _summary(path: Path, result: BacktestResult, version: str) -> None:
    from streams.backtest import latest_revisions
    from streams.future_lines import AHEAD_LIMIT_MS, HOUR_MS

    engine = result.engine
    assert engine is not None
    stats = engine.stats
    rate = stats.lines / result.seconds if result.seconds else 0.0
    domains = {}
    for verdict in latest_revisions(result.verdicts):
        label = verdict.verdict.attribution_outcome
        domains[label] = domains.get(label, 0) + 1
    lines = [
        f"{path}: {result.records} records, {stats.lines} lines, {stats.job_events} job events, "
        f"{stats.symptoms} symptoms, {len(result.dead_letters)} dead letters, "
        f"{len(latest_revisions(result.verdicts))} verdicts ({stats.verdicts} revisions) "
        f"in {result.seconds:.2f}s ({rate:,.0f} lines/s), ruleset {version}",
    ]
    if domains:
        lines.append("  outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(domains.items())))
    for reason, count in result.dead_reasons.most_common(5):
        lines.append(f"  dead letter x{count}: {reason}")
    if engine.running():
        lines.append(f"  still running (no job end): {', '.join(engine.running()[:10])}")
    if stats.unplaced_symptoms:
        lines.append(f"  {stats.unplaced_symptoms} symptoms had neither a node nor a workload")
    if result.ahead_of_record:  # a node's clock far off, or forged times (streams/future_lines.py)
        lines.append(
            f"  {result.ahead_of_record} lines or job events more than {AHEAD_LIMIT_MS // HOUR_MS} h ahead of "
            "their record's time: event time took the record's"
        )
    print("\n".join(lines), file=sys.stderr)
