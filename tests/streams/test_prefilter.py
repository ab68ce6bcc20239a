"""The extractor's prefilter (streams/prefilter.py) gives exactly what normalizing every record gives.

The reference is the full path the extractor took before: ``normalize_record`` on every record,
the matcher on every line, ``collapse_batch`` counting every line. Compared: the symptoms (in
order), the line counts per node and minute and per workload (in order: records are built from
them), dead letters, job events, the latest event time per input partition, lines per topic.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from aiokafka.structs import ConsumerRecord
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from correlator.batching import collapse_batch
from extractors.matchers import HyperscanMatcher
from scripts.bench import workload
from streams.future_lines import mark_ms, reference_ms
from streams.normalize import normalize_record
from streams.prefilter import PickedBatch, pick_batch
from streams.records import DEFAULT_TOPICS, LogLine
from streams.topics import RECORDED_TIME_HEADER, record_time_ms
from tests.streams.test_hostile_input import consumer_records

REPO = Path(__file__).resolve().parents[2]
TOPICS = {**DEFAULT_TOPICS, "logs.other": "applog"}
PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))


def _corpus_texts() -> list[str]:
    texts = []
    for folder in ("lines", "healthy"):
        for path in sorted((REPO / "tests" / "corpus" / folder).glob("*.jsonl")):
            texts += [orjson.loads(raw)["line"] for raw in path.read_bytes().splitlines() if raw.strip()]
    return texts


CORPUS = _corpus_texts()
SYMPTOMS = [text for text, _ in workload.symptom_lines()]
HEADERS_AHEAD = [
    "",
    "May  1 10:00:00 gpu003 kernel: ",
    "<4>May  1 10:00:00 gpu004 ",
    "[ 8123.123456] ",
    "2024-05-01T10:00:00+0000 gpu005 kernel: ",
    "[Fri Aug 30 11:43:09 2024] ",
]
TEXT = st.one_of(
    st.sampled_from(CORPUS),
    st.sampled_from(SYMPTOMS),
    st.builds(
        lambda head, line: head + line, st.sampled_from(HEADERS_AHEAD), st.sampled_from(CORPUS + SYMPTOMS)
    ),
    # what a JSON value carries escaped, or what the normalizer rewrites (#012, #011, \r, \n)
    st.builds(
        lambda a, sep, b: a + sep + b,
        st.sampled_from(SYMPTOMS),
        st.sampled_from(["\n", "#012", "#011", "\t", "\r", '"', "\\", "\u00e9", "\x00", "\u2028"]),
        st.sampled_from(SYMPTOMS),
    ),
    st.text(max_size=30),
)
TIME = st.one_of(
    st.floats(1.7e9, 1.8e9),
    st.integers(1_700_000_000_000, 1_800_000_000_000),
    st.sampled_from(
        [
            "2024-05-01T10:00:00.123Z",
            "2024-05-01T10:00:59Z",
            "2024-05-01 10:01:00",
            "1714557600.5",
            "not a time",
            "2024-13-01T00:00:00Z",
        ]
    ),
    st.none(),
)
HOST = st.sampled_from(["gpu001", "gpu002", "", "gpu\x1b[2J"]) | st.none() | st.integers(0, 10**6)


@st.composite
def shipper_values(draw: st.DrawFn) -> dict[str, Any]:
    """Fluent Bit, Vector and generic records, most of them the common shape, some not."""
    value: dict[str, Any] = {draw(st.sampled_from(["log", "message", "MESSAGE", "msg"])): draw(TEXT)}
    for keys, strategy in (
        (["host", "hostname", "_HOSTNAME", "kubernetes"], HOST),
        (["@timestamp", "timestamp", "time"], TIME),
        (["job_id", "rank", "SLURM_JOB_ID", "source_type", "log"], st.sampled_from(["42", 3, "x"])),
    ):
        for key in draw(st.lists(st.sampled_from(keys), max_size=2, unique=True)):
            value[key] = draw(strategy) if key != "kubernetes" else {"host": draw(HOST)}
    return value


@st.composite
def shipper_records(draw: st.DrawFn) -> list[ConsumerRecord]:
    records = []
    for offset in range(draw(st.integers(1, 12))):
        value = draw(shipper_values())
        encoded = (
            orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS) if draw(st.booleans()) else _ascii_json(value)
        )
        headers = draw(st.sampled_from([[], [(RECORDED_TIME_HEADER, b"1714557600000")], [("x", b"1")]]))
        records.append(
            _record(
                draw(st.sampled_from([*sorted(TOPICS), "weird"])),
                encoded,
                offset,
                draw(st.integers(-1, 2**41)),
                draw(st.none() | st.just(b"gpu009")),
                headers,
            )
        )
    return records


def _ascii_json(value: object) -> bytes:
    import json

    return json.dumps(value).encode()  # every non-ASCII character escaped (\u00e9): still the same text


def _record(
    topic: str,
    value: bytes | None,
    offset: int,
    timestamp: int,
    key: bytes | None = None,
    headers: list | None = None,
    partition: int = 0,
) -> ConsumerRecord:
    return ConsumerRecord(topic, partition, offset, timestamp, 0, key, value, None, 0, 0, headers or [])


def _full_path(records: list[ConsumerRecord], matcher: HyperscanMatcher) -> dict[str, Any]:
    """The extractor before the prefilter: every record normalized, every line matched and counted."""
    lines: list[LogLine] = []
    events, dead, latest, by_topic = [], [], {}, {}
    for record in records:
        key = record.key.decode("utf-8", "replace") if record.key is not None else None
        out = normalize_record(
            record.topic,
            record.value,
            key,
            record_time_ms(record.timestamp, record.headers),
            f"{record.topic}:{record.partition}:{record.offset}",
            TOPICS,
        )
        lines += out.lines
        events += out.events
        dead += out.dead
        by_topic[record.topic] = by_topic.get(record.topic, 0) + len(out.lines)
        times = [line.time_ms for line in out.lines] + [event.time_ms for event in out.events]
        # event time moves by each line's own time, or its record's when it is far ahead of it
        times = [mark_ms(t, reference_ms(record.timestamp, record.headers)) for t in times]
        partition = (record.topic, record.partition)
        if times and (latest.get(partition) is None or max(times) > latest[partition]):
            latest[partition] = max(times)
        latest.setdefault(partition, None)
    batch = collapse_batch(lines, matcher.extract_batch(lines))
    return _summary(
        matcher.extract_batch(lines),
        batch.node_lines,
        batch.workload_lines,
        events,
        dead,
        latest,
        by_topic,
        len(lines),
    )


def _picked(records: list[ConsumerRecord], matcher: HyperscanMatcher) -> dict[str, Any]:
    picked: PickedBatch = pick_batch(records, TOPICS, matcher)
    return _summary(
        [symptom for _, symptom in matcher.match_hits(picked.lines, picked.hits)],  # as the extractor does
        picked.node_lines,
        picked.workload_lines,
        picked.events,
        picked.dead,
        picked.latest,
        picked.lines_by_topic,
        picked.line_count,
    )


def _summary(symptoms, node_lines, workload_lines, events, dead, latest, by_topic, count) -> dict[str, Any]:
    return {
        "symptoms": [s.to_dict() for s in symptoms],
        "node_lines": list(node_lines.items()),
        "workload_lines": list(workload_lines.items()),
        "events": events,
        "dead": dead,
        "latest": latest,
        "by_topic": list(by_topic.items()),
        "lines": count,
    }


@PROPERTY
@given(shipper_records())
def test_shipper_records_give_the_full_paths_symptoms_and_counts(bundled_matcher, records) -> None:
    assert _picked(records, bundled_matcher) == _full_path(records, bundled_matcher)


@PROPERTY
@given(consumer_records())
def test_any_record_gives_the_full_paths_symptoms_and_counts(bundled_matcher, records) -> None:
    assert _picked(records, bundled_matcher) == _full_path(records, bundled_matcher)


@pytest.mark.parametrize(
    "name", sorted(p.name for p in (REPO / "tests" / "golden" / "recordings").glob("*.jsonl"))
)
def test_golden_recordings_give_the_full_paths_symptoms_and_counts(bundled_matcher, name: str) -> None:
    """Each recording's records as Kafka hands them over (bytes), on two partitions."""
    raws = (REPO / "tests" / "golden" / "recordings" / name).read_bytes().splitlines()
    records = []
    for offset, raw in enumerate(r for r in raws if r.strip()):
        try:
            item = orjson.loads(raw)
            value = item.get("value")
            value = value.encode() if isinstance(value, str) else None if value is None else orjson.dumps(value)
            key = item.get("key").encode() if isinstance(item.get("key"), str) else None
            records.append(
                _record(item["topic"], value, offset, item.get("timestamp") or -1, key, partition=offset % 2)
            )
        except (orjson.JSONDecodeError, AttributeError, KeyError, TypeError):
            records.append(_record("logs.syslog", raw, offset, -1))
    assert _picked(records, bundled_matcher) == _full_path(records, bundled_matcher)


@pytest.mark.parametrize("kind", ["sparse", "storm"])
def test_the_benchmark_workloads_give_the_full_paths_symptoms_and_counts(bundled_matcher, kind: str) -> None:
    source = (
        workload.storm_records(128, 3000)
        if kind == "storm"
        else (
            workload.shipper_record(t, s, h, 1_714_557_600_000 + i * 997)
            for i, (t, s, h) in enumerate(workload.lines(3000, symptom_rate=0.05))
        )
    )
    records = [
        _record(r["topic"], orjson.dumps(r["value"]), i, r["timestamp"], partition=i % 4)
        for i, r in enumerate(source)
    ]
    picked, full = _picked(records, bundled_matcher), _full_path(records, bundled_matcher)
    assert picked == full
    assert full["symptoms"] and full["node_lines"]  # the comparison compared something
