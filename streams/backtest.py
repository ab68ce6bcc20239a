"""Replay a recording through the engine, offline: the rule author's backtest.

The same :class:`~correlator.engine.AttributionEngine` the live pipeline's stages are made of.
Records are read in file order and handled in batches, as the extractor worker fetches them
from Kafka. With ``workers > 1`` the per-line work (parse, normalize, extract, collapse) runs in
worker processes, batch by batch; the correlation stays in this process and consumes the batches
in file order, so the verdicts are the same whatever the number of workers.

This is the adapter around the pure engine: it reads the recording, builds the matcher (with its
database cache in ``matcher_cache_dir``) and dates lines without a year near the recording's time.
A recording line holding one shipper record is read in C (``pick_line``, the live extractor's
compiled picker: streams/normalize/_fastpick.c) without decoding it in Python; every line it
declines takes the Python path, which gives the same lines wherever both answer
(tests/streams/test_backtest_fastpick.py).
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path

from correlator.batching import BatchContribution, collapse_batch
from correlator.claims import ClaimCheck
from correlator.engine import AttributionEngine
from correlator.settings import CorrelatorSettings
from correlator.verdict import Verdict
from extractors.loader import Ruleset
from extractors.matchers import HyperscanMatcher, ReferenceMatcher
from streams.fast_pick import PickLine, fast_pick_line
from streams.future_lines import AHEAD_LIMIT_MS, mark_ms
from streams.gc_policy import relax_for_batches
from streams.normalize import SCHEDULER_SOURCE, common_fields, normalize_record, topic_source
from streams.normalize.log_record import USER_WRITTEN_SOURCES
from streams.recording import parse_recording_line
from streams.records import DEFAULT_TOPICS, DeadLetter, JobEvent, LogLine
from streams.settings import DEFAULT_MATCHER_CACHE_DIR

__all__ = ["BacktestResult", "backtest", "default_workers", "latest_revisions", "recording_time_ms"]

#: Bytes of recording per batch (about 4,000 records of a few hundred bytes).
BATCH_BYTES = 1 << 20


@dataclass
class BacktestResult:
    verdicts: list[Verdict]
    dead_letters: list[DeadLetter]
    records: int = 0
    seconds: float = 0.0
    engine: AttributionEngine | None = None
    dead_reasons: Counter = field(default_factory=Counter)
    #: lines and job events too far ahead of their record's time to move event time
    ahead_of_record: int = 0


@dataclass
class _Marks:
    """How far a batch's lines and job events move event time: each its own time, or its record's
    when it is too far ahead of it (streams/future_lines.py, as the live extractor bounds them)."""

    latest_ms: int | None = None
    ahead: int = 0

    def add(self, time_ms: int, reference_ms: int | None) -> None:
        marked = mark_ms(time_ms, reference_ms)
        if marked != time_ms:
            self.ahead += 1
        if self.latest_ms is None or marked > self.latest_ms:
            self.latest_ms = marked


@dataclass
class _Extracted:
    """What one batch of recording lines amounts to, ready for the correlator."""

    records: int
    lines: int
    events: list[JobEvent]
    batch: BatchContribution
    latest_ms: int | None
    dead: list[DeadLetter]
    by_rule: Counter
    marks: _Marks = field(default_factory=_Marks)


def _raw_blocks(path: Path, block_bytes: int) -> Iterator[tuple[int, bytes]]:
    """(number of the block's first line, whole lines of about ``block_bytes``): one bytes object
    per batch is all a worker process needs, and the cheapest thing to hand it."""
    line_no = 1
    with path.open("rb") as handle:
        while True:
            block = handle.read(block_bytes)
            if not block:
                return
            if not block.endswith(b"\n"):
                block += handle.readline()
            yield line_no, block
            line_no += block.count(b"\n") + (0 if block.endswith(b"\n") else 1)


#: The log topics the compiled picker may answer for, topic → source (``topic_source``'s answer;
#: never the scheduler's topic): the default topics', and other ``logs.*`` topics as the Python
#: path meets them (once per topic and process).
_LOG_SOURCES: dict[str, str] = {
    topic: source for topic, source in DEFAULT_TOPICS.items() if source != SCHEDULER_SOURCE
}
#: What ``_extract`` normalizes with: the compiled picker, or None (the Python path alone; tests)
_PICK_LINE: PickLine | None = fast_pick_line


def _normalize(
    first: int,
    block: bytes,
    reference_ms: int | None,
    marks: _Marks | None = None,
    pick_line: PickLine | None = fast_pick_line,
) -> tuple[int, list[LogLine], list[JobEvent], list[DeadLetter]]:
    """A block's records, lines, job events and dead letters. ``pick_line``: the compiled picker
    (streams/normalize/_fastpick.c), asked first for every line; every line it declines takes the
    Python path below unchanged (None: the Python path alone, as without a C compiler)."""
    lines: list[LogLine] = []
    events: list[JobEvent] = []
    dead: list[DeadLetter] = []
    records = 0
    log_sources, user_written = _LOG_SOURCES, USER_WRITTEN_SOURCES
    picked_latest = -1  # the latest time of the picked lines within the limit of their record's
    for offset, raw in enumerate(block.split(b"\n")):
        if pick_line is not None:  # the common recording line of one shipper line, read in C
            picked = pick_line(raw, first + offset, log_sources, user_written)
            if picked is not None:
                records += 1
                text, host, time_ms, source, origin, stamp = picked
                lines.append(LogLine(text, host, time_ms, source, origin, None, None))
                if time_ms > stamp + AHEAD_LIMIT_MS:  # stamp: an int >= 0, so mark_ms's test inline
                    if marks is not None:
                        marks.add(time_ms, stamp)
                elif time_ms > picked_latest:
                    picked_latest = time_ms
                continue
        if not raw.strip():
            continue
        records += 1
        record = parse_recording_line(raw, first + offset)
        if isinstance(record, DeadLetter):
            dead.append(record)
            continue
        source = topic_source(record.topic, DEFAULT_TOPICS)
        if source is not None and source != SCHEDULER_SOURCE and record.topic not in log_sources:
            log_sources[record.topic] = source
        try:  # nearly every record is one shipper line: one pass, no Normalized (the same LogLine)
            fields = None if source is None else common_fields(
                source, record.value, record.key, record.timestamp_ms, reference_ms
            )  # fmt: skip
        except Exception:  # normalize_record below makes the same error a dead letter
            fields = None
        if fields is not None:
            lines.append(LogLine(fields[0], fields[1], fields[2], source, record.origin, None, None))
            if marks is not None:
                marks.add(fields[2], record.timestamp_ms)
            continue
        out = normalize_record(
            record.topic, record.value, record.key, record.timestamp_ms, record.origin,
            reference_ms=reference_ms,
        )  # fmt: skip
        lines += out.lines
        events += out.events
        dead += out.dead
        if marks is not None:
            for time_ms in [line.time_ms for line in out.lines] + [event.time_ms for event in out.events]:
                marks.add(time_ms, record.timestamp_ms)
    if marks is not None and picked_latest >= 0:
        marks.add(picked_latest, None)  # the latest of them moves event time as each would have
    return records, lines, events, dead


_TIME_MS = attrgetter("time_ms")
_MATCHER: HyperscanMatcher | ReferenceMatcher | None = None
_CLAIMS = ClaimCheck(())
_REFERENCE_MS: int | None = None


@dataclass(frozen=True)
class _WorkerSetup:
    """What every worker process builds its extraction from."""

    ruleset: Ruleset
    reference_matcher: bool = False
    scheduler_hosts: frozenset[str] = frozenset()
    matcher_cache_dir: Path | None = DEFAULT_MATCHER_CACHE_DIR
    #: The time a line without a year is dated near when its record carries no time.
    reference_ms: int | None = None


def _worker_init(setup: _WorkerSetup) -> None:
    global _MATCHER, _CLAIMS, _REFERENCE_MS
    # one database and scratch space per process; the re reference matcher for comparisons
    _MATCHER = (
        ReferenceMatcher(setup.ruleset)
        if setup.reference_matcher
        else HyperscanMatcher(setup.ruleset, setup.matcher_cache_dir)
    )
    _CLAIMS = ClaimCheck(setup.scheduler_hosts)
    _REFERENCE_MS = setup.reference_ms
    relax_for_batches()


def _extract(job: tuple[int, bytes]) -> _Extracted:
    first, block = job
    assert _MATCHER is not None
    marks = _Marks()
    records, lines, events, dead = _normalize(first, block, _REFERENCE_MS, marks, _PICK_LINE)
    symptoms = _CLAIMS.keep_own_nodes(_MATCHER.extract_batch(lines))
    latest = max(map(_TIME_MS, lines), default=None)
    by_rule = Counter(s.rule_id for s in symptoms)
    batch = collapse_batch(lines, symptoms)
    return _Extracted(records, len(lines), events, batch, latest, dead, by_rule, marks)


def _extracted_batches(path: Path, setup: _WorkerSetup, workers: int, size: int) -> Iterator[_Extracted]:
    if workers <= 1:
        _worker_init(setup)
        yield from map(_extract, _raw_blocks(path, size))
        return
    context = multiprocessing.get_context("fork")
    with context.Pool(workers, initializer=_worker_init, initargs=(setup,)) as pool:
        yield from pool.imap(_extract, _raw_blocks(path, size), chunksize=1)


#: Below this much recording, worker processes cost more (start, one Hyperscan database each)
#: than they save.
SMALL_RECORDING_BYTES = 8 << 20


def default_workers(recording_bytes: int | None = None) -> int:
    if recording_bytes is not None and recording_bytes < SMALL_RECORDING_BYTES:
        return 1
    return max(1, min(4, os.cpu_count() or 1))


def backtest(
    path: Path,
    ruleset: Ruleset,
    settings: CorrelatorSettings | None = None,
    batch_bytes: int = BATCH_BYTES,
    workers: int = 1,
    reference_matcher: bool = False,
    matcher_cache_dir: Path | None = DEFAULT_MATCHER_CACHE_DIR,
    reference_ms: int | None = None,
) -> BacktestResult:
    """Replay ``path``; ``reference_matcher`` swaps Hyperscan for the ``re`` matcher (benchmarks).

    ``reference_ms`` dates a syslog line without a year when its record has no timestamp: by
    default the recording's time (the file's modification time), never the day of the backtest.
    """
    engine = AttributionEngine(ruleset, settings, matcher=_NoMatcher())
    result = BacktestResult([], [], engine=engine)
    started = time.perf_counter()
    setup = _WorkerSetup(
        ruleset,
        reference_matcher,
        engine.settings.scheduler_hosts,
        matcher_cache_dir,
        recording_time_ms(path) if reference_ms is None else reference_ms,
    )
    for extracted in _extracted_batches(path, setup, workers, batch_bytes):
        result.records += extracted.records
        result.dead_letters += extracted.dead
        engine.stats.lines += extracted.lines
        engine.stats.symptoms += sum(extracted.by_rule.values())
        engine.stats.by_rule.update(extracted.by_rule)
        result.ahead_of_record += extracted.marks.ahead
        result.verdicts += engine.feed_extracted(
            extracted.events, extracted.batch, extracted.latest_ms, extracted.marks.latest_ms
        )
    result.verdicts += engine.flush()
    result.seconds = time.perf_counter() - started
    result.dead_reasons.update(_reason_kind(d.reason) for d in result.dead_letters)
    return result


def recording_time_ms(path: Path) -> int:
    """When the recording was written: the reference for its lines that carry no year."""
    return path.stat().st_mtime_ns // 1_000_000


class _NoMatcher:
    """The backtest's engine only correlates: extraction runs in ``_extract`` (here or in workers)."""

    def extract_batch(self, lines: list) -> list:
        raise AssertionError("extraction runs in the worker processes")


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
