"""Replay a recording through the engine, offline: the rule author's backtest.

The same :class:`~correlator.engine.AttributionEngine` the live pipeline runs; records are read
in file order and fed in batches, as the extractor worker fetches them from Kafka.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from correlator.engine import AttributionEngine
from correlator.settings import CorrelatorSettings
from correlator.verdict import Verdict
from extractors.loader import Ruleset
from streams.normalize import normalize_record
from streams.recording import RawRecord, read_recording
from streams.records import DeadLetter, JobEvent, LogLine

__all__ = ["BacktestResult", "backtest", "latest_revisions"]

BATCH_RECORDS = 4096


@dataclass
class BacktestResult:
    verdicts: list[Verdict]
    dead_letters: list[DeadLetter]
    records: int = 0
    seconds: float = 0.0
    engine: AttributionEngine | None = None
    dead_reasons: Counter = field(default_factory=Counter)


def _batches(records: Iterable[RawRecord | DeadLetter], size: int) -> Iterator[list[RawRecord | DeadLetter]]:
    batch: list[RawRecord | DeadLetter] = []
    for record in records:
        batch.append(record)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _normalize(
    batch: list[RawRecord | DeadLetter], dead: list[DeadLetter]
) -> tuple[list[LogLine], list[JobEvent]]:
    lines: list[LogLine] = []
    events: list[JobEvent] = []
    for record in batch:
        if isinstance(record, DeadLetter):
            dead.append(record)
            continue
        out = normalize_record(record.topic, record.value, record.key, record.timestamp_ms, record.origin)
        lines += out.lines
        events += out.events
        dead += out.dead
    return lines, events


def backtest(
    path: Path, ruleset: Ruleset, settings: CorrelatorSettings | None = None, batch_records: int = BATCH_RECORDS
) -> BacktestResult:
    engine = AttributionEngine(ruleset, settings)
    dead: list[DeadLetter] = []
    verdicts: list[Verdict] = []
    records = 0
    started = time.perf_counter()
    for batch in _batches(read_recording(path), batch_records):
        records += len(batch)
        lines, events = _normalize(batch, dead)
        verdicts += engine.feed(lines, events)
    verdicts += engine.flush()
    result = BacktestResult(verdicts, dead, records, time.perf_counter() - started, engine)
    result.dead_reasons.update(_reason_kind(d.reason) for d in dead)
    return result


def _reason_kind(reason: str) -> str:
    """Group dead-letter reasons for the summary (drop the per-record part after a colon)."""
    return reason.split(": ", 1)[-1] if reason.startswith("recording line") else reason


def latest_revisions(verdicts: list[Verdict]) -> list[Verdict]:
    """The last revision of each workload run, in job-end order."""
    latest: dict[tuple[str, str | None], Verdict] = {}
    for verdict in verdicts:
        key = (verdict.workload_id, verdict.run_start)
        if key not in latest or verdict.revision >= latest[key].revision:
            latest[key] = verdict
    return sorted(latest.values(), key=lambda v: (v.job.end or "", v.workload_id))
