"""Runs the scheduler has not announced: known only from their end record (Slurm jobcomp, no start
event), with lines that carry the workload id (a shipper's ``job_id`` field).

The workload side holds what such lines say from the first of them, as it holds a started run
from its start: the verdict must not depend on whether the end record came in the same batch as
the lines (issue 11/7: ``cuda_oom_amid_nccl_noise`` lost its OOM line at 32-KiB batches).
"""

from __future__ import annotations

import pytest

from correlator import state_codec
from correlator.engine import AttributionEngine
from correlator.node_side import MAX_RUN_MS
from correlator.settings import CorrelatorSettings
from extractors.loader import load_ruleset
from extractors.matchers import HyperscanMatcher
from tests.conftest import write_ruleset
from tests.correlator.story_rules import story_ruleset_files
from tests.correlator.test_stories import at, end, line, run

NODES = tuple(f"gpu{n:03d}" for n in range(1, 9))
JOB = "4102"


@pytest.fixture
def engine(tmp_path):
    ruleset = load_ruleset(write_ruleset(tmp_path, story_ruleset_files()))
    return AttributionEngine(
        ruleset, CorrelatorSettings(grace_s=30, tail_s=30), matcher=HyperscanMatcher(ruleset)
    )


def _oom_story_batches() -> list:
    """0..1200 s training lines naming the job ─ 1200 OOM on gpu005 (naming it) ─ NCCL errors on the
    seven others (naming nothing) ─ more training lines ─ 1805 FAILED, the only scheduler record."""

    def training(first_s: int, last_s: int) -> list:
        return [line(f"iteration {s}", n, s, workload=JOB) for s in range(first_s, last_s, 20) for n in NODES]

    batches = [(training(s, s + 200), []) for s in range(0, 1200, 200)]
    batches.append(([line("CUDA out of memory. Tried to allocate", "gpu005", 1200, workload=JOB)], []))
    nccl = [line("NCCL WARN Connection closed by remote peer", n, 1202) for n in NODES if n != "gpu005"]
    batches.append((nccl, []))
    batches += [(training(s, s + 200), []) for s in range(1210, 1800, 200)]
    batches.append(([], [end(JOB, 1805, "FAILED", nodes=NODES, start_s=0)]))
    return batches


def _one_batch(batches: list) -> list:
    return [([x for lines, _ in batches for x in lines], [e for _, events in batches for e in events])]


def test_a_job_known_only_from_its_end_keeps_the_oom_line_that_named_it_many_batches_earlier(engine):
    verdicts = run(engine, _oom_story_batches())
    assert len(verdicts) == 1
    verdict = verdicts[0]
    assert (verdict.terminal_state, verdict.sub_domain) == ("fail", "user")
    assert verdict.root_symptom is not None and verdict.root_symptom.node == "gpu005"
    assert "CUDA out of memory" in verdict.root_symptom.line


def test_the_same_lines_in_one_batch_or_in_many_give_the_same_verdict(tmp_path, engine):
    many = run(engine, _oom_story_batches())
    ruleset = load_ruleset(write_ruleset(tmp_path / "again", story_ruleset_files()))
    fresh = AttributionEngine(ruleset, engine.settings, matcher=HyperscanMatcher(ruleset))
    one = run(fresh, _one_batch(_oom_story_batches()))
    assert [v.model_dump(mode="json") for v in many] == [v.model_dump(mode="json") for v in one]
    lines = sum(len(lines) for lines, _ in _oom_story_batches())
    assert many[0].lines_seen == lines  # every line, those naming the job and the NCCL ones


def test_an_unannounced_run_is_dropped_once_its_first_line_is_older_than_any_run_can_last(engine):
    engine.feed([line("CUDA out of memory. Tried to allocate", "gpu005", 0, workload=JOB)], [])
    engine.advance(at(0) + MAX_RUN_MS)
    assert JOB in engine.workloads.states  # a job may run this long before its end record comes
    engine.advance(at(0) + MAX_RUN_MS + 1)
    assert JOB not in engine.workloads.states  # its end record is lost: the state is not kept forever


def test_a_stored_unannounced_run_keeps_the_time_of_its_first_line(engine):
    engine.feed([line("iteration 1", "gpu001", 10, workload=JOB)], [])
    state = engine.workloads.states[JOB]
    assert state.run.first_seen_ms == at(10) and state.run.direct_lines == 1
    raw = state_codec.encode_workload_run(state)
    back = state_codec.decode_workload_state(JOB, raw, lambda node: None)
    assert back.run.first_seen_ms == at(10) and back.run.direct_lines == 1


def test_a_flood_of_job_ids_nobody_scheduled_keeps_only_the_newest_unannounced_runs(engine, monkeypatch):
    from correlator import workload_side

    monkeypatch.setattr(workload_side, "MAX_UNANNOUNCED_RUNS", 3)
    engine.feed([], [end("announced", 1, "FAILED", nodes=NODES[:1], start_s=0)])
    flood = [line("iteration 1", "gpu001", s, workload=f"ghost-{s}") for s in range(10, 16)]
    engine.feed(flood, [])
    engine.advance(at(20))
    held = {w for w in engine.workloads.states if w.startswith("ghost-")}
    assert held == {"ghost-13", "ghost-14", "ghost-15"}  # the oldest first lines went first
    assert engine.workloads.unannounced_dropped == 3
    assert "announced" in engine.workloads.states  # a run the scheduler announced is never capped
