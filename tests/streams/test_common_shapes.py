"""The common shipper record's fields picked by a plan per key order (``common_record_fields``,
the extractor's and the backtest's hot path) are the fields the field-by-field reference picks
(``_common_record_fields``): the same answer, the same decline, the same exception, on any record,
whether its key order is met for the first time or its plan is reused."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streams.normalize import log_record
from streams.normalize.log_record import _common_record_fields, common_record_fields
from tests.streams.test_normalize_record import LINE_TEXTS, STAMPS

TEXTS = LINE_TEXTS | st.sampled_from(
    [
        "May  1 10:00:00 gpu004 kernel: NVRM: Xid (PCI:0000:3b:00): 79",  # an RFC 3164 header: needs a year
        "<4>May  1 10:00:00 gpu005 kernel: x",
        "[Fri Aug 30 11:43:09 2024] x",
        "ADDRCONF(NETDEV_CHANGE): ib0: link becomes ready",
        "gpu0001:1000:1000 [0] misc/socket.cc:49 NCCL WARN Connection closed by remote peer gpu0002<4000>",
    ]
)
#: Times that fit the plan's fast reads and ones that do not, a year no date can have among them.
TIMES = STAMPS | st.sampled_from(
    [1.7e9, 1.7e12, 9.9e10, 1e11, 2**62, "2024-05-01T10:00:00.123Z", "10000-01-01"]
)
VALUES = TEXTS | TIMES | st.sampled_from(["gpu01", "", "file"]) | st.dictionaries(st.just("host"), TEXTS)
KEYS = [
    "log", "message", "MESSAGE", "msg", "host", "hostname", "_HOSTNAME", "HOSTNAME", "_hostname",
    "source_type", "@timestamp", "timestamp", "time", "job_id", "rank", "kubernetes", "file",
]  # fmt: skip
PROPERTY = settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))


@st.composite
def records(draw: st.DrawFn) -> dict[str, Any]:
    """Any mix of the shippers' keys in any order, mostly holding values of the right kind."""
    names = draw(st.lists(st.sampled_from(KEYS), max_size=7, unique=True))
    record: dict[str, Any] = {}
    for name in names:
        if name in ("log", "message", "MESSAGE", "msg"):
            record[name] = draw(TEXTS | VALUES | st.none())
        elif name in ("@timestamp", "timestamp", "time"):
            record[name] = draw(TIMES)
        else:
            record[name] = draw(st.sampled_from(["gpu01", "gpu02"]) | VALUES | st.none())
    return record


def _outcome(pick: Any, *args: Any) -> Any:
    try:
        return pick(*args)
    except Exception as error:  # the same exception type both ways (the caller's dead letter)
        return type(error)


@PROPERTY
@given(
    record=records(),
    source=st.sampled_from(["syslog", "dmesg", "applog", "k8s"]),
    key=st.none() | st.sampled_from(["gpu09", ""]),
    kafka_ms=st.none() | st.integers(-1, 2**45),
    year_ref_ms=st.none() | st.just(1_714_557_600_000) | st.just(2**62),
)
def test_the_planned_pick_equals_the_field_by_field_pick_on_any_record(
    record: dict[str, Any], source: str, key: str | None, kafka_ms: int | None, year_ref_ms: int | None
) -> None:
    reference = _outcome(_common_record_fields, record, source, key, kafka_ms, year_ref_ms)
    log_record._SHAPES.clear()
    first = _outcome(common_record_fields, record, source, key, kafka_ms, year_ref_ms)  # plans the shape
    again = _outcome(common_record_fields, dict(record), source, key, kafka_ms, year_ref_ms)  # reuses it
    assert first == again == reference


def test_a_vector_and_a_fluent_bit_record_take_their_plans() -> None:
    vector = {
        "host": "gpu01",
        "message": "kernel: x",
        "source_type": "file",
        "timestamp": "2024-05-01T10:00:00.123Z",
    }
    fluentbit = {"@timestamp": 1714557600.5, "log": "[ 8123.123456] x", "hostname": "gpu02"}
    assert common_record_fields(vector, "applog", None, None) == ("kernel: x", "gpu01", 1_714_557_600_123)
    assert common_record_fields(fluentbit, "dmesg", None, None) == (
        "[ 8123.123456] x",
        "gpu02",
        1_714_557_600_500,
    )
    assert log_record._SHAPES[tuple(vector)] == ("message", "timestamp", "host")  # Vector: hostname first
    assert log_record._SHAPES[tuple(fluentbit)] == ("log", "@timestamp", "hostname")


@pytest.mark.parametrize("name", ["job_id", "kubernetes"])
def test_a_record_naming_a_workload_is_never_the_common_shape(name: str) -> None:
    record = {"message": "x", "host": "gpu01", name: "42"}
    assert common_record_fields(record, "applog", None, 1) is None
    assert log_record._SHAPES[tuple(record)] is None


def test_hostile_key_orders_keep_the_plans_bounded() -> None:
    for n in range(3 * log_record._SHAPES_MAX):
        common_record_fields({"message": "x", f"k{n}": 1, "host": "gpu01"}, "syslog", None, 1)
    assert len(log_record._SHAPES) <= log_record._SHAPES_MAX
