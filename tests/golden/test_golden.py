"""Golden recordings: each failure story, replayed by ``faultstream backtest``, gives its verdict.

Two checks per story: the hand-written expectation in ``story_book.py`` (what a person decided
the story means), and the whole verdict JSON against ``expected/<story>.json`` (so any change in
any field shows up in review). Regenerate the JSON with ``FAULTSTREAM_REGEN_GOLDEN=1`` and read
the diff before committing it.
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from correlator.settings import CorrelatorSettings
from streams.backtest import backtest, latest_revisions
from tests.golden.stories import BASE_MS, DAY_MS, RECORDINGS, SCHEDULER_HOSTS, STORIES

EXPECTED = Path(__file__).parent / "expected"
BUILT = {make.__name__: make(BASE_MS + i * DAY_MS) for i, make in enumerate(STORIES)}


def _verdict_json(verdict) -> dict:
    return orjson.loads(orjson.dumps(verdict.model_dump(mode="json")))


@pytest.mark.parametrize("name", sorted(BUILT))
def test_story_gives_its_expected_verdict(name, bundled_ruleset):
    story = BUILT[name]
    result = backtest(
        RECORDINGS / f"{name}.jsonl", bundled_ruleset, CorrelatorSettings(scheduler_hosts=SCHEDULER_HOSTS)
    )
    verdicts = latest_revisions(result.verdicts)
    assert len(verdicts) == 1, f"{name}: expected one verdict, got {[v.workload_id for v in verdicts]}"
    verdict = verdicts[0]
    expect = story.expect
    for field in (
        "terminal_state",
        "sub_domain",
        "responsible_nodes",
        "uncertainty_type",
        "cancellation_actor",
        "failure_domains",
    ):
        if field in expect:
            assert getattr(verdict, field) == expect[field], f"{name}: {field}"
    if "root_node" in expect:
        assert verdict.root_symptom is not None and verdict.root_symptom.node == expect["root_node"]
    if "root_line" in expect:
        assert expect["root_line"] in verdict.root_symptom.line
    if "dead_letters" in expect:
        assert len(result.dead_letters) == expect["dead_letters"]
    assert verdict.ruleset_version == bundled_ruleset.version
    _compare_whole_verdict(name, _verdict_json(verdict), bundled_ruleset.version)


def _compare_whole_verdict(name: str, actual: dict, version: str) -> None:
    path = EXPECTED / f"{name}.json"
    actual = {**actual, "ruleset_version": "<ruleset>"}  # rule edits must not churn every golden file
    if os.environ.get("FAULTSTREAM_REGEN_GOLDEN") == "1":
        EXPECTED.mkdir(exist_ok=True)
        path.write_bytes(orjson.dumps(actual, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
    assert path.exists(), f"no golden verdict for {name}; run with FAULTSTREAM_REGEN_GOLDEN=1 and review"
    assert actual == orjson.loads(path.read_bytes())


def test_recordings_are_exactly_what_the_story_builders_write(tmp_path):
    """The recordings are generated, never hand-edited: rebuilding them gives the same bytes."""
    from tests.golden.stories import write_all

    write_all(tmp_path)
    for name in BUILT:
        assert (tmp_path / f"{name}.jsonl").read_bytes() == (RECORDINGS / f"{name}.jsonl").read_bytes(), name


def test_worker_processes_do_not_change_any_verdict(bundled_ruleset, tmp_path):
    """Parsing and extraction in two processes, correlation in order here: same verdicts."""
    combined = tmp_path / "all.jsonl"
    combined.write_bytes(b"".join(p.read_bytes() for p in sorted(RECORDINGS.glob("*.jsonl"))))
    one = backtest(combined, bundled_ruleset, workers=1)
    two = backtest(combined, bundled_ruleset, workers=2)
    assert [_verdict_json(v) for v in one.verdicts] == [_verdict_json(v) for v in two.verdicts]
    assert len(latest_revisions(one.verdicts)) == len(BUILT)
    assert one.records == two.records and len(one.dead_letters) == len(two.dead_letters) == 3
