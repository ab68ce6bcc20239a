"""The compiled record picker (streams/normalize/_fastpick.c) against its oracle, the Python path.

``pick(raw, source, kafka_ms, USER_WRITTEN_SOURCES)`` may decline anything (None: the extractor
then runs ``common_json_fields`` itself); when it answers, the answer must be exactly
``common_json_fields(raw, source, None, k, k)`` (``k``: the Kafka time, None when negative), and
never a tuple where the Python path gives None or raises. Checked on shipper-shaped records,
every corpus line as the text, hostile bytes, and headers around year ends, with offsets,
fractions and dmesg brackets.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from streams import prefilter
from streams.normalize.log_record import USER_WRITTEN_SOURCES, common_json_fields
from tests.streams import test_common_shapes, test_prefilter
from tests.streams.test_hostile_input import RAW_VALUES, consumer_records

REPO = Path(__file__).resolve().parents[2]
PROPERTY = settings(max_examples=2000, deadline=None, suppress_health_check=list(HealthCheck))
SOURCES = st.sampled_from(["syslog", "dmesg", "applog", "k8s"])
#: Kafka timestamps: none (-1), around 2024, near year ends (for year-less headers), odd ones.
YEAR_ENDS = [1_704_067_200_000, 1_735_689_600_000, 946_684_800_000]  # 2024, 2025, 2000 Jan 1 UTC
STAMPS = st.one_of(
    st.just(-1),
    st.integers(-(2**63), 2**63 - 1),
    st.integers(0, 2**45),
    st.sampled_from(YEAR_ENDS).flatmap(lambda at: st.integers(at - 3 * 86_400_000, at + 3 * 86_400_000)),
    st.sampled_from([0, 1_714_557_600_050, 2**62, 31_536_000_000]),
)


def _fastpick() -> Any:
    from streams.normalize import _fastpick

    return _fastpick


def test_the_compiled_picker_is_built() -> None:
    """CI builds it (pip install -e); a missing module would silently measure the pure path."""
    assert _fastpick().pick is not None


def test_the_environment_forces_the_pure_path() -> None:
    code = "from streams.fast_pick import fast_pick; print(fast_pick is None)"
    env = {**os.environ, "FAULTSTREAM_PURE_PICK": "1", "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
    from streams.fast_pick import fast_pick

    assert fast_pick is None if os.environ.get("FAULTSTREAM_PURE_PICK", "") not in ("", "0") else fast_pick


def _python(raw: bytes, source: str, stamp: int) -> Any:
    kafka = stamp if stamp >= 0 else None
    try:
        return common_json_fields(raw, source, None, kafka, kafka)
    except Exception as error:  # the extractor's _common makes it None; the compiled pick must decline
        return type(error)


def _check(raw: bytes, source: str, stamp: int) -> bool:
    """True when the compiled picker answered (and its answer is the Python path's)."""
    picked = _fastpick().pick(raw, source, stamp, USER_WRITTEN_SOURCES)
    if picked is None:
        return False
    expected = _python(raw, source, stamp)
    assert picked == expected, (raw, source, stamp)
    assert [type(x) for x in picked] == [str, str, int]
    return True


def _encodings(value: dict[str, Any]) -> list[bytes]:
    return [
        orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS),
        json.dumps(value).encode(),  # non-ASCII escaped, NaN as a bare word
        json.dumps(value, indent=1, ensure_ascii=False).encode("utf-8", "surrogatepass"),
    ]


@PROPERTY
@given(record=test_common_shapes.records(), source=SOURCES, stamp=STAMPS)
def test_any_mix_of_shipper_keys(record: dict[str, Any], source: str, stamp: int) -> None:
    for raw in _encodings(record):
        _check(raw, source, stamp)


@PROPERTY
@given(value=test_prefilter.shipper_values(), source=SOURCES, stamp=STAMPS)
def test_fluent_bit_vector_and_generic_records(value: dict[str, Any], source: str, stamp: int) -> None:
    for raw in _encodings(value):
        _check(raw, source, stamp)


def _corpus_lines() -> list[str]:
    texts = []
    for folder in ("lines", "healthy"):
        for path in sorted((REPO / "tests" / "corpus" / folder).glob("*.jsonl")):
            texts += [orjson.loads(raw)["line"] for raw in path.read_bytes().splitlines() if raw.strip()]
    return texts


VECTOR_TIME = "2024-05-01T10:00:00.123Z"


