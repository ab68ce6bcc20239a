"""Log records (JSON objects from Fluent Bit or Vector, or raw line strings) to LogLines.

Precedence, the same for both shapes:

* text: the original line as shipped, trailing newline stripped; rsyslog's ``#012`` and real
  newlines split it into one LogLine per non-empty line (they share host, time and workload);
* time: the line's own wall-clock header → the record's time field → the Kafka timestamp (a
  header without a year takes it from the record's time, else from the caller's reference);
* host: the line's own header → the record's host field → the Kafka key. A record with none is
  dead, unless its fields name a workload (it still belongs to that job).
"""

from __future__ import annotations

from typing import Any

import orjson

from streams.normalize.applog import WORKLOAD_FIELDS, workload_and_rank
from streams.normalize.errors import RecordError
from streams.normalize.line_text import clean_text, needs_cleaning
from streams.normalize.shippers import (
    FLUENTBIT_HOST_KEYS,
    TEXT_KEYS,
    TIME_KEYS,
    VECTOR_HOST_KEYS,
    record_host,
    record_text,
    record_time_ms,
)
from streams.normalize.syslog_line import parse_line_header
from streams.normalize.times import rfc3339_ms, time_value_ms
from streams.records import LogLine

__all__ = [
    "common_json_fields", "common_json_line", "common_record_fields", "normalize_log_record", "split_lines",
]  # fmt: skip

NO_HOST = "log record without a host: no host/hostname/_HOSTNAME field, no record key"
NO_HOST_IN_LINE = "log line without a host: no host in the line header, no record key"
NO_TIME = "no event time: no time in the line, no record time field, no Kafka timestamp"


def normalize_log_record(
    value: dict[str, Any] | str,
    source: str,
    key: str | None,
    kafka_ms: int | None,
    origin: str,
    year_ref_ms: int | None = None,
) -> list[LogLine]:
    """``year_ref_ms``: what dates a header without a year when the record has no time field
    (the Kafka timestamp, else the caller's reference)."""
    if isinstance(value, str):
        return _string_lines(value, source, key, kafka_ms, origin, year_ref_ms)
    return _json_lines(value, source, key, kafka_ms, origin, year_ref_ms)


def _json_lines(
    record: dict[str, Any],
    source: str,
    key: str | None,
    kafka_ms: int | None,
    origin: str,
    year_ref_ms: int | None,
) -> list[LogLine]:
    texts = split_lines(record_text(record))
    field_ms = record_time_ms(record)
    own_ms, own_host = parse_line_header(texts[0], field_ms if field_ms is not None else year_ref_ms)
    workload, rank = workload_and_rank(record)
    if source in USER_WRITTEN_SOURCES:  # the text's "header" is the user's: the fields win
        own_ms, own_host = (None, None) if record_host(record) or key else (own_ms, own_host)
    host = own_host or record_host(record) or key
    if host is None and workload is None:
        raise RecordError(NO_HOST)
    time_ms = _first_time(own_ms, field_ms, kafka_ms)
    return _build(texts, host, time_ms, source, origin, workload, rank)


def common_json_line(
    raw: bytes, source: str, key: str | None, kafka_ms: int | None, origin: str, year_ref_ms: int | None = None
) -> LogLine | None:
    """The record nearly every shipper sends, in one pass: a JSON object with one line of text,
    a host and a time, naming no workload. Same answer as ``_json_lines``; None means "not that
    shape, take the general path" (which also gives the errors). The hot path of the extractor.
    """
    fields = common_json_fields(raw, source, key, kafka_ms, year_ref_ms)
    if fields is None:
        return None
    return LogLine(fields[0], fields[1], fields[2], source, origin, None, None)


def common_json_fields(
    raw: bytes, source: str, key: str | None, kafka_ms: int | None, year_ref_ms: int | None = None
) -> tuple[str, str, int] | None:
    """``common_json_line``'s (text, host, time) without the LogLine: what the extractor's
    prefilter needs of a line no rule can match (streams/prefilter.py)."""
    if raw[:1] != b"{":
        return None
    try:
        record = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if type(record) is not dict:
        return None
    return common_record_fields(record, source, key, kafka_ms, year_ref_ms)


