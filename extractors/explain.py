"""``faultstream rules explain``: which rules fire on one line, and what they capture."""

from __future__ import annotations

from extractors.compiled import job_reference
from extractors.matchers import HyperscanMatcher
from extractors.rule_model import SOURCES

__all__ = ["explain_line"]


def explain_line(matcher: HyperscanMatcher, text: str, source: str | None = None) -> list[dict]:
    """Every rule that fires on ``text`` for ``source`` (all sources when ``None``)."""
    hits: list[dict] = []
    wanted = [source] if source else list(SOURCES)
    for compiled in matcher.rules:
        sources = [s for s in wanted if s in compiled.sources]
        if not sources:
            continue
        captures = compiled.confirm(text)
        if captures is None:
            continue
        rule = compiled.rule
        hits.append(
            {
                "rule_id": rule.id,
                "symptom": rule.symptom,
                "domain": rule.domain,
                "role": rule.role,
                "priority": rule.priority,
                "catalog_id": rule.catalog_id,
                "sources": sources,
                "captures": captures,
                "job": job_reference(text),
            }
        )
    return hits
