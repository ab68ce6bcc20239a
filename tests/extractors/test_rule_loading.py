"""A broken rule fails the load with its file, line, rule id and the engine's own message."""

from __future__ import annotations

import shutil

import pytest

from extractors.hyperscan_db import cache_file
from extractors.loader import RuleError, load_ruleset
from extractors.matchers import HyperscanMatcher
from streams.records import LogLine
from tests.conftest import REPO, write_ruleset

GOOD = """schema: symptom-rule/v1
id: t.good
title: A good rule
status: test
description: d
why: w
domain: hardware
symptom: good_symptom
priority: 60
patterns: ['GOOD (?P<n>[0-9]+)']
examples:
  match: [{line: "GOOD 1", captures: {n: "1"}}]
  no_match: ["BAD 1"]
"""


def test_a_valid_ruleset_has_a_version_made_of_semver_and_content_hash(tmp_path):
    write_ruleset(tmp_path, {"ruleset.yaml": "name: x\nversion: 1.2.3\n", "symptoms/t/t.good.yaml": GOOD})
    ruleset = load_ruleset(tmp_path)
    assert ruleset.version.startswith("1.2.3+") and len(ruleset.digest) == 12
    (tmp_path / "symptoms/t/t.good.yaml").write_text(GOOD.replace("priority: 60", "priority: 61"))
    assert load_ruleset(tmp_path).version != ruleset.version


def test_the_compiled_database_is_kept_in_the_directory_the_caller_names(tmp_path):
    ruleset = load_ruleset(write_ruleset(tmp_path / "rules", {"symptoms/t/t.good.yaml": GOOD}))
    cache_dir = tmp_path / "hsdb"
    HyperscanMatcher(ruleset, cache_dir)
    assert [path.name for path in cache_dir.iterdir()] == [cache_file(cache_dir, ruleset).name]
    # the next process loads it from there and matches as the compiled one did
    loaded = HyperscanMatcher(ruleset, cache_dir)
    [symptom] = loaded.extract_batch([LogLine("GOOD 7", "gpu001", 1, "syslog", "o")])
    assert symptom.captures == {"n": "7"}


def test_unknown_key_is_reported_with_file_and_line(tmp_path):
    write_ruleset(
        tmp_path, {"symptoms/t/t.good.yaml": GOOD.replace("priority: 60", "priority: 60\nseverity: x")}
    )
    with pytest.raises(RuleError) as caught:
        load_ruleset(tmp_path)
    problem = caught.value.problems[0]
    assert problem.path.endswith("t.good.yaml") and problem.line == 10 and problem.rule_id == "t.good"
    assert "severity" in problem.message


def test_every_problem_in_every_file_is_reported_at_once(tmp_path):
    write_ruleset(
        tmp_path,
        {
            "symptoms/t/t.good.yaml": GOOD.replace("domain: hardware", "domain: cosmic"),
            "symptoms/t/t.other.yaml": GOOD.replace("t.good", "t.other").replace(
                "priority: 60", "priority: 600"
            ),
        },
    )
    with pytest.raises(RuleError) as caught:
        load_ruleset(tmp_path)
    assert {p.rule_id for p in caught.value.problems} == {"t.good", "t.other"}


def test_file_name_must_equal_the_rule_id(tmp_path):
    write_ruleset(tmp_path, {"symptoms/t/wrong-name.yaml": GOOD})
    with pytest.raises(RuleError, match="file name must equal the rule id"):
        load_ruleset(tmp_path)


def test_capture_used_as_entity_must_be_a_named_group(tmp_path):
    write_ruleset(
        tmp_path, {"symptoms/t/t.good.yaml": GOOD.replace("priority: 60", "priority: 60\nentity: [pci]")}
    )
    with pytest.raises(RuleError, match="'pci' is not a named group"):
        load_ruleset(tmp_path)


def test_stable_rule_without_no_match_example_is_refused(tmp_path):
    broken = GOOD.replace("status: test", "status: stable").replace('  no_match: ["BAD 1"]\n', "")
    write_ruleset(tmp_path, {"symptoms/t/t.good.yaml": broken})
    with pytest.raises(RuleError, match="needs at least one 'match' and one 'no_match'"):
        load_ruleset(tmp_path)


def test_a_pattern_hyperscan_refuses_names_rule_file_and_hyperscan_message(tmp_path):
    lookahead = GOOD.replace("'GOOD (?P<n>[0-9]+)'", "'GOOD(?=x) (?P<n>[0-9]+)'")
    write_ruleset(tmp_path, {"symptoms/t/t.good.yaml": lookahead})
    ruleset = load_ruleset(tmp_path)
    with pytest.raises(RuleError) as caught:
        HyperscanMatcher(ruleset)
    text = str(caught.value)
    assert "t.good.yaml" in text and "[t.good]" in text and "Hyperscan:" in text


def test_refiner_naming_an_unknown_symptom_is_refused(tmp_path):
    refiner = """schema: refiner/v1
id: r.x
title: t
description: d
why: w
target: {symptoms: [no_such_symptom]}
cause: {}
set_role: downstream
"""
    write_ruleset(tmp_path, {"symptoms/t/t.good.yaml": GOOD, "refiners/r.x.yaml": refiner})
    with pytest.raises(RuleError, match="unknown symptom 'no_such_symptom'"):
        load_ruleset(tmp_path)


def test_a_ruleset_that_needs_a_newer_engine_is_refused_with_its_reason(tmp_path):
    rules = tmp_path / "rules"
    shutil.copytree(REPO / "rules", rules)
    meta = rules / "ruleset.yaml"
    meta.write_text(meta.read_text().replace('engine: ">=0.1"', 'engine: ">=99"'))
    with pytest.raises(RuleError) as error:
        load_ruleset(rules)
    assert f"{meta}: requires.engine: this ruleset needs faultstream >=99, found" in str(error.value)
