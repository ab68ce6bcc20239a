"""Run every rule's embedded examples through both matchers (``faultstream rules check``)."""

from __future__ import annotations

from dataclasses import dataclass

from extractors.loader import Ruleset
from extractors.matchers import HyperscanMatcher, ReferenceMatcher
from extractors.rule_model import Example, SymptomRule
from extractors.symptom import Symptom

__all__ = ["ExampleLine", "ExampleResult", "check_examples", "example_line"]


@dataclass(slots=True)
class ExampleLine:
    """A :class:`LineLike` made from a rule example (host ``example-node``, time 0)."""

    text: str
    source: str
    host: str | None = "example-node"
    time_ms: int = 0
    workload_id: str | None = None
    origin: str = "example"


@dataclass(frozen=True)
class ExampleResult:
    rule_id: str
    kind: str  # "match" | "no_match"
    line: str
    ok: bool
    message: str


def example_line(rule: SymptomRule, example: Example, index: int = 0) -> ExampleLine:
    source = example.source or rule.sources[0]
    return ExampleLine(text=example.line, source=source, origin=f"example:{index}")


def _judge(rule: SymptomRule, kind: str, example: Example, fired: list[Symptom]) -> ExampleResult:
    mine = [s for s in fired if s.rule_id == rule.id]
    if kind == "no_match":
        ok = not mine
        return ExampleResult(rule.id, kind, example.line, ok, "" if ok else "matched but must not")
    if not mine:
        return ExampleResult(rule.id, kind, example.line, False, "did not match")
    got = mine[0].captures
    wrong = {k: (v, got.get(k)) for k, v in example.captures.items() if got.get(k) != v}
    message = "; ".join(f"capture {k}: expected {v!r}, got {g!r}" for k, (v, g) in wrong.items())
    return ExampleResult(rule.id, kind, example.line, not wrong, message)


def check_examples(ruleset: Ruleset, hyperscan: HyperscanMatcher | None = None) -> list[ExampleResult]:
    """One result per example; Hyperscan and ``re`` must also agree on every example line."""
    fast = hyperscan or HyperscanMatcher(ruleset)
    slow = ReferenceMatcher(ruleset)
    cases = [
        (rule, kind, ex)
        for rule in ruleset.symptom_rules
        for kind in ("match", "no_match")
        for ex in getattr(rule.examples, kind)
    ]
    lines = [example_line(rule, ex, i) for i, (rule, _, ex) in enumerate(cases)]
    fast_hits = _by_line(fast.extract_batch(lines))
    slow_hits = _by_line(slow.extract_batch(lines))
    results = []
    for index, (rule, kind, ex) in enumerate(cases):
        result = _judge(rule, kind, ex, fast_hits.get(index, []))
        if _keys(fast_hits.get(index, [])) != _keys(slow_hits.get(index, [])):
            result = ExampleResult(rule.id, kind, ex.line, False, "Hyperscan and re disagree")
        results.append(result)
    return results


def _by_line(symptoms: list[Symptom]) -> dict[int, list[Symptom]]:
    out: dict[int, list[Symptom]] = {}
    for symptom in symptoms:
        out.setdefault(int(symptom.origin.split(":")[1]), []).append(symptom)
    return out


def _keys(symptoms: list[Symptom]) -> list[tuple[str, tuple]]:
    return [(s.rule_id, tuple(sorted(s.captures.items()))) for s in symptoms]
