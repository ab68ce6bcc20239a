"""Skipping quiet nodes in ``NodeCorrelator.expire`` and idle partitions in ``due`` changes
nothing: a correlator that looks at every node every time ends in exactly the same state and
reports the same runs, whatever the order of lines, symptoms, placements and watermarks."""

from __future__ import annotations

import random

import pytest

from correlator.evidence import EvidenceGroup
from correlator.node_side import NodeCorrelator
from correlator.settings import CorrelatorSettings
from extractors.symptom import Symptom

T0 = 1_714_557_600_000
SETTINGS = CorrelatorSettings(
    lookback_s=300, tail_s=30, grace_s=30, idle_retention_s=600, revision_horizon_s=900
)


class LooksAtEveryNode(NodeCorrelator):
    """The reference: forgets what it learnt about quiet nodes and pending runs every time."""

    def expire(self, watermark_ms: int, placed_ms: int | None = None) -> None:
        for state in self.states.values():
            state.quiet_until_ms = 0
        super().expire(watermark_ms, placed_ms)

    def due(self, watermark_ms: int) -> list:
        self.awaiting = None
        return super().due(watermark_ms)


def _group(node: str, ms: int, n: int) -> EvidenceGroup:
    symptom = Symptom("r.x", "x", "hardware", "cause", 60, None, None, node, ms, "dmesg", f"line {n}", f"o:{n}")
    return EvidenceGroup.start(symptom)


@pytest.mark.parametrize("seed", range(30))
def test_skipping_quiet_nodes_ends_in_the_same_state_as_looking_at_all(seed):
    rng = random.Random(seed)
    fast, reference = NodeCorrelator(SETTINGS), LooksAtEveryNode(SETTINGS)
    nodes = [f"gpu{n}" for n in range(6)]
    watermark = T0
    reports = [[], []]
    for step in range(400):
        node, ms = rng.choice(nodes), watermark + rng.randrange(-900_000, 120_000)
        action = rng.random()
        for i, correlator in enumerate((fast, reference)):
            if action < 0.35:
                correlator.on_lines(node, ms, 3)
            elif action < 0.55:
                reports[i] += [(e.workload_id, e.node) for e in correlator.on_group(_group(node, ms, step))]
            elif action < 0.65:
                job = f"job{step % 4}"
                start = ms - 600_000
                correlator.on_run(node, job, start, ms if step % 2 else None)
            else:
                reports[i] += [(e.workload_id, e.node) for e in correlator.due(watermark)]
                correlator.expire(watermark)
        if action >= 0.65:
            watermark += rng.choice([1_000, 30_000, 60_000, 400_000])
    assert reports[0] == reports[1]
    assert fast.states == reference.states
    assert reports[0], "no run was ever reported: the sample exercised nothing"


def test_evidence_the_node_side_has_long_outrun_waits_until_the_placements_have_passed_it_too():
    """The node side is six hours past an Xid, the workload side still at the job's start: its
    placement is on its way, so the Xid must still be there when it comes (issue 11)."""
    nodes = NodeCorrelator(SETTINGS)
    nodes.on_group(_group("gpu7", T0 + 60_000, 1))
    nodes.on_lines("gpu7", T0 + 60_000, 40)
    six_hours = T0 + 6 * 3_600_000

    nodes.expire(six_hours, placed_ms=T0)  # the placements have gone only as far as T0
    nodes.on_run("gpu7", "job7", T0, T0 + 120_000)
    [report] = nodes.due(six_hours)

    assert [g.first.line for g in report.groups] == ["line 1"] and report.lines == 40

    nodes.expire(six_hours, placed_ms=six_hours)  # every placement is in: the reported run's time is up
    assert "gpu7" not in nodes.states
