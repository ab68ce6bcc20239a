"""normalize_record itself: topic routing, value decoding, and never raising."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streams.normalize as normalize_module
from streams.normalize import Normalized, normalize_record
from streams.records import DEFAULT_TOPICS, DeadLetter, LogLine

XID79 = "NVRM: Xid (PCI:0000:e4:00): 79, pid=1234, name=python, GPU has fallen off the bus."
RECORD = {"@timestamp": 1714560000.0, "log": XID79, "host": "gpu001"}
TIME_MS = 1714560000000


def test_default_topics_map_each_log_topic_to_its_source() -> None:
    for topic, source in DEFAULT_TOPICS.items():
        if topic.startswith("logs."):
            [parsed] = normalize_record(topic, RECORD, None, None, "o").lines
            assert parsed.source == source


def test_unmapped_logs_topic_carries_syslog_lines() -> None:
    result = normalize_record("logs.nodes-east", RECORD, None, None, "logs.nodes-east:0:1")
    assert result.lines == [LogLine(XID79, "gpu001", TIME_MS, "syslog", "logs.nodes-east:0:1")]


def test_a_custom_topic_map_routes_any_topic() -> None:
    topics = {"fluent-bit": "dmesg", "k8s-events": "scheduler"}
    [parsed] = normalize_record("fluent-bit", RECORD, None, None, "o", topics).lines
    assert parsed.source == "dmesg"


def test_unknown_topic_is_a_dead_letter() -> None:
    result = normalize_record("metrics.gpu", RECORD, None, None, "metrics.gpu:0:1")
    assert result == Normalized(
        [], [], [DeadLetter("unknown topic 'metrics.gpu'", "metrics.gpu", "metrics.gpu:0:1", RECORD)]
    )


def test_bytes_holding_a_json_object_are_decoded_with_orjson() -> None:
    result = normalize_record("logs.dmesg", orjson.dumps(RECORD), None, None, "o")
    assert result.lines == [LogLine(XID79, "gpu001", TIME_MS, "dmesg", "o")]


def test_bytes_holding_a_raw_line_are_decoded_as_utf8_with_replacement() -> None:
    raw = b"[ 49.261458] NVRM: bad byte \xff here"
    result = normalize_record("logs.dmesg", raw, b"gpu001", TIME_MS, "o")  # type: ignore[arg-type]
    assert result.lines == [LogLine("[ 49.261458] NVRM: bad byte \ufffd here", "gpu001", TIME_MS, "dmesg", "o")]


def test_bytes_that_look_like_a_json_object_but_do_not_parse_are_a_dead_letter() -> None:
    raw = b'{"log": "truncated'
    [dead] = normalize_record("logs.dmesg", raw, "gpu001", TIME_MS, "o").dead
    assert dead.reason.startswith("record value looks like a JSON object but does not parse: ")
    assert (dead.topic, dead.origin, dead.value) == ("logs.dmesg", "o", '{"log": "truncated')


def test_a_json_list_value_is_a_dead_letter_not_one_record_per_element() -> None:
    reason = "expected a JSON object or a string, got a list"
    for value in ([RECORD], orjson.dumps([RECORD])):
        result = normalize_record("logs.dmesg", value, "gpu001", TIME_MS, "o")
        assert [dead.reason for dead in result.dead] == [reason]
        assert result.lines == []


def test_a_number_value_is_a_dead_letter() -> None:
    result = normalize_record("logs.dmesg", 42, "gpu001", TIME_MS, "o")
    assert result.dead == [DeadLetter("expected a JSON object or a string, got a int", "logs.dmesg", "o", 42)]


def test_a_tombstone_is_a_dead_letter() -> None:
    result = normalize_record("logs.dmesg", None, "gpu001", TIME_MS, "o")
    assert result.dead == [DeadLetter("empty record value (a tombstone?)", "logs.dmesg", "o", None)]


def test_kafka_no_timestamp_minus_one_is_no_timestamp() -> None:
    result = normalize_record("logs.dmesg", "[1.0] x", "gpu001", -1, "o")
    reason = "no event time: no time in the line, no record time field, no Kafka timestamp"
    assert [dead.reason for dead in result.dead] == [reason]


def test_a_string_on_the_scheduler_topic_is_unrecognised() -> None:
    result = normalize_record("events.scheduler", "job 12 ended", None, TIME_MS, "o")
    reason = "unrecognised scheduler record (expected Slurm jobcomp, Kubernetes Event or canonical form)"
    assert result.dead == [DeadLetter(reason, "events.scheduler", "o", "job 12 ended")]


def test_a_bug_in_a_normalizer_costs_one_record_as_a_dead_letter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(*args: object) -> list[LogLine]:
        raise KeyError("oops")

    monkeypatch.setattr(normalize_module, "normalize_log_record", broken)
    result = normalize_record("logs.dmesg", RECORD, None, None, "o")
    assert result.dead == [DeadLetter("internal error: KeyError: 'oops'", "logs.dmesg", "o", RECORD)]


JSON_LEAF = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40)
JSON = st.recursive(
    JSON_LEAF,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner),
    max_leaves=12,
)
KEYS = st.sampled_from(
    ["log", "message", "MESSAGE", "msg", "host", "hostname", "@timestamp", "timestamp", "time",
     "job_id", "rank", "kubernetes", "jobid", "state", "@start", "@end", "nodes", "exit_code",
     "involvedObject", "reason", "lastTimestamp", "type", "workload_id", "node", "source"]
)  # fmt: skip
RECORDS = st.dictionaries(KEYS | st.text(max_size=8), JSON, max_size=8)
VALUES = RECORDS | JSON | st.text(max_size=80) | st.binary(max_size=80)
TOPICS = st.sampled_from(["logs.dmesg", "logs.syslog", "logs.applog", "events.scheduler",
                          "logs.other", "other"])  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(
    topic=TOPICS,
    value=VALUES,
    key=st.none() | st.text(max_size=10),
    timestamp=st.none() | st.integers(min_value=-5, max_value=2**45),
)
def test_normalize_record_never_raises_and_never_loses_a_record(
    topic: str, value: object, key: str | None, timestamp: int | None
) -> None:
    result = normalize_record(topic, value, key, timestamp, "o")
    assert result.lines or result.events or result.dead
    assert not (result.dead and (result.lines or result.events))
    for dead in result.dead:
        assert dead.reason and not dead.reason.startswith("internal error"), dead.reason


HEADER_STARTS = st.sampled_from(
    ["<", "<34>", "<34>1 ", "<6>[", "Feb ", "Feb 29 ", "Dec 31 23:59:", "[", "[Fri ", "[Feb 27 2025 ",
     "[  +", "kern  :warn  : ", "kern  :warn  : 2025-01-21T", "2024-05-01T", "2024-05-01T10:00:00"]
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(start=HEADER_STARTS, rest=st.text(max_size=40), timestamp=st.none() | st.integers(-1, 2**45))
def test_lines_that_start_like_a_header_never_break_the_header_parser(
    start: str, rest: str, timestamp: int | None
) -> None:
    result = normalize_record("logs.syslog", start + rest, "gpu001", timestamp, "o")
    assert [dead.reason for dead in result.dead if dead.reason.startswith("internal error")] == []


LINE_TEXTS = st.one_of(
    st.text(max_size=60),
    st.sampled_from(
        ["NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.",
         "Feb 14 05:03:41 gpu01 kernel: x", "<34>1 2024-05-01T10:00:00.123Z gpu02 app 1 - - m",
         "[12345.678901] e1000e: Detected Hardware Unit Hang", "2024-05-01T10:00:00+0000 gpu03 kernel: y",
         "a#012b", "two\nlines", "cr\r", "  "]
    ),
)  # fmt: skip
STAMPS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-10, max_value=2**45),
    st.sampled_from(["2024-05-01T10:00:00.003Z", "2024-05-01T10:00:00Z", "1714557600.5", "soon", ""]),
    st.none(),
)
SHIPPER_RECORDS = st.fixed_dictionaries(
    {},
    optional={
        "log": LINE_TEXTS, "message": LINE_TEXTS | st.integers(-(2**40), 2**40),
        "MESSAGE": LINE_TEXTS, "msg": LINE_TEXTS,
        "host": st.sampled_from(["gpu01", "", None]), "hostname": st.sampled_from(["gpu02", 7]),
        "_HOSTNAME": st.just("gpu03"), "source_type": st.just("file"), "@timestamp": STAMPS,
        "timestamp": STAMPS, "time": STAMPS, "job_id": st.just("42"), "kubernetes": st.just({"host": "k1"}),
    },
)  # fmt: skip


@settings(max_examples=600, deadline=None)
@given(
    record=SHIPPER_RECORDS,
    topic=st.sampled_from(["logs.syslog", "logs.applog", "logs.dmesg"]),
    key=st.none() | st.sampled_from(["gpu09", ""]),
    timestamp=st.none() | st.integers(min_value=-1, max_value=2**45),
)
def test_the_common_shape_fast_path_gives_what_the_general_path_gives(
    record: dict, topic: str, key: str | None, timestamp: int | None
) -> None:
    raw = orjson.dumps(record)
    general = normalize_record(topic, orjson.loads(raw), key, timestamp, "o")  # a dict: general path
    fast = normalize_record(topic, raw, key, timestamp, "o")
    assert (fast.lines, fast.events) == (general.lines, general.events)
    assert [d.reason for d in fast.dead] == [d.reason for d in general.dead]
