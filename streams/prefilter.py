"""The extractor's batch normalization: a LogLine only for the lines a rule may match.

Nearly every line matches nothing, yet the line counts per node and minute need every line's host
and time. A record of the shippers' common shape (``common_fields``: one line of text, a host, a
time, no workload) gives those in one pass; one Hyperscan scan of the batch's texts — the
matcher's own ``candidates`` on the very texts the full path would scan — tells which lines can
match, and only those become ``LogLine`` objects with an origin. The others are only counted.
Every other record takes ``normalize_record`` unchanged. So the matcher sees the same lines that
can fire, in the same order, and the counts see every line in record order: the batch's symptoms,
line counts, dead letters and job events are exactly the full path's (tests/streams/test_prefilter.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aiokafka.structs import ConsumerRecord

from correlator.evidence import SLOT_MS
from extractors.matchers import HyperscanMatcher
from streams.future_lines import AHEAD_LIMIT_MS, mark_ms, reference_ms
from streams.normalize import common_fields, normalize_record, topic_source
from streams.records import DeadLetter, JobEvent, LogLine
from streams.topics import record_time_ms

__all__ = ["PickedBatch", "pick_batch"]

Partition = tuple[str, int]


class PickedBatch:
    """One batch, normalized as far as extraction needs (a plain class: built once per batch)."""

    __slots__ = (
        "ahead", "dead", "events", "latest", "line_count", "lines", "lines_by_topic", "node_lines",
        "workload_lines",
    )  # fmt: skip

    def __init__(self) -> None:
        #: the lines the matcher must see (those a rule may match, and every general-path line)
        self.lines: list[LogLine] = []
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
    common: list[int] = []  # indexes of common-shape records
    texts: list[str] = []
    picked: list[tuple[str, str, int] | None] = []
    general: dict[int, list[LogLine]] = {}
    latest = out.latest
    for index, record in enumerate(records):
        source = sources[record.topic]
        try:  # inlined, not a helper: this loop runs for every line
            fields = (
                None if source is None else common_fields(source, record.value, record.key, kafka_ms(record))
            )
        except Exception:  # normalize_record below makes the same error a dead letter
            fields = None
        picked.append(fields)
        partition = (record.topic, record.partition)
        if fields is not None:
            common.append(index)
            texts.append(fields[0])
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
            seen = latest.get(partition)
            if seen is None or time_ms > seen:
                latest[partition] = time_ms
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
        _observe(latest, partition, [_mark(out, record, time_ms) for time_ms in times])
    hits = {common[line] for line, _ in matcher.candidates(texts)}
    for index in sorted(hits.union(general)):
        _add_lines(out, records[index], picked[index], general.get(index), sources)
    out.line_count = len(common) + sum(map(len, general.values()))
    _count_topics(out, records, picked, general)
    out.node_lines = {(node, slot * SLOT_MS): (c, t) for (node, slot), (c, t) in slots.items()}
    return out


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


def _add_lines(
    out: PickedBatch,
    record: ConsumerRecord,
    fields: tuple[str, str, int] | None,
    lines: list[LogLine] | None,
    sources: dict[str, str | None],
) -> None:
    if lines is not None:
        out.lines += lines
    elif fields is not None:
        source = sources[record.topic] or ""
        out.lines.append(LogLine(fields[0], fields[1], fields[2], source, _origin(record), None, None))


def _count(slots: dict[tuple[str, int], list[int]], host: str, time_ms: int) -> None:
    """correlator.batching's count of a node's line (first seen order kept: records are built from it)."""
    entry = slots.get((host, time_ms // SLOT_MS))
    if entry is None:
        slots[(host, time_ms // SLOT_MS)] = [1, time_ms]
    else:
        entry[0] += 1
        if time_ms > entry[1]:
            entry[1] = time_ms


def _observe(latest: dict[Partition, int | None], partition: Partition, times: list[int]) -> None:
    """A general-path record: its latest event time (its lines' and job events'), None if none."""
    seen = latest.get(partition)
    if times and (seen is None or max(times) > seen):
        latest[partition] = max(times)
    elif partition not in latest:
        latest[partition] = None


def _count_topics(
    out: PickedBatch,
    records: Sequence[ConsumerRecord],
    picked: list[tuple[str, str, int] | None],
    general: dict[int, list[LogLine]],
) -> None:
    by_topic = out.lines_by_topic
    for index, record in enumerate(records):
        lines = 1 if picked[index] is not None else len(general[index])
        by_topic[record.topic] = by_topic.get(record.topic, 0) + lines


def _origin(record: ConsumerRecord) -> str:
    return f"{record.topic}:{record.partition}:{record.offset}"
