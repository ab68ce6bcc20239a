"""``faultstream replay`` and ``faultstream dump``: backtest a rule change on the live topics.

``replay`` reads a time range of the raw ingest topics (no consumer group, nothing committed),
writes it as a recording, backtests it with the baseline and the candidate rules, and prints what
changed; ``--fail-on-change`` makes it a rules repository's CI gate. ``dump`` writes the range, or
one workload's records and its nodes' lines in its window, as a recording.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

if TYPE_CHECKING:
    from extractors.loader import Ruleset
    from streams.verdict_diff import RunSummary, VerdictDiff

__all__ = ["add_parsers", "parse_time_ms", "print_diff", "summarize"]

_RELATIVE = re.compile(r"^-?(\d+(?:\.\d+)?)([smhd])(?: ago)?$")
_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_time_ms(text: str, now_ms: int) -> int:
    """``now``; ``7d`` / ``3h`` / ``30m`` / ``10s`` before now (also ``-7d``, ``7d ago``); an RFC 3339
    time; or epoch ms."""
    from streams.cli import UsageError
    from streams.normalize.times import rfc3339_ms

    if text == "now":
        return now_ms
    relative = _RELATIVE.match(text)
    if relative:
        return now_ms - int(float(relative.group(1)) * _UNIT_MS[relative.group(2)])
    if text.isdigit():
        return int(text)
    stamp = rfc3339_ms(text)
    if stamp is None:
        raise UsageError(f"not a time: {text!r} (use RFC 3339, epoch ms, now, or 7d / 3h / 30m ago)")
    return stamp


def add_parsers(commands: argparse._SubParsersAction) -> None:
    replay = commands.add_parser("replay", help="backtest a rule change on a time range of the live topics")
    _range_args(replay)
    replay.add_argument("--rules", type=Path, default=None, help="candidate rules (default: bundled)")
    replay.add_argument("--baseline", type=Path, default=None, help="baseline rules (default: bundled)")
    replay.add_argument(
        "--readback", default="6h", help="read this much before --since so windows are complete (6h)"
    )
    replay.add_argument("--json", action="store_true", help="the diff as JSON (no progress)")
    replay.add_argument("--fail-on-change", action="store_true", help="exit 1 when any verdict changed")
    replay.add_argument("--keep", type=Path, default=None, help="also keep the range as this recording")
    replay.set_defaults(handler=run_replay)
    dump = commands.add_parser("dump", help="write a time range (or one workload) as a recording")
    _range_args(dump)
    dump.add_argument("--workload", default=None, help="only this workload's records and its nodes' lines")
    dump.add_argument("--output", "-o", type=Path, required=True)
    dump.set_defaults(handler=run_dump)


def _range_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--since", required=True, help="RFC 3339, epoch ms, or a duration ago: 7d, 3h, 30m")
    parser.add_argument("--until", default="now")
    parser.add_argument("--config", type=Path, default=None, help="YAML config file (docs/operations.md)")


def _span(args: argparse.Namespace):
    from streams.normalize.times import now_ms
    from streams.topic_range import TimeRange

    now = now_ms()
    return TimeRange(parse_time_ms(args.since, now), parse_time_ms(args.until, now))


def summarize(result, ruleset: Ruleset) -> RunSummary:
    from streams.backtest import latest_revisions
    from streams.verdict_diff import RunSummary

    assert result.engine is not None
    return RunSummary(ruleset.version, latest_revisions(result.verdicts), result.engine.stats.by_rule,
                      result.dead_reasons)  # fmt: skip


def run_replay(args: argparse.Namespace) -> int:
    from extractors.loader import load_ruleset
    from streams.range_dump import dump_range
    from streams.settings import load_settings
    from streams.topic_range import TimeRange

    settings = load_settings(args.config)
    span = _span(args)
    readback = span.since_ms - parse_time_ms(args.readback, span.since_ms)
    read = TimeRange(span.since_ms - readback, span.until_ms)
    with tempfile.TemporaryDirectory(prefix="faultstream-replay-") as scratch:
        recording = args.keep or Path(scratch) / "range.jsonl"
        quiet = False if args.json else None  # progress only on a terminal, never with --json
        dumped = asyncio.run(dump_range(settings, read, recording, show_progress=quiet, inner=span))
        baseline, candidate = load_ruleset(args.baseline), load_ruleset(args.rules)
        diff = diff_recording(
            recording, baseline, candidate, settings.correlator_settings(), settings.matcher_cache_dir
        )
    # runs that ended in [since, until): in event time, which for records replayed by
    # `faultstream load` is the recorded time, not the Kafka timestamp the range selects on
    ended = dumped.inner_event_span or span
    _keep_ended_in(diff, ended, dumped.event_span or read, settings.correlator_settings().lookback_s)
    print_diff(
        diff, args.json, f"{dumped.records:,} records read, {_iso(read.since_ms)} .. {_iso(read.until_ms)}"
    )
    return 1 if args.fail_on_change and diff.changes else 0


def diff_recording(
    recording: Path, baseline: Ruleset, candidate: Ruleset, settings, matcher_cache_dir: Path | None
) -> VerdictDiff:
    from streams.backtest import backtest
    from streams.verdict_diff import diff_runs

    before = summarize(backtest(recording, baseline, settings, matcher_cache_dir=matcher_cache_dir), baseline)
    after = summarize(backtest(recording, candidate, settings, matcher_cache_dir=matcher_cache_dir), candidate)
    return diff_runs(before, after)


def _keep_ended_in(diff: VerdictDiff, span, read, lookback_s: float) -> None:
    """Report runs that ended in [since, until); mark those whose window began before the read."""
    from streams.normalize.times import rfc3339_ms as parse_iso_ms

    def ended_in(verdict) -> bool:
        end = parse_iso_ms(verdict.job.end) if verdict.job.end else None
        return end is not None and span.holds(end)

    for summary in (diff.baseline, diff.candidate):
        summary.verdicts[:] = [v for v in summary.verdicts if ended_in(v)]
    kept = {(v.workload_id, v.run_start) for s in (diff.baseline, diff.candidate) for v in s.verdicts}
    diff.changes = [c for c in diff.changes if (c.workload_id, c.run_start) in kept]
    diff.unchanged = len(kept) - len(diff.changes)
    earliest = read.since_ms + int(lookback_s * 1000)
    diff.partial = sorted(
        {
            v.workload_id
            for v in diff.candidate.verdicts
            if v.job.start is None or parse_iso_ms(v.job.start) < earliest
        }
    )


def _iso(ms: int) -> str:
    from correlator.timefmt import iso

    return iso(ms)


def print_diff(diff: VerdictDiff, as_json: bool, header: str) -> None:
    data = diff.to_dict()
    if as_json:
        sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")
        return
    out = [header, f"rules: {data['baseline_ruleset']} -> {data['candidate_ruleset']}",
           f"verdicts: {data['verdicts']['baseline']} -> {data['verdicts']['candidate']}, "
           f"{data['unchanged']} unchanged, {len(data['changed'])} changed"]  # fmt: skip
    out += [_change_line(change) for change in data["changed"]]
    out.append("outcomes (before -> after):")
    out += [f"  {name}: {c['before']} -> {c['after']}" for name, c in data["outcomes"].items()]
    if data["rule_hits"]:
        out.append("rule hits that changed:")
        out += [f"  {rule}: {c['before']} -> {c['after']}" for rule, c in data["rule_hits"].items()]
    new_dead = {k: c for k, c in data["dead_letters"].items() if c["after"] > c["before"]}
    if new_dead:
        out.append("new dead letters:")
        out += [f"  {reason}: {c['before']} -> {c['after']}" for reason, c in new_dead.items()]
    if data["partial"]:
        out.append("partial (window began before the read; raise --readback): " + ", ".join(data["partial"]))
    sys.stdout.write("\n".join(out) + "\n")


def _change_line(change: dict) -> str:
    where = f"  {change['workload_id']} ({change['run_start'] or '-'}): "
    before, after = change["before"], change["after"]
    if before is None or after is None:
        return where + ("new verdict: " if before is None else "verdict gone: ") + str(after or before)
    return where + "; ".join(f"{name} {before[name]} -> {after[name]}" for name in change["changed"])


def run_dump(args: argparse.Namespace) -> int:
    from streams.range_dump import dump_range, find_workload
    from streams.settings import load_settings

    settings = load_settings(args.config)
    span = _span(args)
    workload = None
    if args.workload:
        workload = asyncio.run(find_workload(settings, span, args.workload))
        if workload.end_ms is None and workload.start_ms is None:
            from streams.cli import UsageError

            raise UsageError(f"no scheduler record of workload {args.workload} in that range")
        span = workload.span(settings.correlator_settings(), span)
    result = asyncio.run(dump_range(settings, span, args.output, workload))
    topics = ", ".join(f"{t} {n}" for t, n in sorted(result.by_topic.items())) or "nothing"
    print(f"{args.output}: {result.records} records ({topics}) from {_iso(span.since_ms)} to "
          f"{_iso(span.until_ms)}", file=sys.stderr)  # fmt: skip
    return 0
