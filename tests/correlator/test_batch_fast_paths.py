"""The storm fast paths of issue 7 change nothing: ``EvidenceGroup.add`` is exactly
``merge(EvidenceGroup.start(symptom))``, and ``NodeCorrelator.on_line_counts`` leaves a node side
in exactly the state ``on_lines`` per entry does (windows, touched and counted nodes, and the
``quiet_until_ms`` that lets ``expire`` skip a node)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from correlator.evidence import SLOT_MS, EvidenceGroup
from correlator.node_side import NodeCorrelator
from correlator.settings import CorrelatorSettings
from extractors.symptom import Symptom

T0 = 1_714_557_600_000

LINES = st.tuples(st.integers(min_value=0, max_value=4), st.sampled_from(["a", "b", "c", "ab", ""]))


def _symptom(offset_s: int, text: str) -> Symptom:
    return Symptom(
        "r.x", "x", "network", "echo", 30, None, None, "gpu1", T0 + offset_s * 1000, "applog", text, "o"
    )


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(LINES, min_size=1, max_size=12))
def test_add_is_merging_a_one_line_group(lines: list[tuple[int, str]]) -> None:
    symptoms = [_symptom(*line) for line in lines]
    added, merged = EvidenceGroup.start(symptoms[0]), EvidenceGroup.start(symptoms[0])
    for symptom in symptoms[1:]:
        added.add(symptom)
        merged.merge(EvidenceGroup.start(symptom))
    assert added == merged
    assert added.first is merged.first  # the same line is the proof


COUNTS = st.dictionaries(
    st.tuples(
        st.sampled_from(["gpu1", "gpu2", "gpu3"]),
        st.integers(min_value=0, max_value=5).map(lambda m: T0 + m * SLOT_MS),
    ),
    st.tuples(st.integers(min_value=1, max_value=50), st.integers(min_value=0, max_value=SLOT_MS - 1)),
    max_size=8,
)


def _state(side: NodeCorrelator) -> dict:
    return {
        node: (state.window.line_slots, state.quiet_until_ms, dict(state.window.groups))
        for node, state in side.states.items()
    }


@settings(max_examples=300, deadline=None)
@given(
    batches=st.lists(COUNTS, max_size=5), expire_at=st.lists(st.integers(min_value=0, max_value=30), max_size=5)
)
def test_line_counts_in_one_loop_are_on_lines_per_entry(
    batches: list[dict[tuple[str, int], tuple[int, int]]], expire_at: list[int]
) -> None:
    config = CorrelatorSettings(idle_retention_s=120)
    bulk, single = NodeCorrelator(config), NodeCorrelator(config)
    bulk.on_group(EvidenceGroup.start(_symptom(1, "seen first")))  # a node that exists already
    single.on_group(EvidenceGroup.start(_symptom(1, "seen first")))
    for index, batch in enumerate(batches):
        bulk.on_line_counts(batch)
        for (node, slot_ms), (count, _) in batch.items():
            single.on_lines(node, slot_ms, count)
        assert _state(bulk) == _state(single)
        assert (bulk.touched, bulk.counted) == (single.touched, single.counted)
        if index < len(expire_at):  # expiry reads quiet_until_ms: both forget the same
            bulk.expire(T0 + expire_at[index] * 60_000)
            single.expire(T0 + expire_at[index] * 60_000)
            assert _state(bulk) == _state(single)