def common_record_fields(
    record: dict[str, Any], source: str, key: str | None, kafka_ms: int | None, year_ref_ms: int | None = None
) -> tuple[str, str, int] | None:
    """``common_json_fields`` of a record already decoded (a recording's ``value``): the backtest's
    hot path. Same answer as ``_json_lines`` on it; None means "take the general path".

    A shipper sends the same keys in the same order record after record, so which key holds the
    text, the time and the host is worked out once per key order (``_plan``), not per record;
    a record whose values do not fit that plan (a null text, a non-string host, ...) is decided by
    ``_common_record_fields``, the field-by-field reference (tests/streams/test_common_shapes.py)."""
    keys = tuple(record)
    shape = _SHAPES.get(keys, _UNPLANNED)
    if shape is _UNPLANNED:
        shape = _plan(keys)
    if shape is None:  # names a workload, or has no text field: never the common shape
        return None
    text_key, time_key, host_key = shape
    text = record[text_key]
    if type(text) is not str or "\n" in text or "\r" in text or "#01" in text or not text or text.isspace():
        return _common_record_fields(record, source, key, kafka_ms, year_ref_ms)
    if needs_cleaning(text):  # NULs, a BOM, colour, a Docker wrapper: split_lines cleans them
        return _common_record_fields(record, source, key, kafka_ms, year_ref_ms)
    if time_key is None:
        field_ms = None
    else:
        stamp = record[time_key]
        if type(stamp) is float and 0 <= stamp < 1e11:  # Fluent Bit's epoch seconds, as time_value_ms
            field_ms = round(stamp * 1000)
        elif type(stamp) is str and stamp[4:5] == "-":  # RFC 3339, as time_value_ms
            field_ms = rfc3339_ms(stamp)
        else:
            return _common_record_fields(record, source, key, kafka_ms, year_ref_ms)
        if field_ms is None:
            return None  # a present but unreadable time: an error on the general path
    if host_key is None:
        field_host = None
    else:
        field_host = record[host_key]
        if type(field_host) is not str or not field_host:
            return _common_record_fields(record, source, key, kafka_ms, year_ref_ms)
    # parsed even where it is not used (as in _json_lines): a header whose year the time cannot
    # give raises there, and must here too
    own_ms, own_host = parse_line_header(text, field_ms if field_ms is not None else year_ref_ms)
    if source in USER_WRITTEN_SOURCES and (field_host or key):
        own_ms, own_host = None, None  # as in _json_lines
    host = own_host or field_host or key
    time_ms = own_ms if own_ms is not None else field_ms if field_ms is not None else kafka_ms
    if host is None or time_ms is None:
        return None
    return text, host, time_ms


#: Key order → (text key, time key or None, host key or None); None: never the common shape.
Shape = tuple[str, str | None, str | None]
_SHAPES: dict[tuple[str, ...], Shape | None] = {}
_SHAPES_MAX = 1024  # hostile records may each bring new keys: the plans must stay few
_UNPLANNED = ("", None, None)


def _plan(keys: tuple[str, ...]) -> Shape | None:
    """Where a record with these keys (in this order) keeps its text, time and host: the first
    present of each, as ``record_text``, ``record_time_ms`` and ``record_host`` look for them."""
    present = frozenset(keys)
    text_key = next((name for name in TEXT_KEYS if name in present), None)
    shape: Shape | None = None
    if text_key is not None and WORKLOAD_FIELDS.isdisjoint(present):
        host_keys = VECTOR_HOST_KEYS if "source_type" in present else FLUENTBIT_HOST_KEYS
        shape = (
            text_key,
            next((name for name in TIME_KEYS if name in present), None),
            next((name for name in host_keys if name in present), None),
        )
    if len(_SHAPES) >= _SHAPES_MAX:
        _SHAPES.clear()
    _SHAPES[keys] = shape
    return shape


