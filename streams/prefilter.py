"""The extractor's batch normalization: a LogLine only for the lines a rule may match.

Nearly every line matches nothing, yet the line counts per node and minute need every line's host
and time. A record of the shippers' common shape (``common_fields``: one line of text, a host, a
time, no workload) gives those in one pass; one Hyperscan scan of the batch's texts — the
matcher's own ``hits`` on the very texts the full path would scan — tells which lines can
match, and only those become ``LogLine`` objects with an origin, what the scan found on them going
along (``PickedBatch.hits``: the matcher confirms them without a second scan). The others are
only counted.
Every other record takes ``normalize_record`` unchanged. So the matcher sees the same lines that
can fire, in the same order, and the counts see every line in record order: the batch's symptoms,
line counts, dead letters and job events are exactly the full path's (tests/streams/test_prefilter.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from operator import attrgetter

from aiokafka.structs import ConsumerRecord
from orjson import loads

from correlator.evidence import SLOT_MS
from extractors.matchers import HyperscanMatcher
from streams.fast_pick import fast_pick_record
from streams.future_lines import AHEAD_LIMIT_MS, mark_ms, reference_ms
from streams.normalize import SCHEDULER_SOURCE as SCHEDULER
from streams.normalize import common_fields, normalize_record, topic_source
from streams.normalize.log_record import USER_WRITTEN_SOURCES, common_record_fields
from streams.records import DeadLetter, JobEvent, LogLine
from streams.topics import record_time_ms

__all__ = ["PickedBatch", "pick_batch"]

Partition = tuple[str, int]
#: streams/normalize/_fastpick.c: ``_common``'s answer in C, or None for "not sure"; None when the
#: module is not built or FAULTSTREAM_PURE_PICK=1 (tests/streams/test_fastpick.py)
_fast = fast_pick_record
_TOPIC = attrgetter("topic")


class PickedBatch:
    """One batch, normalized as far as extraction needs (a plain class: built once per batch)."""

    __slots__ = (
        "ahead", "dead", "events", "hits", "latest", "line_count", "lines", "lines_by_topic", "node_lines",
        "workload_lines",
    )  # fmt: skip

    def __init__(self) -> None:
        #: the lines the matcher must see (those a rule may match, and every general-path line)
        self.lines: list[LogLine] = []
        #: what the scan found on them: (index in lines, rule index) → the include patterns' mask,
        #: as ``HyperscanMatcher.hits`` gives it (``match_hits`` confirms them; no second scan)
        self.hits: dict[tuple[int, int], int] = {}
        self.events: list[JobEvent] = []
        self.dead: list[DeadLetter] = []
        #: every line of the batch, matched or not
        self.line_count = 0
        self.lines_by_topic: dict[str, int] = {}
        #: per input partition, the latest event time a record carried (None: none carried any)
        self.latest: dict[Partition, int | None] = {}
        #: per topic, the lines and job events too far ahead of their record to move event time
        #: (streams/future_lines.py: ``latest`` took their record's time instead)
        self.ahead: dict[str, int] = {}
        #: as correlator.batching counts them: (node, slot start ms) → (lines, latest time)
        self.node_lines: dict[tuple[str, int], tuple[int, int]] = {}
        self.workload_lines: dict[str, int] = {}


def pick_batch(
    records: Sequence[ConsumerRecord], topics: Mapping[str, str], matcher: HyperscanMatcher
) -> PickedBatch:
    out = PickedBatch()
    slots: dict[tuple[str, int], list[int]] = {}
    sources = {topic: topic_source(topic, topics) for topic in {r.topic for r in records}}
    logs = {topic: source for topic, source in sources.items() if source is not None and source != SCHEDULER}
    common: list[int] = []  # indexes of common-shape records
    texts: list[str] = []
    fields_of: list[tuple[str, str, int]] = []  # the common records' (text, host, time), as texts
    general: dict[int, list[LogLine]] = {}
    latest = out.latest
    # getmany hands records over partition by partition: the latest time of each run of them
    run: Partition = ("", -1)
    run_ms: int | None = None
    fast, user_written = _fast, USER_WRITTEN_SOURCES  # locals: read once per line
    for index, record in enumerate(records):
        if record.partition != run[1] or record.topic != run[0]:
            _end_run(latest, run, run_ms)
            run, run_ms = (record.topic, record.partition), None
        source = logs.get(record.topic)
        if source is None:
            fields = None
        else:  # the hot path: the compiled picker (None: it declines), then the Python one
            fields = fast(record, source, user_written) if fast is not None else None
            if fields is None:
                fields = _common(record, source)
        if fields is not None:
            common.append(index)
            texts.append(fields[0])
            fields_of.append(fields)
            time_ms = fields[2]
            slot = slots.get((fields[1], time_ms // SLOT_MS))  # as correlator.batching counts
            if slot is None:
                slots[(fields[1], time_ms // SLOT_MS)] = [1, time_ms]
            else:
                slot[0] += 1
                if time_ms > slot[1]:
                    slot[1] = time_ms
            if record.headers or time_ms > record.timestamp + AHEAD_LIMIT_MS:  # maybe too far ahead
                time_ms = _mark(out, record, time_ms)
            if run_ms is None or time_ms > run_ms:
                run_ms = time_ms
            continue
        normalized = normalize_record(
            record.topic, record.value, record.key, kafka_ms(record), _origin(record), topics,
        )  # fmt: skip
        lines = general[index] = normalized.lines
        out.events += normalized.events
        out.dead += normalized.dead
        for line in lines:
            if line.workload_id:
                out.workload_lines[line.workload_id] = out.workload_lines.get(line.workload_id, 0) + 1
            elif line.host:
                _count(slots, line.host, line.time_ms)
        times = [line.time_ms for line in lines] + [e.time_ms for e in normalized.events]
        _observe(latest, run, [_mark(out, record, time_ms) for time_ms in times])
    _end_run(latest, run, run_ms)
    found = matcher.hits(texts)  # one scan of the common records' texts
    _add_picked(out, records, sources, common, fields_of, found, general, matcher)
    out.line_count = len(common) + sum(map(len, general.values()))
    _count_topics(out, records, general)
    out.node_lines = {(node, slot * SLOT_MS): (c, t) for (node, slot), (c, t) in slots.items()}
    return out


def _common(record: ConsumerRecord, source: str) -> tuple[str, str, int] | None:
    """``common_fields`` of a log topic's record; None: the general path decides it (errors included)."""
    value, stamp = record.value, record.timestamp
    try:
        if type(value) is bytes and record.key is None and not record.headers and type(stamp) is int:
            # what shippers send: common_json_fields, its decode inlined (one call less per line)
            if value[:1] != b"{":
                return None
            decoded = loads(value)
            if type(decoded) is not dict:
                return None
            stamp = stamp if stamp >= 0 else None  # common_fields' own reading of the Kafka time
            return common_record_fields(decoded, source, None, stamp, stamp)
        return common_fields(source, value, record.key, kafka_ms(record))
    except Exception:  # normalize_record makes the same error (a JSON one included) a dead letter
        return None


