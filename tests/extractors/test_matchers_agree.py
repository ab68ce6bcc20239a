"""The batch Hyperscan matcher and the pure ``re`` reference give identical symptoms."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extractors.examples import ExampleLine
from extractors.matchers import ReferenceMatcher
from extractors.rule_model import SOURCES

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "real-lines.jsonl"


@pytest.fixture(scope="module")
def matchers(bundled_ruleset, bundled_matcher):
    return bundled_matcher, ReferenceMatcher(bundled_ruleset)


def _key(found):
    return [(i, s.rule_id, tuple(sorted(s.captures.items())), s.entity) for i, s in found]


def _lines(texts, source="syslog"):
    return [ExampleLine(text=t, source=source, origin=f"t:{i}") for i, t in enumerate(texts)]


def _all_examples(ruleset) -> list[tuple[str, str]]:
    out = []
    for rule in ruleset.symptom_rules:
        for example in [*rule.examples.match, *rule.examples.no_match]:
            out.append((example.line, example.source or rule.sources[0]))
    return out


def test_matchers_agree_on_every_rule_example_in_one_batch(matchers, bundled_ruleset):
    fast, slow = matchers
    examples = _all_examples(bundled_ruleset)
    lines = [ExampleLine(text=t, source=s, origin=f"e:{i}") for i, (t, s) in enumerate(examples)]
    assert _key(fast.match_batch(lines)) == _key(slow.match_batch(lines))


#: Envelopes real lines arrive in: syslog with a bracketed pid, dmesg -T, an app logger, a kernel caller
#: id, NCCL's host:pid:tid. Hyperscan (multi-line mode) missed `^(?:.*[\]:>|] )?No devices were found`
#: behind the first three while `re` matched: the engine lost a line `faultstream rules explain` showed.
LOG_PREFIXES = [
    "Mar  3 12:34:56 gpu12 nv-hostengine[2345]: ",
    "[Mon Mar  3 12:34:56 2025] ",
    "2025-03-03 12:34:56.123 ERROR [2345:2400] ",
    "[ 1234.567890] [ T1234] ",
    "gpu-node-3:12345:12400 [2] ",
]


@pytest.mark.parametrize("prefix", LOG_PREFIXES)
def test_matchers_agree_on_every_rule_example_behind_a_log_prefix(matchers, bundled_ruleset, prefix):
    fast, slow = matchers
    examples = _all_examples(bundled_ruleset)
    lines = [ExampleLine(text=prefix + t, source=s, origin=f"e:{i}") for i, (t, s) in enumerate(examples)]
    assert _key(fast.match_batch(lines)) == _key(slow.match_batch(lines))


def test_matchers_agree_on_the_real_corpus_under_every_source(matchers):
    if not CORPUS.exists():
        pytest.skip("shared corpus not present")
    texts = [json.loads(row)["line"] for row in CORPUS.read_text().splitlines() if row.strip()]
    fast, slow = matchers
    for source in SOURCES:
        assert _key(fast.match_batch(_lines(texts, source))) == _key(slow.match_batch(_lines(texts, source)))


def _example_texts(ruleset):
    return [t for t, _ in _all_examples(ruleset)]


@st.composite
def mutated_lines(draw, pool):
    """Rule examples cut, joined, prefixed and sprinkled with noise: near misses and hits alike."""
    base = draw(st.sampled_from(pool))
    cut = draw(st.integers(0, len(base)))
    other = draw(st.sampled_from(pool))
    noise = draw(st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=12))
    shape = draw(st.integers(0, 4))
    return [base, base[:cut] + noise + base[cut:], noise + base, base[:cut] + other[cut:], noise][shape]


def test_matchers_agree_on_generated_lines(matchers, bundled_ruleset):
    fast, slow = matchers
    pool = _example_texts(bundled_ruleset)

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
    @given(texts=st.lists(mutated_lines(pool), min_size=1, max_size=40), source=st.sampled_from(SOURCES))
    def agree(texts, source):
        lines = _lines(texts, source)
        assert _key(fast.match_batch(lines)) == _key(slow.match_batch(lines))

    agree()


def test_a_match_never_spans_two_lines_of_a_batch(matchers):
    fast, slow = matchers
    lines = _lines(["NVRM: Xid (PCI:0000:e4:00):", " 79, pid=1, GPU has fallen off the bus."], "dmesg")
    assert fast.match_batch(lines) == [] == slow.match_batch(lines)


def test_empty_batch_scans_nothing(matchers):
    assert matchers[0].match_batch([]) == []
