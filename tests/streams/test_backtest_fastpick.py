"""The backtest's workers read a recording line in C (``pick_line``, streams/normalize/_fastpick.c)
and give every line it declines to the Python path. Whatever the line, the block's records, lines,
job events, dead letters and event-time marks are the Python path's alone
(``streams.backtest._normalize`` with and without the picker), and a whole backtest's verdicts
are too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from extractors.loader import load_ruleset
from scripts.bench.workload import shipper_record, write_storm_recording
from streams import backtest as backtest_module
from streams.backtest import _Marks, _normalize, backtest
from streams.fast_pick import fast_pick_line
from tests.streams import test_common_shapes, test_prefilter
from tests.streams.test_backtest_normalize import COMMON_RECORDS
from tests.streams.test_fastpick import HEADERS, mutated_records
from tests.streams.test_normalize_record import SHIPPER_RECORDS

PROPERTY = settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
RECORDED_AT = 1_714_557_600_000
ABSENT = object()

TOPICS = st.sampled_from(["logs.syslog", "logs.dmesg", "logs.applog", "logs.other", "events.scheduler", "x"])
KEYS = st.sampled_from([ABSENT, None, "", "gpu09", 7])
TIMESTAMPS = st.one_of(
    st.sampled_from([ABSENT, None, -1, 0, True, 1.5, "1714557600000", 2**64]),
    st.integers(0, 2**45),
    st.integers(RECORDED_AT - 3 * 86_400_000, RECORDED_AT + 3 * 86_400_000),
)
PARTITIONS = st.sampled_from([ABSENT, None, 0, 3, -1, "2", 1.0, False])
VALUES = st.one_of(
    test_common_shapes.records(), test_prefilter.shipper_values(), COMMON_RECORDS, SHIPPER_RECORDS,
    st.text(max_size=20),
)  # fmt: skip


ASCII_TEXTS = st.one_of(HEADERS, st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=1))
OPTIONAL_FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "_HOSTNAME": st.just("gpu02"),
        "@timestamp": st.floats(1.7e9, 1.8e9) | st.sampled_from(["2024-05-01T10:00:00.003Z", "soon"]),
        "time": st.just("2024-12-31T23:59:59+01:00"),
        "source_type": st.just("file"),
        "SYSLOG_IDENTIFIER": st.just("kernel"),
    },
)


@st.composite
def ascii_records(draw: st.DrawFn) -> dict[str, Any]:
    """Shipper records in ASCII (what the compiled picker reads whole): any header, host, time."""
    text_key = draw(st.sampled_from(["log", "message", "MESSAGE", "msg"]))
    host = draw(st.sampled_from(["gpu01", "node-7", ""]))
    fields = {text_key: draw(ASCII_TEXTS), "host": host, **draw(OPTIONAL_FIELDS)}
    return {name: fields[name] for name in draw(st.permutations(list(fields)))}


#: What recorders write: a log topic, no key, the Kafka time, maybe the partition and offset.
TYPICAL = {
    "topic": st.sampled_from(["logs.syslog", "logs.dmesg", "logs.applog"]),
    "value": st.one_of(ascii_records(), ascii_records(), test_prefilter.shipper_values(), COMMON_RECORDS),
    "key": st.sampled_from([ABSENT, None]),
    "timestamp": st.sampled_from([1_704_067_200_000, 1_735_689_600_000, RECORDED_AT]).flatmap(
        lambda at: st.integers(at - 2 * 86_400_000, at + 2 * 86_400_000)
    ),  # around two new years (year-less headers) and mid-2024
    "partition": st.sampled_from([ABSENT, None, 0, 3]),
    "offset": st.sampled_from([ABSENT, None, 0, 12345]),
}
#: Anything else a line may hold, valid or not.
ODD = {
    "topic": TOPICS, "value": VALUES, "key": KEYS, "timestamp": TIMESTAMPS, "partition": PARTITIONS,
    "offset": PARTITIONS,
}  # fmt: skip


@st.composite
def recording_lines(draw: st.DrawFn) -> bytes:
    """A recording line as ``faultstream record`` and older recorders wrote it (any key order,
    optional fields, other encoders), each field typical or odd, or one with a hostile value
    put in its place."""
    odd = draw(st.sampled_from([(), (), (), ("unknown",), *[(name,) for name in ODD]]))
    fields: dict[str, Any] = {
        name: draw(ODD[name] if name in odd else strategy) for name, strategy in TYPICAL.items()
    }
    if "unknown" in odd:
        fields["unknown"] = 1
    present = {name: value for name, value in fields.items() if value is not ABSENT}
    order = draw(st.permutations(list(present)))
    record = {name: present[name] for name in order}
    encoder = draw(st.sampled_from(["orjson", "json", "indented"]))
    if draw(st.integers(0, 4)) == 4:  # hostile value bytes where the value object was
        record["value"] = "\x00hole"
        return _encoded(record, encoder).replace(json.dumps("\x00hole").encode(), draw(mutated_records()), 1)
    return _encoded(record, encoder)


def _encoded(record: dict[str, Any], encoder: str) -> bytes:
    if encoder == "orjson":
        try:
            return orjson.dumps(record)
        except TypeError:  # an int past 64 bits: json writes it
            encoder = "json"
    if encoder == "json":
        return json.dumps(record).encode()  # non-ASCII escaped, spaces after separators
    return json.dumps(record, indent=1).replace("\n", "").encode()  # no newline may split the line


def _both_ways(block: bytes, reference_ms: int | None = RECORDED_AT) -> tuple[tuple, tuple]:
    """(compiled picker first, Python path alone): each normalization and its marks."""
    picked_marks, pure_marks = _Marks(), _Marks()
    picked = _normalize(11, block, reference_ms, picked_marks, fast_pick_line)
    pure = _normalize(11, block, reference_ms, pure_marks, None)
    return (*picked, picked_marks), (*pure, pure_marks)


def test_the_compiled_picker_is_there_to_compare() -> None:
    assert fast_pick_line is not None, "streams/normalize/_fastpick.c did not build (python setup.py build_ext)"


@PROPERTY
@given(lines=st.lists(recording_lines(), min_size=1, max_size=6), reference=st.none() | st.just(RECORDED_AT))
@example(lines=[b'{"topic":"logs.syslog","value":{"log":"x","host":"gpu01"},"timestamp":5}'], reference=None)
@example(lines=[b'{"topic":"logs.syslog","value":{"log":"x","host":"gpu01"},"timestamp":-0}'], reference=None)
@example(lines=[b'{"topic":"logs.syslog","topic":"logs.dmesg","value":{"log":"x","host":"a"},"timestamp":5}'],
         reference=None)  # fmt: skip
@example(
    lines=[b'{"topic":"logs.applog","value":{"log":"x","host":"a"},"key":null,"timestamp":5,"partition":2,'
           b'"offset":9}', b'{"topic":"logs.applog","value":{"log":"x","host":"a"},"timestamp":5,"partition":2,'
           b'"offset":9}', b'  ', b'{"topic":"logs.applog","value":{"log":"x","host":"a"},"timestamp":5} \r'],
    reference=None,
)  # fmt: skip
def test_a_block_of_any_recording_lines_normalizes_as_the_python_path_alone(
    lines: list[bytes], reference: int | None
) -> None:
    picked, pure = _both_ways(b"\n".join(lines), reference)
    assert picked == pure


def test_the_benchmark_recordings_are_read_in_c_whole(tmp_path: Path) -> None:
    """The shippers' records on the default topics are never declined: the property above
    compares the compiled answers, not only declines."""
    storm = tmp_path / "storm.jsonl"
    write_storm_recording(storm, 16, 2_000)
    sparse = b"\n".join(
        orjson.dumps(shipper_record(f"kernel: line {n}", source, f"gpu{n % 7:02d}", RECORDED_AT + n))
        for n, source in enumerate(["syslog", "dmesg", "applog"] * 100)
    )
    for block in (storm.read_bytes(), sparse):
        logs = [raw for raw in block.split(b"\n") if raw.strip() and b'"events.' not in raw]
        assert all(fast_pick_line(raw, 1, backtest_module._LOG_SOURCES, frozenset()) for raw in logs)
        picked, pure = _both_ways(block)
        assert picked == pure


def test_a_line_from_a_recorder_with_partitions_keeps_its_kafka_origin() -> None:
    line = b'{"topic":"logs.dmesg","value":{"log":"kernel: x","host":"gpu01"},"key":null,"timestamp":5,' \
        b'"partition":2,"offset":9}'  # fmt: skip
    assert fast_pick_line(line, 40, backtest_module._LOG_SOURCES, frozenset()) == (
        "kernel: x", "gpu01", 5, "dmesg", "logs.dmesg:2:9", 5,
    )  # fmt: skip
    four_keys = b'{"topic":"logs.dmesg","value":{"log":"kernel: x","host":"gpu01"},"timestamp":5,"offset":9}'
    assert fast_pick_line(four_keys, 40, backtest_module._LOG_SOURCES, frozenset())[4] == "logs.dmesg:@40"


def test_a_storm_backtest_gives_the_same_verdicts_with_and_without_the_compiled_picker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storm = tmp_path / "storm.jsonl"
    write_storm_recording(storm, 64, 20_000)
    ruleset = load_ruleset()
    picked = backtest(storm, ruleset, workers=1, reference_ms=RECORDED_AT)
    monkeypatch.setattr(backtest_module, "_PICK_LINE", None)
    pure = backtest(storm, ruleset, workers=1, reference_ms=RECORDED_AT)
    assert picked.verdicts, "the storm's job must get a verdict"
    assert [v.model_dump() for v in picked.verdicts] == [v.model_dump() for v in pure.verdicts]
    assert (picked.records, picked.dead_letters, picked.ahead_of_record) == (
        pure.records, pure.dead_letters, pure.ahead_of_record,
    )  # fmt: skip
    assert picked.engine.stats == pure.engine.stats
