"""Every rule pattern stays fast on hostile lines in the ``re`` confirm step.

Hyperscan finds candidates in linear time; ``re`` then confirms and captures on the one line, and
``re`` backtracks. A line crafted to contain a rule's literal part after kilobytes of filler must
cost milliseconds, not seconds, or whoever can write a log line can stall the extractor.
"""

from __future__ import annotations

import time

import pytest

from extractors.compiled import CONFIRM_CHARS, CompiledRule, compile_rules
from extractors.matchers import ReferenceMatcher
from streams.records import LogLine

#: Per pattern and hostile line, on CI's busy two cores (a linear pattern takes well under 1 ms).
BUDGET_S = 0.08


def hostile_lines(compiled: CompiledRule) -> list[str]:
    """Filler that keeps a backtracking engine busy, around and inside the rule's own examples."""
    n = CONFIRM_CHARS
    lines = ["a" * n, " " * n + "x", "0" * n, "ab " * (n // 3), ":" * n, "a[1]" * (n // 4), "=" * n]
    for example in [e.line for e in compiled.rule.examples.match][:2]:
        middle = example[len(example) // 3 : 2 * len(example) // 3] or example
        repeated = example[: len(example) // 2] + middle * (n // len(middle))
        lines += [repeated, "x" * (n - len(example)) + example]
    return [line[:n] for line in lines]


def slowest(compiled: CompiledRule) -> tuple[float, str]:
    worst = (0.0, "")
    for line in hostile_lines(compiled):
        for program in (*compiled.include, *compiled.exclude):
            started = time.perf_counter()
            program.search(line)
            worst = max(worst, (time.perf_counter() - started, program.pattern))
    return worst


def test_no_pattern_backtracks_for_long_on_a_hostile_line(bundled_ruleset):
    slow = []
    for compiled in compile_rules(bundled_ruleset):
        seconds, pattern = slowest(compiled)
        if seconds > BUDGET_S:
            slowest_again, _ = slowest(compiled)  # the machine may just have been busy
            if slowest_again > BUDGET_S:
                slow.append(f"{compiled.rule.id}: {min(seconds, slowest_again) * 1000:.0f} ms: {pattern}")
    assert not slow, "\n".join(slow)


@pytest.mark.parametrize("size", [1 << 20, 20 << 20])
def test_a_giant_line_is_confirmed_on_its_head_only(bundled_ruleset, size):
    head = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off the bus."
    line = LogLine(head + " " + "A" * size, "gpu001", 0, "dmesg", "t")
    started = time.perf_counter()
    found = ReferenceMatcher(bundled_ruleset).extract_batch([line])
    assert "gpu.xid.79" in {s.rule_id for s in found}
    assert time.perf_counter() - started < 10
