"""The workload-keyed half of the correlator: gathers node reports and decides.

A run is decided once its job-end record is known and every node it ran on has reported its
evidence (or, in the live pipeline, when the wall-clock fallback says to stop waiting). Evidence
that arrives after the verdict re-decides it; a changed verdict is emitted as the next revision,
and an unchanged one is not emitted again.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import orjson

from correlator.decide import decide
from correlator.evidence import EvidenceGroup
from correlator.node_side import MAX_RUN_MS, NodeEvidence
from correlator.settings import CorrelatorSettings
from correlator.verdict import Verdict
from correlator.workload import WorkloadRun
from extractors.loader import Ruleset
from streams.records import JobEvent

__all__ = ["RunPlacement", "WorkloadCorrelator", "WorkloadState"]


@dataclass(frozen=True, slots=True)
class RunPlacement:
    """Tells the node side that a run is (or was) on ``node``: a job event fanned out per node."""

    node: str
    workload_id: str
    start_ms: int | None
    end_ms: int | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "workload_id": self.workload_id,
            "start_ms": self.start_ms,
            "end_ms": self.end_ms,
        }


@dataclass
class WorkloadState:
    run: WorkloadRun
    evidence: dict[str, NodeEvidence] = field(default_factory=dict)
    end_seen_wall_ms: int | None = None  # live pipeline only: when the job-end record arrived

    def ready(self) -> bool:
        return self.run.end is not None and self.run.nodes <= self.evidence.keys()

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run.to_dict(),
            "evidence": [e.to_dict() for e in self.evidence.values()],
            "end_seen_wall_ms": self.end_seen_wall_ms,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WorkloadState:
        evidence = [NodeEvidence.from_dict(e) for e in data["evidence"]]
        return cls(
            WorkloadRun.from_dict(data["run"]), {e.node: e for e in evidence}, data.get("end_seen_wall_ms")
        )


class WorkloadCorrelator:
    def __init__(
        self, ruleset: Ruleset, settings: CorrelatorSettings, states: dict[str, WorkloadState] | None = None
    ) -> None:
        self.ruleset = ruleset
        self.settings = settings
        self.rules_by_id = {r.id: r for r in ruleset.symptom_rules}
        self.states: dict[str, WorkloadState] = states if states is not None else {}
        self.touched: set[str] = set()

    def state(self, workload_id: str) -> WorkloadState:
        state = self.states.get(workload_id)
        if state is None:
            state = self.states[workload_id] = WorkloadState(WorkloadRun(workload_id))
        self.touched.add(workload_id)
        return state

    def on_job_event(self, event: JobEvent, wall_ms: int | None = None) -> list[RunPlacement]:
        if event.workload_id is None:
            return []
        state = self.state(event.workload_id)
        if self._is_requeue(state, event):
            state = self.states[event.workload_id] = WorkloadState(WorkloadRun(event.workload_id))
        state.run.apply(event)
        if event.kind == "job_end" and state.end_seen_wall_ms is None:
            state.end_seen_wall_ms = wall_ms
        run = state.run
        nodes = event.nodes if event.kind != "job_end" else tuple(sorted(run.nodes))
        return [RunPlacement(n, run.workload_id, run.start_ms, run.end_ms) for n in nodes]

    @staticmethod
    def _is_requeue(state: WorkloadState, event: JobEvent) -> bool:
        run = state.run
        start = event.start_ms if event.kind == "job_end" else event.time_ms
        return (
            run.finalized_at_ms is not None
            and run.end_ms is not None
            and start is not None
            and start > run.end_ms
            and event.kind in ("job_start", "job_end")
        )

    def on_direct_group(self, group: EvidenceGroup) -> list[Verdict]:
        """Symptoms whose lines name this workload themselves, wherever they were logged."""
        state = self.state(group.first.workload_id or "")
        state.run.add_direct(group)
        return self._redecide(state) if state.run.finalized_at_ms is not None else []

    def on_direct_lines(self, workload_id: str, count: int) -> None:
        self.state(workload_id).run.direct_lines += count

    def on_node_evidence(self, evidence: NodeEvidence, watermark_ms: int) -> list[Verdict]:
        state = self.state(evidence.workload_id)
        late_for_a_verdict = state.run.finalized_at_ms is not None
        first_from_node = evidence.node not in state.evidence
        state.evidence[evidence.node] = evidence
        if not late_for_a_verdict:
            return self._decide_if_ready(state, watermark_ms)
        if first_from_node and not state.ready():
            return []  # decided without some nodes (overdue): revise once they have all reported
        return self._redecide(state)

    def due(self, watermark_ms: int) -> list[Verdict]:
        """Decide runs no node will report on (they ran on no known node) once grace is over."""
        out = []
        for state in list(self.states.values()):
            run = state.run
            if (
                run.finalized_at_ms is None
                and run.end is not None
                and not run.nodes
                and run.end.time_ms + self.settings.grace_ms <= watermark_ms
            ):
                out += self._emit(state, watermark_ms)
        return out

    def overdue(self, wall_ms: int, limit_ms: int, watermark_ms: int) -> list[Verdict]:
        """Live pipeline: decide runs whose node reports are ``limit_ms`` (wall time) overdue."""
        out = []
        for state in list(self.states.values()):
            seen = state.end_seen_wall_ms
            if state.run.finalized_at_ms is None and seen is not None and seen + limit_ms <= wall_ms:
                out += self._emit(state, watermark_ms)
        return out

    def finalize(self, workload_id: str, now_ms: int) -> list[Verdict]:
        """Decide with whatever evidence is here (wall-clock fallback, end of a backtest)."""
        state = self.states.get(workload_id)
        if state is None or state.run.end is None or state.run.finalized_at_ms is not None:
            return []
        return self._emit(state, now_ms)

    def _decide_if_ready(self, state: WorkloadState, watermark_ms: int) -> list[Verdict]:
        return self._emit(state, watermark_ms) if state.ready() else []

    def _redecide(self, state: WorkloadState) -> list[Verdict]:
        return self._emit(state, state.run.finalized_at_ms or 0)

    def _emit(self, state: WorkloadState, now_ms: int) -> list[Verdict]:
        run = state.run
        run.finalized_at_ms = run.finalized_at_ms or now_ms
        self.touched.add(run.workload_id)
        groups = [g for e in sorted(state.evidence.values(), key=lambda e: e.node) for g in e.groups]
        groups += list(run.direct.values())
        lines = sum(e.lines for e in state.evidence.values()) + run.direct_lines
        verdict = decide(run, groups, self.ruleset, self.rules_by_id, lines)
        digest = _digest(verdict, sorted(state.evidence))
        if digest == run.last_verdict_digest:
            return []
        run.revision += 1
        run.last_verdict_digest = digest
        return [verdict.model_copy(update={"revision": run.revision})]

    def expire(self, watermark_ms: int) -> None:
        horizon = int(self.settings.revision_horizon_s * 1000)
        for workload_id in list(self.states):
            run = self.states[workload_id].run
            done = run.finalized_at_ms is not None and run.finalized_at_ms + horizon < watermark_ms
            stale = run.end is None and run.start_ms is None and not run.direct
            abandoned = run.end is None and (run.start_ms or 0) + MAX_RUN_MS < watermark_ms
            if done or stale or abandoned:
                del self.states[workload_id]
                self.touched.add(workload_id)

    def take_touched(self) -> set[str]:
        touched, self.touched = self.touched, set()
        return touched


def _digest(verdict: Verdict, reported: list[str]) -> str:
    """Identity of a verdict's content. Late plain lines alone never make a new revision, but a
    node whose report was still missing when the run was decided does (its lines now count)."""
    body = verdict.model_dump(mode="json", exclude={"revision", "lines_seen"})
    body["reported_nodes"] = reported
    return hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]
