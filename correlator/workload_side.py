"""The workload-keyed half of the correlator: gathers node reports and decides.

A run is decided once its job-end record is known and every node it ran on has reported its
evidence (or, in the live pipeline, when the wall-clock fallback says to stop waiting). Evidence
that arrives after the verdict re-decides it; a changed verdict is emitted as the next revision,
and an unchanged one is not emitted again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from correlator.claims import ClaimCheck
from correlator.decide import decide
from correlator.evidence import EvidenceGroup, group_key
from correlator.node_side import MAX_RUN_MS, NodeEvidence
from correlator.records import JobEvent
from correlator.settings import CorrelatorSettings
from correlator.verdict import Verdict
from correlator.workload import WorkloadRun
from extractors.loader import Ruleset

__all__ = ["MAX_UNANNOUNCED_RUNS", "RunPlacement", "WorkloadCorrelator", "WorkloadState"]

#: Runs known only from lines that name them (no start or end record yet) held per partition.
#: A real cluster has as many as it has jobs running without a start record (Slurm jobcomp only):
#: thousands, not a hundred thousand.
MAX_UNANNOUNCED_RUNS = 100_000


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
    """One run and what its nodes reported.

    Stored (live pipeline) as one small record for the run plus one record per node holding
    that node's report and the symptoms it logged that name the workload
    (correlator/state_codec.py), so that no record grows with the number of nodes: a 12,500-node
    job's state is 12,500 small records and one record with the node list.
    """

    run: WorkloadRun
    evidence: dict[str, NodeEvidence] = field(default_factory=dict)
    end_seen_wall_ms: int | None = None  # live pipeline only: when the job-end record arrived
    _missing: set[str] | None = field(default=None, init=False, repr=False, compare=False)
    _missing_of: int = field(default=-1, init=False, repr=False, compare=False)

    def ready(self) -> bool:
        """The run has ended and every node it ran on has reported (O(1) per report: the set
        of nodes still awaited is kept, and rebuilt only when the run gains nodes)."""
        if self.run.end is None:
            return False
        if self._missing is None or self._missing_of != len(self.run.nodes):
            self._missing = self.run.nodes - self.evidence.keys()
            self._missing_of = len(self.run.nodes)
        return not self._missing

    def missing_nodes(self) -> set[str]:
        """Nodes of the run that have not reported (an ended run; see ready)."""
        self.ready()
        return self._missing or set()

    def add_evidence(self, evidence: NodeEvidence) -> None:
        self.evidence[evidence.node] = evidence
        if self._missing is not None:
            self._missing.discard(evidence.node)

    def stored_nodes(self) -> set[str]:
        """Nodes with a record of their own (a report, direct symptoms, or both)."""
        return self.evidence.keys() | self.run.direct_keys_by_node.keys()


def _poorer(report: NodeEvidence, held: NodeEvidence) -> bool:
    """A node's report of a run only grows (a late group re-reports it with more), so one with fewer
    lines and no group the held one lacks is a repeat from before: a placement sent again after a
    crash, reaching a node whose evidence for the run had already expired. It must not replace
    the report that had it (an Xid node would end up blamed for nothing)."""
    if report.lines >= held.lines:
        return False
    held_keys = {group_key(g.first) for g in held.groups}
    return all(group_key(g.first) in held_keys for g in report.groups)


class WorkloadCorrelator:
    def __init__(
        self, ruleset: Ruleset, settings: CorrelatorSettings, states: dict[str, WorkloadState] | None = None
    ) -> None:
        self.ruleset = ruleset
        self.settings = settings
        self.rules_by_id = {r.id: r for r in ruleset.symptom_rules}
        self.claims = ClaimCheck(settings.scheduler_hosts)
        self.states: dict[str, WorkloadState] = states if states is not None else {}
        self.touched: set[str] = set()  # workloads whose run record changed
        #: (workload, node) records changed or dropped: the storage writes what each now holds
        self.nodes_changed: set[tuple[str, str]] = set()
        #: unannounced runs dropped because MAX_UNANNOUNCED_RUNS were held (a flood of job ids)
        self.unannounced_dropped = 0

    def state(self, workload_id: str, touch: bool = True) -> WorkloadState:
        state = self.states.get(workload_id)
        if state is None:
            state = self.states[workload_id] = WorkloadState(WorkloadRun(workload_id))
            touch = True
        if touch:
            self.touched.add(workload_id)
        return state

    def _drop(self, state: WorkloadState) -> None:
        workload_id = state.run.workload_id
        self.nodes_changed.update((workload_id, node) for node in state.stored_nodes())
        self.touched.add(workload_id)

    def on_job_event(self, event: JobEvent, wall_ms: int | None = None) -> list[RunPlacement]:
        if event.workload_id is None:
            return []
        state = self.state(event.workload_id)
        if self._is_requeue(state, event):
            self._drop(state)
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
        state = self.state(group.first.workload_id or "", touch=False)
        if state.run.nodes and not self.claims.may_name(group, state.run.nodes):
            self.claims.count_ignored(group)  # a line naming a job its host did not run
            return []
        node = group.node or ""
        if node not in state.run.nodes and node not in state.stored_nodes():
            self.touched.add(state.run.workload_id)  # the run record lists nodes outside the run
        state.run.add_direct(group)
        self.nodes_changed.add((state.run.workload_id, node))
        return self._redecide(state) if state.run.finalized_at_ms is not None else []

    def on_direct_lines(self, workload_id: str, count: int, time_ms: int | None = None) -> None:
        """``count`` lines naming the workload, the latest at ``time_ms`` (their batch's latest)."""
        run = self.state(workload_id).run
        run.direct_lines += count
        run.seen_at(time_ms)

    def on_node_evidence(self, evidence: NodeEvidence, watermark_ms: int) -> list[Verdict]:
        state = self.state(evidence.workload_id, touch=False)
        held = state.evidence.get(evidence.node)
        if held is not None and _poorer(evidence, held):
            return []
        late_for_a_verdict = state.run.finalized_at_ms is not None
        first_from_node = evidence.node not in state.evidence
        if evidence.node not in state.run.nodes and evidence.node not in state.stored_nodes():
            self.touched.add(evidence.workload_id)  # the run record lists nodes outside the run
        state.add_evidence(evidence)
        self.nodes_changed.add((evidence.workload_id, evidence.node))
        if not late_for_a_verdict:
            return self._decide_if_ready(state, watermark_ms)
        if first_from_node and not state.ready():
            return []  # decided without some nodes (overdue): revise once they have all reported
        return self._redecide(state)

    def restore_evidence(self, evidence: NodeEvidence) -> None:
        """A node's report read again after a crash, whose run already has it decided (the run's
        record holds the report's effects: revision, digest) but whose node record lacks it: the
        live correlator's flush was cut short between the two (streams/partitions.py). The report
        is kept as on_node_evidence keeps it; deciding again on a state still being restored would
        send revisions the uninterrupted run never sent."""
        state = self.state(evidence.workload_id, touch=False)
        held = state.evidence.get(evidence.node)
        if held is None or not _poorer(evidence, held):
            state.add_evidence(evidence)
            self.nodes_changed.add((evidence.workload_id, evidence.node))

    def restore_direct(self, group: EvidenceGroup) -> None:
        """A direct symptom read again after a crash: as restore_evidence (an ignored claim was
        counted the first time)."""
        state = self.state(group.first.workload_id or "", touch=False)
        if state.run.nodes and not self.claims.may_name(group, state.run.nodes):
            return
        state.run.add_direct(group)
        self.nodes_changed.add((state.run.workload_id, group.node or ""))

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

    def overdue(
        self,
        wall_ms: int,
        limit_ms: int,
        watermark_ms: int,
        coming: Callable[[WorkloadState], bool] = lambda state: False,
    ) -> list[Verdict]:
        """Live pipeline: decide runs whose node reports are ``limit_ms`` (wall time) overdue, except
        those whose missing reports are still ``coming`` (a lagging node side that says so)."""
        out = []
        for state in list(self.states.values()):
            seen = state.end_seen_wall_ms
            late = state.run.finalized_at_ms is None and seen is not None and seen + limit_ms <= wall_ms
            if late and not coming(state):
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
        if run.finalized_at_ms is None:
            run.finalized_at_ms = now_ms
            self.touched.add(run.workload_id)
        groups = [g for e in sorted(state.evidence.values(), key=lambda e: e.node) for g in e.groups]
        groups += [group for _, group in sorted(run.direct.items())]  # the order storage cannot change
        groups = self._drop_foreign_claims(run, groups, count=run.revision == 0)
        lines = sum(e.lines for e in state.evidence.values()) + run.direct_lines
        verdict = decide(run, groups, self.ruleset, self.rules_by_id, lines)
        digest = _digest(verdict, sorted(state.evidence))
        if digest == run.last_verdict_digest:
            return []
        run.revision += 1
        run.last_verdict_digest = digest
        self.touched.add(run.workload_id)
        return [verdict.model_copy(update={"revision": run.revision})]

    def _drop_foreign_claims(
        self, run: WorkloadRun, groups: list[EvidenceGroup], count: bool
    ) -> list[EvidenceGroup]:
        """Claims stored before the run's nodes were known are judged now (counted once)."""
        kept = [g for g in groups if self.claims.may_name(g, run.nodes)]
        if count and len(kept) < len(groups):
            for group in groups:
                if not self.claims.may_name(group, run.nodes):
                    self.claims.count_ignored(group)
        return kept

    def expire(self, watermark_ms: int) -> None:
        horizon = int(self.settings.revision_horizon_s * 1000)
        unannounced: list[tuple[int, str]] = []
        for workload_id in list(self.states):
            run = self.states[workload_id].run
            done = run.finalized_at_ms is not None and run.finalized_at_ms + horizon < watermark_ms
            # A run the scheduler has not announced is held from its first line as a started one
            # is from its start: a job known only from its end record (Slurm jobcomp) whose lines
            # carry its id must keep them until that end comes, however late in the stream.
            stale = run.end is None and run.known_since_ms is None
            abandoned = run.end is None and (run.known_since_ms or 0) + MAX_RUN_MS < watermark_ms
            if done or stale or abandoned:
                self._drop(self.states[workload_id])
                del self.states[workload_id]
            elif run.start_ms is None and run.end is None:
                unannounced.append((run.first_seen_ms or 0, workload_id))
        self._cap_unannounced(unannounced)

    def _cap_unannounced(self, unannounced: list[tuple[int, str]]) -> None:
        """Hold at most MAX_UNANNOUNCED_RUNS runs the scheduler never announced, oldest dropped
        first: any line whose shipper names a job creates one, held for weeks, so without a cap a
        flood of job ids nobody schedules would grow the state without bound."""
        excess = len(unannounced) - MAX_UNANNOUNCED_RUNS
        if excess <= 0:
            return
        for _, workload_id in sorted(unannounced)[:excess]:
            self._drop(self.states[workload_id])
            del self.states[workload_id]
        self.unannounced_dropped += excess

    def take_touched(self) -> set[str]:
        touched, self.touched = self.touched, set()
        return touched

    def take_node_changes(self) -> set[tuple[str, str]]:
        """(workload, node) records changed or dropped since the last call."""
        changed, self.nodes_changed = self.nodes_changed, set()
        return changed


def _digest(verdict: Verdict, reported: list[str]) -> str:
    """Identity of a verdict's content. Late plain lines alone never make a new revision, but a
    node whose report was still missing when the run was decided does (its lines now count)."""
    body = verdict.model_dump(mode="json", exclude={"revision", "lines_seen"})
    body["reported_nodes"] = reported
    return hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]
