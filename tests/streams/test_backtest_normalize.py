"""The backtest's one-pass normalization of a recording's decoded value (``common_fields`` on a
dict, streams/backtest.py) gives what ``normalize_record``'s general path gives, or declines."""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from streams.normalize import common_fields, normalize_record, topic_source
from streams.records import DEFAULT_TOPICS, LogLine
from tests.streams.test_normalize_record import LINE_TEXTS, SHIPPER_RECORDS, STAMPS

#: Mostly the common shape (one text, a host, a time): the fast path is taken, not only declined.
COMMON_RECORDS = st.fixed_dictionaries(
    {
        "message": LINE_TEXTS
        | st.sampled_from(["kernel: x", "NCCL WARN Connection closed by remote peer gpu2<1>"]),
        "host": st.sampled_from(["gpu01", "", "gpu02"]),
        "timestamp": STAMPS,
    },
    optional={"hostname": st.just("gpu03"), "log": LINE_TEXTS, "job_id": st.just("42")},
)


@settings(max_examples=600, deadline=None)
@given(
    record=SHIPPER_RECORDS | COMMON_RECORDS,
    topic=st.sampled_from(["logs.syslog", "logs.applog", "logs.dmesg", "events.scheduler"]),
    key=st.none() | st.sampled_from(["gpu09", ""]),
    timestamp=st.none() | st.integers(min_value=-1, max_value=2**45),
    reference=st.none() | st.just(1_714_557_600_000),
)
def test_the_decoded_fast_path_gives_what_the_general_path_gives(
    record: dict, topic: str, key: str | None, timestamp: int | None, reference: int | None
) -> None:
    source = topic_source(topic, DEFAULT_TOPICS)
    assert source is not None
    try:
        fields = common_fields(source, record, key, timestamp, reference)
    except Exception:  # e.g. a year past 9999: the backtest takes the general path (a dead letter)
        fields = None
    if fields is None:
        return  # declined: the backtest takes the general path
    general = normalize_record(topic, record, key, timestamp, "o", reference_ms=reference)
    assert general.lines == [LogLine(fields[0], fields[1], fields[2], source, "o", None, None)]
    assert (general.events, general.dead) == ([], [])


def test_it_takes_the_common_shipper_record() -> None:
    record = {"log": "kernel: hello", "host": "gpu01", "time": "2024-05-01T10:00:00.003Z"}
    assert common_fields("syslog", record, None, None) == ("kernel: hello", "gpu01", 1_714_557_600_003)


def test_a_recording_block_normalizes_as_record_by_record() -> None:
    """``streams.backtest._normalize`` (fast path first) against ``normalize_record`` per record."""
    from streams.backtest import _normalize
    from streams.recording import parse_recording_line

    values = [
        {"message": "kernel: hello", "host": "gpu01", "timestamp": "2024-05-01T10:00:00.003Z"},
        {"message": "Feb00 00:00:00", "host": "gpu01", "timestamp": 253402300800000.0},  # year past 9999
        {"message": "one\ntwo", "host": "gpu02"},
        {"log": "x", "job_id": "42"},
        {"message": ""},
    ]
    raws = [orjson.dumps({"topic": "logs.applog", "value": v, "timestamp": 1_714_557_600_000}) for v in values]
    records, lines, events, dead = _normalize(7, b"\n".join(raws), 1_714_557_600_000)
    expected = [
        normalize_record(r.topic, r.value, r.key, r.timestamp_ms, r.origin, reference_ms=1_714_557_600_000)
        for r in (parse_recording_line(raw, 7 + n) for n, raw in enumerate(raws))
    ]
    assert records == len(values)
    assert lines == [line for out in expected for line in out.lines]
    assert (events, dead) == ([], [d for out in expected for d in out.dead])
    assert len(dead) == 2  # the hostile time and the empty line, as dead letters