def test_every_corpus_line_as_the_text() -> None:
    """Each line as Vector, Fluent Bit (tail, systemd) and a bare sender ship it, with and without
    a record time, at a Kafka time mid-year and one just after a new year."""
    answered = total = 0
    for text in _corpus_lines():
        for source, value in (
            ("applog", {"host": "gpu01", "message": text, "source_type": "file", "timestamp": VECTOR_TIME}),
            ("dmesg", {"@timestamp": 1714557600.5, "log": text, "hostname": "gpu02"}),
            ("syslog", {"@timestamp": 1704067205.25, "MESSAGE": text, "_HOSTNAME": "gpu03"}),
            ("syslog", {"message": text}),
            ("k8s", {"log": text, "host": "gpu04", "time": "2024-12-31T23:59:59+01:00"}),
        ):  # fmt: skip
            for stamp in (1_714_557_600_050, YEAR_ENDS[0] + 60_000, -1):
                for raw in _encodings(value)[:2]:
                    total += 1
                    answered += _check(raw, source, stamp)
    assert answered > total // 2  # it does answer most real lines


HEADER_HOSTS = st.sampled_from(["gpu01", "", "gpu01:", "a[1]", "node-7.cluster"])
TAGS = st.sampled_from(["kernel:", "slurmd[12]:", "x", "a:b:", "[1]:", ":", ""])
MONTH_NAMES = st.sampled_from(
    ["Jan", "Feb", "Dec", "Mar", "Dez", "janv.", "sept", "mai", "oct", "Mayx", "Ja", "Sep "]
)


@st.composite
def rfc3164_headers(draw: st.DrawFn) -> str:
    day = draw(st.sampled_from(["1", " 1", "31", "30", "29", "28", "0", "00", "32", "123", "x", ""]))
    clock = draw(
        st.sampled_from(["23:59:59", "00:00:00", "12:00:00.5", "10:00:00.123456", "99:99:99", "1:00:00"])
        | st.from_regex(r"[0-9:. ]{0,12}", fullmatch=True)
    )
    gap = draw(st.sampled_from([" ", "  ", ""]))
    return f"{draw(MONTH_NAMES)}{gap}{day} {clock} {draw(HEADER_HOSTS)} {draw(TAGS)} msg"


ZONES = ["", "Z", "z", "+00:00", "+0100", "-05:30", "+01", "+24:00", "+01:00:30", "-0000", "-00"]


@st.composite
def rfc3339_headers(draw: st.DrawFn) -> str:
    date = draw(
        st.sampled_from(["2024-12-31", "2025-01-01", "2024-02-29", "2023-02-29", "2024-13-01", "99999-01-01"])
    )
    sep = draw(st.sampled_from(["T", "t", " ", "_"]))
    clock = draw(st.sampled_from(["23:59:59", "00:00:00", "24:00:00", "10:00:60", "10:00"]))
    fraction = draw(st.sampled_from(["", ".5", ".123", ".123456", ".1234567", ",5", "."]))
    zone = draw(st.sampled_from(ZONES))
    after = draw(st.sampled_from(["", " ", " gpu05 kernel: x", " stderr F msg", " gpu05 x", " gpu05 a[1]: y"]))
    return f"{date}{sep}{clock}{fraction}{zone}{after}"


DMESG = st.sampled_from(
    [
        "[12345.678901] x", "[  +0.000041] x", "[Fri Aug 30 11:43:09 2024] x", "[So Dez  7 11:59:58 2024] x",
        "[Feb 27 2025 15:10:02] [ERROR] x", "[a b c d] x", "[ a\tb c d e ] x", "[unclosed", "[]",
        "[2024-05-01 10:00:00,123] x", "<6>[    2.962781] x",
        "<34>1 2024-05-01T10:00:00.123Z gpu02 app 1 - - m", "kern  :warn  : 2025-01-21T04:41:44,283575+00:00 x",
    ]
)  # fmt: skip
HEADERS = st.one_of(rfc3164_headers(), rfc3339_headers(), DMESG)
DAYS_2 = 2 * 86_400_000
NEW_YEAR = YEAR_ENDS[0]


