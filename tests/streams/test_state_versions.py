"""Table state survives an upgrade: what the releases before wrote (tests/streams/fixtures/: the
tables of tests/streams/state_story.py from the release before values were versioned, and from the
last release of version 2, before run and node records were stamped with their flush) is read by
this one as the same state, and the run it left open is decided the same way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from correlator import state_codec
from tests.streams.state_story import Story, finish_story, tell_story

FIXTURES = Path(__file__).parent / "fixtures"
OLD_VERSIONS = [1, 2]


def _release_tables(version: int) -> tuple[dict, dict]:
    fixture = json.loads((FIXTURES / f"state-v{version}.json").read_text(encoding="utf-8"))
    node_table = {key: value.encode() for key, value in fixture["node-state"].items()}
    workload_table = {key: value.encode() for key, value in fixture["workload-state"].items()}
    return node_table, workload_table


def _recovered(bundled_ruleset, node_table: dict, workload_table: dict) -> Story:
    """Partitions started on the tables, as a worker recovers them from the changelogs."""
    return Story(bundled_ruleset, node_table, workload_table)


def _decoded(story: Story) -> tuple[dict, dict]:
    """Every node and workload state of the story's partitions, as read from their tables. A
    verdict's digest names the ruleset's version, which the rules edited since the fixture was
    written changed: it is left out (a rule change revises a verdict; the digest says when)."""
    for workload_id in story.workloads.view:
        story.workloads.view[workload_id].run.last_verdict_digest = None
    return {n: story.nodes.view[n] for n in story.nodes.view}, {
        w: story.workloads.view[w] for w in story.workloads.view
    }


@pytest.mark.parametrize("version", OLD_VERSIONS)
def test_state_written_by_the_previous_release_reads_as_the_state_this_release_writes(bundled_ruleset, version):
    old = _recovered(bundled_ruleset, *_release_tables(version))
    tables: tuple[dict, dict] = ({}, {})
    tell_story(bundled_ruleset, *tables)
    new = _recovered(bundled_ruleset, *tables)

    current = f'"v":{state_codec.STATE_VERSION}'.encode()
    assert all(current in value for table in tables for value in table.values())
    old_nodes, old_workloads = _decoded(old)
    assert (old_nodes, old_workloads) == _decoded(new)
    assert sorted(old_nodes) == ["gpu001", "gpu002", "gpu003"] and sorted(old_workloads) == ["4101", "4102"]
    assert (
        old_nodes["gpu002"].window.lines_between(old.nodes.clock.event_ms - 600_000, old.nodes.clock.event_ms)
        == 80
    )
    assert old_workloads["4101"].run.revision == 1 and set(old_workloads["4101"].evidence) == {
        "gpu001",
        "gpu002",
    }
    for side in ("nodes", "workloads"):
        old_clock, new_clock = getattr(old, side).clock, getattr(new, side).clock
        assert (old_clock.offset, old_clock.effective_ms) == (new_clock.offset, new_clock.effective_ms)


@pytest.mark.parametrize("version", OLD_VERSIONS)
def test_the_run_left_open_by_the_previous_release_is_decided_as_this_release_decides_it(
    bundled_ruleset, version
):
    this_release = tell_story(bundled_ruleset, {}, {})
    [expected] = [v for v in finish_story(this_release) if v.workload_id == "4102"]

    [verdict] = finish_story(_recovered(bundled_ruleset, *_release_tables(version)))

    assert verdict.workload_id == "4102" and verdict.root_symptom.symptom == "gpu_out_of_memory"
    assert verdict.model_dump() == expected.model_dump()


def test_a_value_from_a_newer_release_is_refused_with_its_key_and_version():
    with pytest.raises(state_codec.UnknownStateVersion, match=r"'gpu001' holds state version 4"):
        state_codec.decode_node_state("gpu001", b'{"v":4,"node":"gpu001","groups":[],"runs":[]}')
