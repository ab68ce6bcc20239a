"""Shared fixture and timeline helpers of the correlator stories told on the bundled rules.

A story is a list of lines and scheduler records at seconds after T0, fed in event-time order to
one engine; its verdict is the latest revision once a late tick has closed every open job. Modules
on another ruleset (test_stories.py, test_unannounced_runs.py) or other settings (test_job_claims.py)
define their own ``engine`` fixture, which overrides this one.
"""

from __future__ import annotations

import pytest

from correlator.engine import AttributionEngine
from correlator.settings import CorrelatorSettings
from streams.records import JobEvent, LogLine

T0 = 1_714_557_600_000  # 2024-05-01T10:00:00Z


def at(seconds: float) -> int:
    return T0 + int(seconds * 1000)


def line(text: str, host: str, seconds: float, source: str = "applog") -> LogLine:
    return LogLine(text, host, at(seconds), source, f"story:{host}:{seconds}")


@pytest.fixture
def engine(bundled_ruleset, bundled_matcher) -> AttributionEngine:
    """A fresh engine per test; the Hyperscan matcher is the session's (compiling takes seconds)."""
    settings = CorrelatorSettings(grace_s=30, tail_s=30)
    return AttributionEngine(bundled_ruleset, settings, matcher=bundled_matcher)


def verdict_of(engine, lines: list[LogLine], events: list[JobEvent], tick_s: float = 100_000):
    """Feed the story in time order (scheduler records first at equal times), then let it close: a line
    on gpu001 at ``tick_s`` moves event time past every job's grace and tail."""
    timeline = sorted(
        [(ln.time_ms, 1, ln) for ln in lines] + [(e.time_ms, 0, e) for e in events], key=lambda x: (x[0], x[1])
    )
    verdicts = []
    for _, kind, item in timeline:
        verdicts += engine.feed([item], []) if kind else engine.feed([], [item])
    verdicts += engine.feed([line("tick", "gpu001", tick_s)], [])
    verdicts += engine.flush()
    assert verdicts, "no verdict"
    return max(verdicts, key=lambda v: v.revision)


def roles(verdict) -> dict[str, str]:
    return {element.symptom: element.role for element in verdict.chain}
