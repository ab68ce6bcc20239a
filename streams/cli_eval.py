"""``faultstream eval``: accuracy of the engine on labelled real lines, per family."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

if TYPE_CHECKING:
    from streams.evaluation import EvaluationReport

__all__ = ["add_parser"]

DEFAULT_LABELS = Path(__file__).resolve().parents[1] / "tests" / "corpus"


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("eval", help="accuracy on labelled real lines (recognition, domain)")
    parser.add_argument(
        "--labels",
        type=Path,
        action="append",
        default=None,
        help="labels file or directory of *.jsonl; repeat for several (default: tests/corpus)",
    )
    parser.add_argument("--split", choices=("dev", "test", "all"), default="all")
    parser.add_argument("--family", action="append", default=[], help="only this family; repeatable")
    parser.add_argument("--rules", type=Path, default=None, help="rules directory (default: bundled)")
    parser.add_argument("--misses", action="store_true", help="list every row the engine got wrong")
    parser.add_argument(
        "--cascades",
        action="store_true",
        help="also judge each failure line amid seven survivors' NCCL / PyTorch noise on other nodes",
    )
    parser.add_argument("--json", action="store_true", help="figures (and misses) as JSON")
    parser.set_defaults(handler=run_eval)


def run_eval(args: argparse.Namespace) -> int:
    from extractors.loader import load_ruleset
    from streams.cli import UsageError
    from streams.evaluation import LabelError, evaluate, load_labels
    from streams.settings import load_settings

    try:
        rows = load_labels(args.labels or [DEFAULT_LABELS])
    except LabelError as exc:
        raise UsageError(f"invalid labels:\n{exc}") from None
    ruleset, cache_dir = load_ruleset(args.rules), load_settings().matcher_cache_dir
    report = evaluate(rows, ruleset, args.split, args.family, args.cascades, matcher_cache_dir=cache_dir)
    if args.json:
        data = report.to_dict() | {"split": args.split}
        if args.misses:
            data["misses"] = [o.to_dict() for o in report.misses()]
            data["cascade_misses"] = [o.to_dict() for o in report.cascade_misses()]
        sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        sys.stdout.write(_table(report, args.split))
        if report.cascades:
            sys.stdout.write(_cascade_table(report))
        if args.misses:
            sys.stdout.write(_misses(report))
    return 0


def _row(name: str, f) -> str:
    return (
        f"{name:<22}{f.failures:>6}{f.recognized_pct:>8.1f}{f.with_domain:>7}{f.domain_pct:>8.1f}"
        f"{f.false_hardware:>8}{f.healthy:>8}{f.benign_false_positives:>7}\n"
    )


def _table(report: EvaluationReport, split: str) -> str:
    out = [f"split: {split}\n", f"{'FAMILY':<22}{'LINES':>6}{'RECOG%':>8}{'DOM_N':>7}{'DOMAIN%':>8}"
           f"{'FALSE_HW':>8}{'HEALTHY':>8}{'BEN_FP':>7}\n"]  # fmt: skip
    out += [_row(name, figures) for name, figures in sorted(report.by_family.items())]
    out.append(_row("TOTAL", report.total))
    if report.confusion:
        out.append("\ndomain confusion (expected -> got: rows)\n")
        out += [f"  {e:<16} -> {g:<16} {n}\n" for (e, g), n in sorted(report.confusion.items()) if e != g]
    return "".join(out)


def _cascade_table(report: EvaluationReport) -> str:
    out = ["\ncascades: each failure line on its node, seven survivors' noise on others\n",
           f"{'FAMILY':<22}{'STORIES':>8}{'RIGHT%':>8}{'PEER_BLAMED':>12}{'FALSE_HW':>9}\n"]  # fmt: skip
    for name, f in sorted(report.cascade_figures().items(), key=lambda kv: (kv[0] == "TOTAL", kv[0])):
        pct = 100.0 * f["right"] / f["stories"] if f["stories"] else 100.0
        out.append(f"{name:<22}{f['stories']:>8}{pct:>8.1f}{f['blamed_peer']:>12}{f['false_hardware']:>9}\n")
    return "".join(out)


def _misses(report: EvaluationReport) -> str:
    out = ["\nmisses\n"]
    for o in report.misses():
        what = "not recognized" if o.row.label != "benign" and not o.recognized else ""
        if o.row.label == "benign":
            what = f"benign hit {','.join(o.rules)}"
        elif o.recognized and o.row.known_domain and not o.right_domain:
            what = f"domain {o.domain} != {o.row.domain} ({','.join(o.rules)})"
        out.append(f"  [{o.row.split}] {o.row.id}: {what}{' ' + o.problem if o.problem else ''}\n")
        out.append(f"      {o.row.line[:220]}\n")
    for o in report.cascade_misses():
        peer = ", a survivor blamed" if o.blamed_peer else ""
        out.append(f"  [{o.row.split}] cascade {o.row.id}: domain {o.domain} != {o.row.domain}{peer}\n")
    return "".join(out)
