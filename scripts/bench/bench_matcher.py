"""Matcher throughput: batch Hyperscan vs the pure ``re`` reference, same lines, same run.

    python -m scripts.bench.bench_matcher [--lines 1000000] [--re-lines 20000] [--batch 5000]

Single core (the matcher is synchronous Python + Hyperscan). Prints lines/s side by side.
"""

from __future__ import annotations

import argparse
import time

from extractors.examples import ExampleLine
from extractors.loader import load_ruleset
from extractors.matchers import HyperscanMatcher, ReferenceMatcher
from scripts.bench.workload import lines
from streams.settings import load_settings


def _rate(matcher, batch: list, size: int) -> tuple[float, int]:
    started = time.perf_counter()
    found = 0
    for offset in range(0, len(batch), size):
        found += len(matcher.match_batch(batch[offset : offset + size]))
    return len(batch) / (time.perf_counter() - started), found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--re-lines", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=5000)
    args = parser.parse_args()
    ruleset = load_ruleset()
    batch = [ExampleLine(text=t, source=s, host=h, origin="b") for t, s, h in lines(args.lines)]
    fast, slow = HyperscanMatcher(ruleset, load_settings().matcher_cache_dir), ReferenceMatcher(ruleset)
    _rate(fast, batch[:10_000], args.batch)  # warm up
    hs_rate, hs_found = _rate(fast, batch, args.batch)
    per_line_rate, _ = _rate(fast, batch[: args.re_lines * 5], 1)
    re_rate, re_found = _rate(slow, batch[: args.re_lines], args.batch)
    hs_sub = len(fast.match_batch(batch[: args.re_lines]))
    print(
        f"ruleset {ruleset.version}: {len(ruleset.symptom_rules)} rules, "
        f"{sum(len(r.patterns) for r in ruleset.symptom_rules)} patterns"
    )
    print(f"{'matcher':<36}{'lines':>12}{'lines/s':>14}{'symptoms':>10}")
    print(f"{'hyperscan, batch of ' + str(args.batch):<36}{len(batch):>12,}{hs_rate:>14,.0f}{hs_found:>10,}")
    print(f"{'hyperscan, one scan per line':<36}{args.re_lines * 5:>12,}{per_line_rate:>14,.0f}{'':>10}")
    print(f"{'re reference (baseline)':<36}{args.re_lines:>12,}{re_rate:>14,.0f}{re_found:>10,}")
    print(
        f"batch hyperscan / re = {hs_rate / re_rate:,.1f}x   "
        f"(same symptoms on the re subset: {hs_sub == re_found})"
    )


if __name__ == "__main__":
    main()