def _common_record_fields(
    record: dict[str, Any], source: str, key: str | None, kafka_ms: int | None, year_ref_ms: int | None
) -> tuple[str, str, int] | None:
    """``common_record_fields`` field by field (first present value, as ``record_text``,
    ``record_time_ms`` and ``record_host`` pick them): the reference the planned path is tested
    against, and what decides a record whose values do not fit its key order's plan."""
    if not WORKLOAD_FIELDS.isdisjoint(record):
        return None
    text = None
    for name in TEXT_KEYS:  # the first present, as record_text picks it
        text = record.get(name)
        if text is not None:
            break
    if type(text) is not str or "\n" in text or "\r" in text or "#01" in text or not text or text.isspace():
        return None
    if needs_cleaning(text):  # NULs, a BOM, colour, a Docker wrapper: split_lines cleans them
        return None
    stamp = None
    for name in TIME_KEYS:  # the first present, as record_time_ms picks it
        stamp = record.get(name)
        if stamp is not None:
            break
    field_ms = None if stamp is None else time_value_ms(stamp)
    if stamp is not None and field_ms is None:
        return None
    own_ms, own_host = parse_line_header(text, field_ms if field_ms is not None else year_ref_ms)
    field_host = record_host(record)  # once: both questions below need it for an applog line
    if source in USER_WRITTEN_SOURCES and (field_host or key):
        own_ms, own_host = None, None  # as in _json_lines
    host = own_host or field_host or key
    time_ms = own_ms if own_ms is not None else field_ms if field_ms is not None else kafka_ms
    if host is None or time_ms is None:
        return None
    return text, host, time_ms


def _string_lines(
    text: str, source: str, key: str | None, kafka_ms: int | None, origin: str, year_ref_ms: int | None
) -> list[LogLine]:
    texts = split_lines(text)
    own_ms, own_host = parse_line_header(texts[0], year_ref_ms)
    if source in USER_WRITTEN_SOURCES and key:  # as in _json_lines: the key names the node
        own_ms, own_host = None, None
    host = own_host or key
    if host is None:
        raise RecordError(NO_HOST_IN_LINE)
    return _build(texts, host, _first_time(own_ms, None, kafka_ms), source, origin, None, None)


#: Sources whose text the workload's user writes (job output, pod logs): a syslog-like header at
#: the start of such a line is the user's, so it names neither the host nor the time when the
#: shipper's record does (a job printing "May  1 10:00:00 gpu003 kernel: NVRM: Xid ... 79" would
#: otherwise blame gpu003, and "2099-01-01T00:00:00 ..." would move event time).
USER_WRITTEN_SOURCES = frozenset({"applog"})


def _first_time(own_ms: int | None, field_ms: int | None, kafka_ms: int | None) -> int:
    if own_ms is not None:
        return own_ms
    if field_ms is not None:
        return field_ms
    if kafka_ms is not None:
        return kafka_ms
    raise RecordError(NO_TIME)


def split_lines(text: str) -> list[str]:
    """The non-empty lines of ``text``. rsyslog escapes control characters as ``#ooo``: ``#012``
    (an embedded newline) splits lines, ``#011`` (a tab, as in kernel call traces and aligned
    tables) becomes a tab again so rules see whitespace where the program wrote some. Envelope
    bytes no program printed (NULs, a BOM, colour sequences, a Docker json-file wrapper) go first
    (streams/normalize/line_text.py)."""
    if needs_cleaning(text):
        text = clean_text(text)
    if "#01" in text:
        text = text.replace("#012", "\n").replace("#011", "\t")
    if "\n" not in text:
        text = text.rstrip("\r")
        if not text or text.isspace():
            raise RecordError("empty log line")
        return [text]
    lines = [line.rstrip("\r") for line in text.split("\n")]
    lines = [line for line in lines if line and not line.isspace()]
    if not lines:
        raise RecordError("empty log line")
    return lines


def _build(
    texts: list[str],
    host: str | None,
    time_ms: int,
    source: str,
    origin: str,
    workload: str | None,
    rank: int | None,
) -> list[LogLine]:
    if len(texts) == 1:
        return [LogLine(texts[0], host, time_ms, source, origin, workload, rank)]
    return [
        LogLine(text, host, time_ms, source, f"{origin}#{index}", workload, rank)
        for index, text in enumerate(texts)
    ]
