"""Incidents dumped from real topics (``faultstream dump --workload ID``) keep their verdicts.

Each ``incidents/NAME.jsonl`` is a recording as ``dump`` wrote it; ``NAME.expect.json`` says what
a person decided it means (docs/backtesting.md shows how to add one).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streams.backtest import backtest, latest_revisions

INCIDENTS = Path(__file__).parent / "incidents"
NAMES = sorted(p.name.removesuffix(".expect.json") for p in INCIDENTS.glob("*.expect.json"))
FIELDS = ("terminal_state", "sub_domain", "responsible_nodes", "uncertainty_type", "cancellation_actor")


def test_every_incident_recording_has_its_expectation():
    recordings = sorted(p.stem for p in INCIDENTS.glob("*.jsonl"))
    assert recordings == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_a_dumped_incident_gives_the_verdict_a_person_decided(name, bundled_ruleset):
    expect = json.loads((INCIDENTS / f"{name}.expect.json").read_text())
    verdicts = {
        v.workload_id: v
        for v in latest_revisions(backtest(INCIDENTS / f"{name}.jsonl", bundled_ruleset).verdicts)
    }
    verdict = verdicts[expect["workload_id"]]
    for field in FIELDS:
        if field in expect:
            assert getattr(verdict, field) == expect[field], f"{name}: {field}"
    if "root_rule" in expect:
        assert verdict.root_symptom is not None and verdict.root_symptom.rule_id == expect["root_rule"]
