"""Ingest normalizers: one topic record in, LogLines / JobEvents / DeadLetters out.

Pure functions, no Kafka and no I/O. ``normalize_record`` never raises: a record that cannot be
used becomes a DeadLetter with the reason, so nothing disappears silently. The input contract
is docs/formats.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from streams.normalize.canonical import is_canonical, normalize_canonical
from streams.normalize.errors import RecordError
from streams.normalize.hostlist import expand_hostlist
from streams.normalize.k8s_events import is_k8s_event, normalize_k8s_event
from streams.normalize.log_record import common_json_fields, common_record_fields, normalize_log_record
from streams.normalize.slurm_jobcomp import is_jobcomp, normalize_jobcomp
from streams.records import DEFAULT_TOPICS, DeadLetter, JobEvent, LogLine

__all__ = [
    "Normalized",
    "RecordError",
    "common_fields",
    "expand_hostlist",
    "normalize_record",
    "topic_source",
]

SCHEDULER_SOURCE = "scheduler"
#: A ``logs.*`` topic missing from the topic map carries syslog lines.
FALLBACK_LOG_SOURCE = "syslog"
UNRECOGNISED_SCHEDULER = (
    "unrecognised scheduler record (expected Slurm jobcomp, Kubernetes Event or canonical form)"
)


@dataclass(slots=True)
class Normalized:
    lines: list[LogLine] = field(default_factory=list)
    events: list[JobEvent] = field(default_factory=list)
    dead: list[DeadLetter] = field(default_factory=list)


def normalize_record(
    topic: str,
    value: object,
    key: str | None,
    timestamp_ms: int | None,
    origin: str,
    topics: Mapping[str, str] = DEFAULT_TOPICS,
    reference_ms: int | None = None,
) -> Normalized:
    """Normalize one record. ``value`` is a decoded JSON object, a raw line, or bytes of either.

    A syslog header without a year is dated near the record's own time (its time field, else
    ``timestamp_ms``), else near ``reference_ms``, which the caller chooses (the backtest: the
    recording's time). With none of them the header gives no time: nothing here reads the clock.
    """
    try:
        return _normalize(topic, value, key, timestamp_ms, origin, topics, reference_ms)
    except RecordError as error:
        return _dead(str(error), topic, origin, value)
    except Exception as error:  # a bug must cost one record, never the stream
        return _dead(f"internal error: {type(error).__name__}: {error}", topic, origin, value)


def _normalize(
    topic: str,
    value: object,
    key: str | None,
    timestamp_ms: int | None,
    origin: str,
    topics: Mapping[str, str],
    reference_ms: int | None,
) -> Normalized:
    source = topic_source(topic, topics)
    if source is None:
        raise RecordError(f"unknown topic {topic!r}")
    # bytes only: a decoded value keeps the general path, the reference the fast paths are tested
    # against (tests/streams/test_normalize_record.py); the backtest calls common_fields itself
    fields = common_fields(source, value, key, timestamp_ms, reference_ms) if type(value) is bytes else None
    if fields is not None:  # the one path streams/prefilter.py takes too
        return Normalized([LogLine(fields[0], fields[1], fields[2], source, origin, None, None)], [], [])
    kafka_ms = _kafka_ms(timestamp_ms)
    year_ref_ms = kafka_ms if kafka_ms is not None else reference_ms
    value = _decode(value)
    if source == SCHEDULER_SOURCE:
        events, lines = _scheduler(value, kafka_ms, origin)
        return Normalized(lines, events, [])
    return Normalized(normalize_log_record(value, source, _key(key), kafka_ms, origin, year_ref_ms), [], [])


def topic_source(topic: str, topics: Mapping[str, str]) -> str | None:
    """The source a topic's records come from; None for a topic that is neither mapped nor ``logs.*``."""
    source = topics.get(topic)
    if source is None and topic.startswith("logs."):
        return FALLBACK_LOG_SOURCE
    return source


def common_fields(
    source: str, value: object, key: str | None, timestamp_ms: int | None, reference_ms: int | None = None
) -> tuple[str, str, int] | None:
    """(text, host, time) of a record of the shippers' common shape on a log topic of ``source``:
    ``normalize_record`` makes exactly ``LogLine(text, host, time, source, origin)`` of it. None
    for any other record (``normalize_record`` then takes its general path). ``value``: the
    record's bytes, or the JSON object already decoded (a recording's value)."""
    if source == SCHEDULER_SOURCE or (type(value) is not bytes and type(value) is not dict):
        return None
    kafka_ms = _kafka_ms(timestamp_ms)
    year_ref_ms = kafka_ms if kafka_ms is not None else reference_ms
    if type(value) is bytes:
        return common_json_fields(value, source, _key(key), kafka_ms, year_ref_ms)
    return common_record_fields(value, source, _key(key), kafka_ms, year_ref_ms)


def _scheduler(
    value: dict[str, Any] | str, kafka_ms: int | None, origin: str
) -> tuple[list[JobEvent], list[LogLine]]:
    if not isinstance(value, dict):
        raise RecordError(UNRECOGNISED_SCHEDULER)
    if is_jobcomp(value):
        return normalize_jobcomp(value, kafka_ms, origin)
    if is_k8s_event(value):
        return normalize_k8s_event(value, kafka_ms, origin)
    if is_canonical(value):
        return normalize_canonical(value, kafka_ms, origin)
    raise RecordError(UNRECOGNISED_SCHEDULER)


def _decode(value: object) -> dict[str, Any] | str:
    if type(value) is bytes:  # what Kafka hands over: checked first, decoded without a copy
        return _decode_bytes(value)
    if isinstance(value, (dict, str)):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _decode_bytes(bytes(value))
    if value is None:
        raise RecordError("empty record value (a tombstone?)")
    raise RecordError(f"expected a JSON object or a string, got a {type(value).__name__}")


def _decode_bytes(raw: bytes) -> dict[str, Any] | str:
    """JSON when the bytes hold JSON, else a raw line ("[12.5] msg" is dmesg, not a list)."""
    first = raw[:1]
    if first.isspace():
        first = raw.lstrip()[:1]
    if first != b"{" and first != b"[":
        return raw.decode("utf-8", errors="replace")
    try:
        decoded = orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        if first == b"[":
            return raw.decode("utf-8", errors="replace")
        raise RecordError(f"record value looks like a JSON object but does not parse: {error}") from None
    if not isinstance(decoded, dict):
        raise RecordError(f"expected a JSON object or a string, got a {type(decoded).__name__}")
    return decoded


def _kafka_ms(timestamp_ms: int | None) -> int | None:
    """Kafka reports "no timestamp" as -1."""
    if isinstance(timestamp_ms, int) and not isinstance(timestamp_ms, bool) and timestamp_ms >= 0:
        return timestamp_ms
    return None


def _key(key: object) -> str | None:
    if isinstance(key, bytes):
        key = key.decode("utf-8", errors="replace")
    return key if isinstance(key, str) and key else None


def _dead(reason: str, topic: str, origin: str, value: object) -> Normalized:
    if isinstance(value, bytes | bytearray | memoryview):
        value = bytes(value).decode("utf-8", errors="replace")
    return Normalized([], [], [DeadLetter(reason, topic, origin, value)])
