"""Every rule's own examples, one test each (``rule-id::kind::n``), through both matchers."""

from __future__ import annotations

import pytest

from extractors.examples import check_examples
from extractors.loader import load_ruleset
from extractors.matchers import HyperscanMatcher
from streams.settings import DEFAULT_MATCHER_CACHE_DIR
from tests.conftest import REPO

_RULESET = load_ruleset(REPO / "rules")
_RESULTS = check_examples(_RULESET, HyperscanMatcher(_RULESET, DEFAULT_MATCHER_CACHE_DIR))


def _id(index: int) -> str:
    result = _RESULTS[index]
    return f"{result.rule_id}::{result.kind}::{index}"


@pytest.mark.parametrize("index", range(len(_RESULTS)), ids=_id)
def test_rule_example(index):
    result = _RESULTS[index]
    assert result.ok, f"{result.rule_id} [{result.kind}] {result.message}: {result.line}"


def test_ruleset_has_at_least_sixty_rules_across_the_families():
    families = {r.id.split(".")[0] for r in _RULESET.symptom_rules}
    assert len(_RULESET.symptom_rules) >= 60
    assert {"gpu", "network", "kernel", "storage", "app", "scheduler"} <= families


def test_every_stable_rule_has_positive_and_negative_examples():
    for rule in _RULESET.symptom_rules:
        if rule.status in ("stable", "test"):
            assert rule.examples.match and rule.examples.no_match, rule.id


def test_the_checked_in_rule_catalog_is_what_the_rules_say():
    from extractors.catalog import render_catalog

    catalog = (REPO / "docs" / "rule-catalog.md").read_text(encoding="utf-8")
    assert catalog == render_catalog(_RULESET), (
        "regenerate: python -m extractors.catalog > docs/rule-catalog.md"
    )
