"""The node-keyed half of the correlator.

For each node it keeps a :class:`NodeWindow` (collapsed symptoms, line counts) and the runs the
scheduler placed on it. When a run has ended and the node's event time has passed its end plus
the grace period, the node reports its :class:`NodeEvidence` for that run; a late symptom inside
an already reported run's window sends an updated report (which may revise the verdict).

In the streaming pipeline this state is partitioned by node; offline, one instance holds all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from correlator.evidence import SLOT_MS, EvidenceGroup
from correlator.node_window import NodeWindow
from correlator.settings import CorrelatorSettings
from extractors.symptom import Symptom

__all__ = ["NodeCorrelator", "NodeEvidence", "NodeRun", "NodeState"]

#: A run with no end record after this long is taken as lost (its job-end record never came).
MAX_RUN_MS = 30 * 86_400_000
NEVER = 2**62


@dataclass
class NodeRun:
    """A workload run as one node knows it."""

    workload_id: str
    start_ms: int | None
    end_ms: int | None = None
    reported_ms: int | None = None  # event time of the first report

    def window(self, settings: CorrelatorSettings) -> tuple[int, int]:
        end = self.end_ms if self.end_ms is not None else 2**62
        start = self.start_ms if self.start_ms is not None else end - int(settings.idle_retention_s * 1000)
        return start - int(settings.lookback_s * 1000), end + int(settings.tail_s * 1000)


@dataclass
class NodeEvidence:
    """What one node saw during one run's window: the workload side's input."""

    workload_id: str
    node: str
    groups: list[EvidenceGroup]
    lines: int
    end_ms: int | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "workload_id": self.workload_id,
            "node": self.node,
            "lines": self.lines,
            "end_ms": self.end_ms,
            "groups": [g.to_dict() for g in self.groups],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NodeEvidence:
        groups = [EvidenceGroup.from_dict(g) for g in data["groups"]]
        return cls(data["workload_id"], data["node"], groups, data["lines"], data["end_ms"])


@dataclass
class NodeState:
    window: NodeWindow
    runs: dict[str, NodeRun] = field(default_factory=dict)
    #: expire() cannot change this node before the watermark reaches this (not stored: a loaded
    #: state is looked at on the next expire). A 12,500-node job is 12,500 states, and looking
    #: at each of them after every batch made the backtest O(nodes x batches).
    quiet_until_ms: int = field(default=0, repr=False, compare=False)


class NodeCorrelator:
    def __init__(self, settings: CorrelatorSettings, states: dict[str, NodeState] | None = None) -> None:
        self.settings = settings
        self.states: dict[str, NodeState] = states if states is not None else {}
        self.touched: set[str] = set()  # nodes changed since the last take_touched()
        self.counted: set[str] = set()  # nodes whose line counts alone changed (cheaper to lose)
        self.dropped: set[str] = set()  # nodes forgotten since the last take_dropped()
        #: nodes with an ended, unreported run (None: not known yet, e.g. after a restart), so
        #: that due() looks at every node only while some run is waiting for its grace to pass
        self.awaiting: set[str] | None = None
        self.idle_ms = int(settings.idle_retention_s * 1000)

    def state(self, node: str) -> NodeState:
        state = self.states.get(node)
        if state is None:
            state = self.states[node] = NodeState(NodeWindow(node))
        self.touched.add(node)
        return state

    def on_lines(self, node: str, time_ms: int, count: int = 1) -> None:
        state = self.states.get(node)
        if state is None:
            state = self.state(node)
        self.counted.add(node)
        state.window.add_lines(time_ms, count)
        # the new minute can expire no sooner than this (see _quiet_until)
        slot_expires = (time_ms // SLOT_MS + 1) * SLOT_MS + self.idle_ms
        state.quiet_until_ms = min(state.quiet_until_ms, slot_expires)

    def on_line_counts(self, counts: dict[tuple[str, int], tuple[int, int]]) -> None:
        """A batch's line counts, ``{(node, slot start ms): (count, latest ms)}``: ``on_lines``
        for each, in one loop (one entry per node and minute of every batch: a storm job's
        thousands of nodes make this the correlator's most frequent call)."""
        states, counted, idle_ms = self.states, self.counted, self.idle_ms
        for (node, time_ms), (count, _) in counts.items():
            state = states.get(node)
            if state is None:
                state = self.state(node)
            counted.add(node)
            slot = time_ms // SLOT_MS
            line_slots = state.window.line_slots
            line_slots[slot] = line_slots.get(slot, 0) + count
            slot_expires = (slot + 1) * SLOT_MS + idle_ms  # as in on_lines
            if slot_expires < state.quiet_until_ms:
                state.quiet_until_ms = slot_expires

    def on_symptom(self, symptom: Symptom) -> list[NodeEvidence]:
        return self.on_group(EvidenceGroup.start(symptom))

    def on_group(self, group: EvidenceGroup) -> list[NodeEvidence]:
        """Record collapsed symptoms; re-report any already reported run they fall in."""
        node = group.node or ""
        state = self.state(node)
        state.window.add_group(group)
        state.quiet_until_ms = min(state.quiet_until_ms, group.last_ms + self.idle_ms + 1)
        late = []
        for run in state.runs.values():
            if run.reported_ms is not None and group.overlaps(*run.window(self.settings)):
                late.append(self._evidence(node, state, run))
        return late

    def on_run(self, node: str, workload_id: str, start_ms: int | None, end_ms: int | None) -> None:
        """The scheduler placed ``workload_id`` on ``node`` (start), or says it ended."""
        state = self.state(node)
        state.quiet_until_ms = 0  # the runs a node keeps evidence for change
        if end_ms is not None and self.awaiting is not None:
            self.awaiting.add(node)
        run = state.runs.get(workload_id)
        requeued = (
            run is not None
            and run.reported_ms is not None
            and start_ms is not None
            and run.end_ms is not None
            and start_ms > run.end_ms
        )
        if run is None or requeued:
            state.runs[workload_id] = NodeRun(workload_id, start_ms, end_ms)
            return
        if start_ms is not None and (run.start_ms is None or start_ms < run.start_ms):
            run.start_ms = start_ms
        if end_ms is not None:
            run.end_ms = end_ms

    def due(self, watermark_ms: int) -> list[NodeEvidence]:
        """Reports for every ended run whose end plus grace the node's event time has passed."""
        if self.awaiting is not None and not self.awaiting:
            return []  # no run has ended unreported: nothing to look at
        out = []
        awaiting = set()
        for node, state in self.states.items():
            for run in state.runs.values():
                if run.reported_ms is not None or run.end_ms is None:
                    continue
                if run.end_ms + self.settings.grace_ms <= watermark_ms:
                    run.reported_ms = watermark_ms
                    state.quiet_until_ms = 0
                    self.touched.add(node)
                    out.append(self._evidence(node, state, run))
                else:
                    awaiting.add(node)
        self.awaiting = awaiting
        return out

    def report_now(self, node: str, workload_id: str) -> NodeEvidence | None:
        """Report a run before its grace is over (the wall-clock fallback of the live pipeline)."""
        state = self.states.get(node)
        run = state.runs.get(workload_id) if state else None
        if state is None or run is None or run.end_ms is None:
            return None
        run.reported_ms = run.reported_ms or run.end_ms + self.settings.grace_ms
        state.quiet_until_ms = 0
        self.touched.add(node)
        return self._evidence(node, state, run)

    def _evidence(self, node: str, state: NodeState, run: NodeRun) -> NodeEvidence:
        start, end = run.window(self.settings)
        groups = [g.copy() for g in state.window.evidence(start, end)]
        return NodeEvidence(run.workload_id, node, groups, state.window.lines_between(start, end), run.end_ms)

    def expire(self, watermark_ms: int, placed_ms: int | None = None) -> None:
        """Drop reported runs past the revision horizon and symptoms no run can still need.

        ``placed_ms``: the event time up to which every run's placement has reached this node side
        (None: no such word, the watermark alone). Placements are sent by the workload side, which
        can lag days of event time behind the nodes (a restarted correlator catching up, a load at
        full speed); expiring by the node's own watermark alone dropped the evidence of runs
        whose placements were still on their way, so nothing expires before both have passed."""
        if placed_ms is not None:
            watermark_ms = min(watermark_ms, placed_ms)
        horizon = int(self.settings.revision_horizon_s * 1000)
        idle = watermark_ms - self.idle_ms
        for node in list(self.states):
            state = self.states[node]
            if state.quiet_until_ms > watermark_ms:
                continue  # nothing of this node can expire yet
            runs = {w: r for w, r in state.runs.items() if self._keep(r, watermark_ms, horizon)}
            changed = len(runs) != len(state.runs)
            state.runs = runs
            needed = [r.window(self.settings)[0] for r in runs.values()]
            changed = state.window.expire(min([idle, *needed])) or changed
            if state.window.is_empty() and not state.runs:
                del self.states[node]
                self.dropped.add(node)
                continue
            if changed:
                self.touched.add(node)  # only what changed goes back to the changelog
            state.quiet_until_ms = self._quiet_until(state, min(needed, default=NEVER), horizon)

    def _quiet_until(self, state: NodeState, needed_ms: int, horizon_ms: int) -> int:
        """The lowest watermark at which expire() could change ``state`` as it is now: a run
        dropped, or a group or minute of line counts forgotten (adding evidence lowers it)."""
        until = NEVER
        for run in state.runs.values():
            if run.reported_ms is not None:
                until = min(until, (run.end_ms or 0) + horizon_ms + 1)
            elif run.start_ms is not None:
                until = min(until, run.start_ms + MAX_RUN_MS + 1)
        # forgetting needs the cutoff min(watermark - idle, needed) past the oldest entry
        window = state.window
        oldest_group = min((g.last_ms for g in window.groups.values()), default=NEVER)
        if needed_ms > oldest_group:
            until = min(until, oldest_group + self.idle_ms + 1)
        oldest_slot = min(window.line_slots, default=NEVER)
        if needed_ms // SLOT_MS > oldest_slot:
            until = min(until, (oldest_slot + 1) * SLOT_MS + self.idle_ms)
        return until

    def _keep(self, run: NodeRun, watermark_ms: int, horizon_ms: int) -> bool:
        if run.reported_ms is not None:
            return (run.end_ms or 0) + horizon_ms >= watermark_ms
        # a run whose end never came is dropped once it is implausibly old
        return (run.start_ms or watermark_ms) + MAX_RUN_MS >= watermark_ms

    def take_dropped(self) -> set[str]:
        dropped, self.dropped = self.dropped, set()
        return dropped

    def take_touched(self, with_counts: bool = True) -> set[str]:
        """Nodes to write back; line-count-only changes wait for ``with_counts``."""
        touched, self.touched = self.touched, set()
        if with_counts:
            touched |= self.counted
            self.counted = set()
        return touched