def _mark(out: PickedBatch, record: ConsumerRecord, time_ms: int) -> int:
    """How far a line or job event of ``record`` moves event time (streams/future_lines.py): its
    record's time when it is too far ahead of it, counted."""
    marked = mark_ms(time_ms, reference_ms(record.timestamp, record.headers))
    if marked != time_ms:
        out.ahead[record.topic] = out.ahead.get(record.topic, 0) + 1
    return marked


def kafka_ms(record: ConsumerRecord) -> int:
    """The record's time as the extractor reads it (its recorded time when it was replayed)."""
    return record.timestamp if not record.headers else record_time_ms(record.timestamp, record.headers)


def _add_picked(
    out: PickedBatch,
    records: Sequence[ConsumerRecord],
    sources: dict[str, str | None],
    common: list[int],
    fields_of: list[tuple[str, str, int]],
    found: dict[tuple[int, int], int],
    general: dict[int, list[LogLine]],
    matcher: HyperscanMatcher,
) -> None:
    """The lines the matcher must see, in record order, with the scan's hits renumbered to them
    (``found``: the common texts' (line, rule) → mask); the general path's lines were not among
    those texts and are scanned here, on their own."""
    rules_at: dict[int, list[tuple[int, int]]] = {}  # a common text's (rule, mask) pairs
    for (line, rule), mask in found.items():
        rules_at.setdefault(line, []).append((rule, mask))
    picked = {common[line]: line for line in rules_at}  # record index → its text
    lines, hits = out.lines, out.hits
    unscanned: list[int] = []  # where the general path's lines are in ``lines``
    for index in sorted([*picked, *general]):
        made = general.get(index)
        if made is not None:
            unscanned += range(len(lines), len(lines) + len(made))
            lines += made
            continue
        record, line = records[index], picked[index]
        text, host, time_ms = fields_of[line]
        for rule, mask in rules_at[line]:
            hits[len(lines), rule] = mask
        lines.append(LogLine(text, host, time_ms, sources[record.topic] or "", _origin(record), None, None))
    if unscanned:
        for (line, rule), mask in matcher.hits([lines[at].text for at in unscanned]).items():
            hits[unscanned[line], rule] = mask


def _count(slots: dict[tuple[str, int], list[int]], host: str, time_ms: int) -> None:
    """correlator.batching's count of a node's line (first seen order kept: records are built from it)."""
    entry = slots.get((host, time_ms // SLOT_MS))
    if entry is None:
        slots[(host, time_ms // SLOT_MS)] = [1, time_ms]
    else:
        entry[0] += 1
        if time_ms > entry[1]:
            entry[1] = time_ms


def _end_run(latest: dict[Partition, int | None], partition: Partition, run_ms: int | None) -> None:
    """A run of one partition's records ends: the latest time its common records carried."""
    if run_ms is not None:
        seen = latest.get(partition)
        if seen is None or run_ms > seen:
            latest[partition] = run_ms


def _observe(latest: dict[Partition, int | None], partition: Partition, times: list[int]) -> None:
    """A general-path record: its latest event time (its lines' and job events'), None if none."""
    seen = latest.get(partition)
    if times and (seen is None or max(times) > seen):
        latest[partition] = max(times)
    elif partition not in latest:
        latest[partition] = None


def _count_topics(
    out: PickedBatch, records: Sequence[ConsumerRecord], general: dict[int, list[LogLine]]
) -> None:
    """Lines per topic in first-seen order: a common record is one line (counted in C), a
    general one as many as it made."""
    by_topic = out.lines_by_topic = dict(Counter(map(_TOPIC, records)))
    for index, lines in general.items():
        by_topic[records[index].topic] += len(lines) - 1


def _origin(record: ConsumerRecord) -> str:
    return f"{record.topic}:{record.partition}:{record.offset}"
