"""``faultstream dump``: a time range of the ingest topics (or one workload's part of it) as a
recording file, in event-time order, so a real incident becomes a golden test in one command.

Partitions are read one after another; each partition's records go to a file of their own in
offset order and the files are merged by record time into the recording, so memory stays flat
however long the range. The merged order is what a backtest needs: scheduler records and the lines
of the same minute side by side, as the live pipeline sees them.
"""

from __future__ import annotations

import heapq
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from correlator.settings import CorrelatorSettings
from streams.normalize import normalize_record
from streams.settings import Settings
from streams.topic_range import KAFKA_TIME, Progress, TimeRange, read_range

__all__ = ["DumpResult", "WorkloadWindow", "dump_range", "find_workload"]


@dataclass
class DumpResult:
    records: int = 0
    by_topic: dict[str, int] = field(default_factory=dict)
    window: TimeRange | None = None
    #: first and last record time (as the recording says) of the records whose Kafka timestamp
    #: lies in ``inner``: what the read range means in event time, also for replayed records
    inner_event_span: TimeRange | None = None

    #: the same over every record read (readback included)
    event_span: TimeRange | None = None

    def saw(self, kafka_ms: int, record_ms: int, inner: TimeRange | None) -> None:
        self.event_span = _widen(self.event_span, record_ms)
        if inner is not None and inner.holds(kafka_ms):
            self.inner_event_span = _widen(self.inner_event_span, record_ms)


def _widen(span: TimeRange | None, time_ms: int) -> TimeRange:
    if span is None:
        return TimeRange(time_ms, time_ms + 1)
    return TimeRange(min(span.since_ms, time_ms), max(span.until_ms, time_ms + 1))


@dataclass
class WorkloadWindow:
    """What the scheduler records say about one workload: its nodes and its evidence window."""

    workload_id: str
    nodes: set[str] = field(default_factory=set)
    start_ms: int | None = None
    end_ms: int | None = None

    def span(self, settings: CorrelatorSettings, fallback: TimeRange) -> TimeRange:
        start = self.start_ms if self.start_ms is not None else fallback.since_ms
        end = self.end_ms if self.end_ms is not None else fallback.until_ms
        return TimeRange(start - int(settings.lookback_s * 1000), end + int(settings.tail_s * 1000) + 1)

    def wants(self, record: dict) -> bool:
        out = normalize_record(record["topic"], record["value"], record["key"], record["timestamp"], "dump")
        if any(e.workload_id == self.workload_id for e in out.events):
            return True
        if any(e.kind == "node_state" and set(e.nodes) & self.nodes for e in out.events):
            return True
        return any(line.workload_id == self.workload_id or line.host in self.nodes for line in out.lines)


async def find_workload(settings: Settings, span: TimeRange, workload_id: str) -> WorkloadWindow:
    """Scan the scheduler topic in ``span`` for the workload's start and end records."""
    found = WorkloadWindow(workload_id)
    async for record in read_range(settings, span, [settings.topic(settings.topic_scheduler)]):
        out = normalize_record(record["topic"], record["value"], record["key"], record["timestamp"], "find")
        for event in out.events:
            if event.workload_id != workload_id:
                continue
            found.nodes.update(event.nodes)
            if event.kind == "job_end":
                found.end_ms = event.time_ms
                found.start_ms = event.start_ms if event.start_ms is not None else found.start_ms
            elif event.kind in ("job_start", "node_assign") and found.start_ms is None:
                found.start_ms = event.time_ms
    return found


async def dump_range(
    settings: Settings,
    span: TimeRange,
    out: Path,
    workload: WorkloadWindow | None = None,
    show_progress: bool | None = None,
    inner: TimeRange | None = None,
) -> DumpResult:
    result = DumpResult(window=span)
    with tempfile.TemporaryDirectory(prefix="faultstream-dump-") as scratch:
        parts: dict[tuple[str, int], Path] = {}
        handles = {}
        try:
            async for record in read_range(settings, span, progress=lambda n: Progress(n, show_progress)):
                kafka_ms = record.pop(KAFKA_TIME)
                if workload is not None and not workload.wants(record):
                    continue
                result.saw(kafka_ms, record["timestamp"], inner)
                part = (record["topic"], record["partition"])
                if part not in handles:
                    parts[part] = Path(scratch) / f"{len(parts)}.jsonl"
                    handles[part] = parts[part].open("wb")
                handles[part].write(orjson.dumps(record) + b"\n")
                result.records += 1
                result.by_topic[record["topic"]] = result.by_topic.get(record["topic"], 0) + 1
        finally:
            for handle in handles.values():
                handle.close()
        _merge_by_time(list(parts.values()), out)
    return result


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    with path.open("rb") as handle:
        for raw in handle:
            yield orjson.loads(raw)["timestamp"], raw


def _merge_by_time(parts: list[Path], out: Path) -> None:
    with out.open("wb") as sink:
        for _, raw in heapq.merge(*(_lines(p) for p in parts), key=lambda item: item[0]):
            sink.write(raw)