@PROPERTY
@given(
    text=HEADERS,
    source=SOURCES,
    stamp=STAMPS,
    time=st.none() | st.sampled_from(YEAR_ENDS).flatmap(lambda at: st.integers(at - DAYS_2, at + DAYS_2)),
    host=st.none() | st.just("gpu09"),
)  # fmt: skip
@example(
    text="Dec 31 23:59:59 gpu01 kernel: x", source="syslog", stamp=NEW_YEAR + 3_600_000, time=None, host=None
)
@example(
    text="Jan  1 00:00:01 gpu01 kernel: x", source="syslog", stamp=NEW_YEAR - 3_600_000, time=None, host=None
)
def test_headers_around_year_ends_offsets_fractions_and_brackets(
    text: str, source: str, stamp: int, time: int | None, host: str | None
) -> None:
    value: dict[str, Any] = {"log": text}
    if time is not None:
        value["@timestamp"] = time / 1000
    if host is not None:
        value["host"] = host
    _check(orjson.dumps(value), source, stamp)
    if time is not None:  # the same time as an RFC 3339 string (Vector)
        value["@timestamp"] = orjson.dumps(value["@timestamp"]).decode()
        _check(orjson.dumps(value), source, stamp)


HOSTILE_PARTS = st.sampled_from(
    [
        b'"', b"\\", b"\\u0000", b"\\ud800", b"\\udc00\\ud800", b"\\n", b"\\r", b"\\t", b"\\/", b"\\x", b"\x00",
        b"\xff", b"\xc3\xa9", b"\xe2\x80\xa8", b"{", b"}", b"[", b"]", b",", b":", b" ", b"\n",
        b"1e400", b"99999999999999999999999", b"-0", b"01", b"1.", b".5", b"NaN", b"true", b"nul", b"#012",
        b"#0", b'{"a":' * 40, b"]" * 40,
    ]
)  # fmt: skip


@st.composite
def mutated_records(draw: st.DrawFn) -> bytes:
    """A valid common record with hostile bytes put in, taken out or swapped in."""
    value = draw(test_prefilter.shipper_values())
    raw = bytearray(orjson.dumps(value))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(raw)))
        op = draw(st.sampled_from(["insert", "delete", "replace"]))
        part = draw(HOSTILE_PARTS | st.binary(min_size=1, max_size=4))
        if op == "insert":
            raw[at:at] = part
        elif op == "delete":
            del raw[at : at + len(part)]
        else:
            raw[at : at + len(part)] = part
    return bytes(raw)


@PROPERTY
@given(raw=mutated_records() | RAW_VALUES.filter(lambda v: v is not None), source=SOURCES, stamp=STAMPS)
@example(raw=b'{"log":"x","log":"y","host":"gpu01"}', source="syslog", stamp=1)
@example(raw=b'{"log":"x","host":"gpu01","a":1e400}', source="syslog", stamp=1)
@example(raw=b'{"log":"x","host":"gpu01","a":99999999999999999999999}', source="syslog", stamp=1)
@example(raw=b'{"log":"x\\ud800","host":"gpu01"}', source="syslog", stamp=1)
@example(raw=b'{"log":"x","host":"gpu01"} ,', source="syslog", stamp=1)
@example(raw=b'{"log":"x","host":"gpu01","k":{"a":[1,{"b":2}]}}', source="syslog", stamp=1)
def test_hostile_bytes(raw: bytes, source: str, stamp: int) -> None:
    _check(raw, source, stamp)


def test_odd_arguments_decline() -> None:
    pick = _fastpick().pick
    record = b'{"log":"x","host":"gpu01"}'
    assert pick(record, "syslog", 5, USER_WRITTEN_SOURCES) == ("x", "gpu01", 5)
    assert pick(bytearray(record), "syslog", 5, USER_WRITTEN_SOURCES) is None
    assert pick(record, "syslog", 2**64, USER_WRITTEN_SOURCES) is None
    assert pick(record, "syslog", True, USER_WRITTEN_SOURCES) is None
    with pytest.raises(TypeError):
        pick(record, "syslog", 5)


@PROPERTY
@given(records=consumer_records() | test_prefilter.shipper_records(), source=SOURCES)
def test_a_kafka_record_is_picked_as_the_extractor_picks_it(records: list[Any], source: str) -> None:
    """``pick_record`` on a ConsumerRecord: what ``streams.prefilter._common`` (the Python path)
    gives, or a decline."""
    for record in records:
        picked = _fastpick().pick_record(record, source, USER_WRITTEN_SOURCES)
        if picked is not None:
            assert picked == prefilter._common(record, source)
            assert record.key is None and not record.headers
