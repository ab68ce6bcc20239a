"""``faultstream rules check|explain``: the rule author's tools."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson

from extractors.examples import check_examples
from extractors.explain import explain_line
from extractors.loader import Ruleset, load_ruleset
from extractors.matchers import HyperscanMatcher
from streams.settings import load_settings

__all__ = ["rules_check", "rules_explain"]


def rules_check(rules_dir: Path | None) -> int:
    ruleset = load_ruleset(rules_dir)
    results = check_examples(ruleset, _matcher(ruleset))
    failed = [r for r in results if not r.ok]
    for result in failed:
        print(f"FAIL {result.rule_id} [{result.kind}] {result.message}: {result.line}", file=sys.stderr)
    rules = len(ruleset.symptom_rules)
    print(
        f"ruleset {ruleset.name} {ruleset.version}: {rules} symptom rules, "
        f"{len(ruleset.refiners)} refiners, {len(results)} examples, {len(failed)} failed"
    )
    return 1 if failed else 0


def rules_explain(rules_dir: Path | None, line: str, source: str | None) -> int:
    matcher = _matcher(load_ruleset(rules_dir))
    hits = explain_line(matcher, line, source)
    for hit in hits:
        sys.stdout.write(orjson.dumps(hit).decode() + "\n")
    if not hits:
        print("no rule matches this line", file=sys.stderr)
    return 0


def _matcher(ruleset: Ruleset) -> HyperscanMatcher:
    return HyperscanMatcher(ruleset, load_settings().matcher_cache_dir)
