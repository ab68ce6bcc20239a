"""The attribution engine, offline: lines and job events in, verdicts out, in event time.

:class:`AttributionEngine` wires the pure parts together exactly as the live pipeline does over
Kafka: the extractor tags lines, symptoms and line counts go to the node side (or straight to a
workload when the line names it), job events go to the workload side and are fanned out to the
nodes, node reports go back to the workload side, which decides. Only the transport differs.

The engine is pure: it reads no file, no environment and no clock. The matcher is built by the
adapter (which chooses where its compiled database is cached) and handed in; event time comes
from the records (tests/correlator/test_engine_purity.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from correlator.batching import BatchContribution, collapse_batch
from correlator.node_side import NodeCorrelator, NodeEvidence
from correlator.records import JobEvent, LogLine
from correlator.settings import CorrelatorSettings
from correlator.verdict import Verdict
from correlator.workload_side import WorkloadCorrelator
from extractors.loader import Ruleset
from extractors.matchers import BatchMatcher

__all__ = ["AttributionEngine", "EngineStats"]


@dataclass
class EngineStats:
    lines: int = 0
    job_events: int = 0
    symptoms: int = 0
    unplaced_symptoms: int = 0
    verdicts: int = 0
    by_rule: Counter = field(default_factory=Counter)


class AttributionEngine:
    def __init__(
        self,
        ruleset: Ruleset,
        settings: CorrelatorSettings | None = None,
        *,
        matcher: BatchMatcher,
    ) -> None:
        self.settings = settings or CorrelatorSettings()
        self.matcher = matcher
        self.nodes = NodeCorrelator(self.settings)
        self.workloads = WorkloadCorrelator(ruleset, self.settings)
        self.watermark_ms = 0
        self.stats = EngineStats()

    def feed(self, lines: Sequence[LogLine], events: Sequence[JobEvent]) -> list[Verdict]:
        """One batch: job events first, then lines; then event time advances to the batch's max."""
        return self.feed_extracted(events, *self.extract(lines))

    def extract(self, lines: Sequence[LogLine]) -> tuple[BatchContribution, int | None]:
        """Extract and collapse a batch (the part a worker process can do): what it contributes,
        and its latest event time."""
        symptoms = self.workloads.claims.keep_own_nodes(self.matcher.extract_batch(lines))
        self.stats.lines += len(lines)
        self.stats.symptoms += len(symptoms)
        self.stats.by_rule.update(s.rule_id for s in symptoms)
        latest = max((line.time_ms for line in lines), default=None)
        return collapse_batch(lines, symptoms), latest

    def feed_extracted(
        self,
        events: Sequence[JobEvent],
        batch: BatchContribution,
        latest_ms: int | None,
        mark_ms: int | None = None,
    ) -> list[Verdict]:
        """``mark_ms``: how far the batch moves event time when the adapter bounded its lines' and
        events' own times against their records' (streams/future_lines.py); by default their latest."""
        for event in events:
            self.on_job_event(event)
        verdicts = self.on_contribution(batch, latest_ms)
        times = [t for t in (latest_ms, *(event.time_ms for event in events)) if t is not None]
        if mark_ms is not None:
            times = [mark_ms]
        if times:
            verdicts += self.advance(max(times))
        return verdicts

    def on_job_event(self, event: JobEvent) -> None:
        self.stats.job_events += 1
        for placement in self.workloads.on_job_event(event):
            self.nodes.on_run(placement.node, placement.workload_id, placement.start_ms, placement.end_ms)

    def on_lines(self, lines: Sequence[LogLine]) -> list[Verdict]:
        """Extract a batch, collapse it as the live extractor does, and route what it holds."""
        batch, latest_ms = self.extract(lines)
        return self.on_contribution(batch, latest_ms)

    def on_contribution(self, batch: BatchContribution, latest_ms: int | None = None) -> list[Verdict]:
        """Route a batch; ``latest_ms`` (its latest line) dates its lines that name a workload, as
        the live extractor's ``lines`` record does with its ``max_ms``."""
        self.nodes.on_line_counts(batch.node_lines)
        for workload_id, count in batch.workload_lines.items():
            self.workloads.on_direct_lines(workload_id, count, latest_ms)
        self.stats.unplaced_symptoms += len(batch.unplaced)
        verdicts: list[Verdict] = []
        for group in batch.direct_groups:
            verdicts += self._count(self.workloads.on_direct_group(group))
        for group in batch.node_groups:
            verdicts += self._deliver(self.nodes.on_group(group))
        return verdicts

    def advance(self, watermark_ms: int) -> list[Verdict]:
        if watermark_ms <= self.watermark_ms:
            return []
        self.watermark_ms = watermark_ms
        verdicts = self._deliver(self.nodes.due(watermark_ms))
        verdicts += self._count(self.workloads.due(watermark_ms))
        self.nodes.expire(watermark_ms)
        self.workloads.expire(watermark_ms)
        return verdicts

    def flush(self) -> list[Verdict]:
        """End of input: decide every ended run now, with the evidence there is."""
        verdicts: list[Verdict] = []
        for node, state in list(self.nodes.states.items()):
            for run in state.runs.values():
                if run.reported_ms is None and run.end_ms is not None:
                    evidence = self.nodes.report_now(node, run.workload_id)
                    verdicts += self._deliver([evidence] if evidence else [])
        for workload_id in list(self.workloads.states):
            verdicts += self._count(self.workloads.finalize(workload_id, self.watermark_ms))
        return verdicts

    def running(self) -> list[str]:
        """Workloads seen that have not ended (no verdict yet)."""
        return sorted(w for w, s in self.workloads.states.items() if s.run.end is None)

    def _deliver(self, reports: list[NodeEvidence]) -> list[Verdict]:
        verdicts: list[Verdict] = []
        for report in reports:
            verdicts += self.workloads.on_node_evidence(report, self.watermark_ms)
        return self._count(verdicts)

    def _count(self, verdicts: list[Verdict]) -> list[Verdict]:
        self.stats.verdicts += len(verdicts)
        return verdicts
