"""What a rule change does to verdicts: the same evidence judged by a baseline and a candidate.

Both runs are plain backtests of the same recording; this module only compares their results:
verdicts whose state, domain, responsible nodes or root symptom changed, verdicts only one run
gave, outcome counts before and after, per-rule hit counts before and after, and dead letters by
reason.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from correlator.verdict import Verdict

__all__ = ["Change", "RunSummary", "VerdictDiff", "diff_runs"]

RunKey = tuple[str, str | None]


def _key(verdict: Verdict) -> RunKey:
    return (verdict.workload_id, verdict.run_start)


def _facts(verdict: Verdict) -> dict[str, Any]:
    root = verdict.root_symptom
    return {
        "state": verdict.terminal_state,
        "domain": verdict.sub_domain,
        "nodes": list(verdict.responsible_nodes),
        "root": f"{root.symptom} ({root.rule_id})" if root else None,
    }


@dataclass(frozen=True)
class RunSummary:
    """What one backtest gave: its final verdicts, rule hits and dead letters."""

    ruleset_version: str
    verdicts: list[Verdict]
    by_rule: Counter
    dead_reasons: Counter

    def outcomes(self) -> Counter:
        return Counter(v.verdict.attribution_outcome for v in self.verdicts)


@dataclass(frozen=True)
class Change:
    workload_id: str
    run_start: str | None
    before: dict[str, Any] | None  # None: only the candidate gave a verdict
    after: dict[str, Any] | None  # None: only the baseline did

    def fields(self) -> list[str]:
        if self.before is None or self.after is None:
            return ["verdict"]
        return [name for name in self.before if self.before[name] != self.after[name]]

    def to_dict(self) -> dict[str, Any]:
        return {
            "workload_id": self.workload_id,
            "run_start": self.run_start,
            "changed": self.fields(),
            "before": self.before,
            "after": self.after,
        }


@dataclass
class VerdictDiff:
    baseline: RunSummary
    candidate: RunSummary
    changes: list[Change] = field(default_factory=list)
    unchanged: int = 0
    partial: list[str] = field(default_factory=list)  # workloads whose window began before the read

    def to_dict(self) -> dict[str, Any]:
        rules = sorted(set(self.baseline.by_rule) | set(self.candidate.by_rule))
        return {
            "baseline_ruleset": self.baseline.ruleset_version,
            "candidate_ruleset": self.candidate.ruleset_version,
            "verdicts": {"baseline": len(self.baseline.verdicts), "candidate": len(self.candidate.verdicts)},
            "unchanged": self.unchanged,
            "changed": [change.to_dict() for change in self.changes],
            "outcomes": _before_after(self.baseline.outcomes(), self.candidate.outcomes()),
            "rule_hits": {
                rule: {"before": self.baseline.by_rule[rule], "after": self.candidate.by_rule[rule]}
                for rule in rules
                if self.baseline.by_rule[rule] != self.candidate.by_rule[rule]
            },
            "dead_letters": _before_after(self.baseline.dead_reasons, self.candidate.dead_reasons),
            "partial": self.partial,
        }


def _before_after(before: Counter, after: Counter) -> dict[str, dict[str, int]]:
    return {name: {"before": before[name], "after": after[name]} for name in sorted(set(before) | set(after))}


def diff_runs(baseline: RunSummary, candidate: RunSummary) -> VerdictDiff:
    old = {_key(v): v for v in baseline.verdicts}
    new = {_key(v): v for v in candidate.verdicts}
    diff = VerdictDiff(baseline, candidate)
    for key in sorted(old.keys() | new.keys(), key=lambda k: (k[0], k[1] or "")):
        before = _facts(old[key]) if key in old else None
        after = _facts(new[key]) if key in new else None
        if before == after:
            diff.unchanged += 1
        else:
            diff.changes.append(Change(key[0], key[1], before, after))
    return diff
