"""Recording files: JSON Lines, one Kafka record a line (``streams.records.TopicRecord``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from streams.records import DeadLetter, TopicRecord

__all__ = ["RawRecord", "parse_recording_line", "read_recording"]

_FIELDS = frozenset(TopicRecord.model_fields)


@dataclass(slots=True)
class RawRecord:
    topic: str
    value: Any
    key: str | None
    timestamp_ms: int | None
    origin: str


def _fast(data: Any, line_no: int) -> RawRecord | None:
    """The common case checked without pydantic; anything odd gets the model's full check."""
    if type(data) is not dict or len(data) > 6:
        return None
    topic, value, key, stamp = data.get("topic"), data.get("value"), data.get("key"), data.get("timestamp")
    if type(topic) is not str or (type(value) is not dict and type(value) is not str):
        return None
    if (key is not None and type(key) is not str) or (stamp is not None and type(stamp) is not int):
        return None
    if len(data) > 4 and not set(data) <= _FIELDS:
        return None
    return RawRecord(
        topic, value, key, stamp, _origin(data, line_no) if len(data) > 4 else f"{topic}:@{line_no}"
    )


def _origin(data: dict[str, Any], line_no: int) -> str:
    if data.get("partition") is not None and data.get("offset") is not None:
        return f"{data['topic']}:{data['partition']}:{data['offset']}"
    return f"{data['topic']}:@{line_no}"


def parse_recording_line(raw: bytes, line_no: int) -> RawRecord | DeadLetter:
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return DeadLetter(
            f"recording line {line_no}: not JSON ({exc})", "", f"@{line_no}", raw.decode("utf-8", "replace")
        )
    fast = _fast(data, line_no)
    if fast is not None:
        return fast
    try:
        data = TopicRecord.model_validate(data).model_dump()
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "record"
        topic = data.get("topic", "") if isinstance(data, dict) else ""
        reason = f"recording line {line_no}: {where}: {first['msg']}"
        return DeadLetter(reason, str(topic), f"@{line_no}", data)
    return RawRecord(
        data["topic"], data["value"], data.get("key"), data.get("timestamp"), _origin(data, line_no)
    )


def read_recording(path: Path) -> Iterator[RawRecord | DeadLetter]:
    """Every record of a recording file, or a dead letter saying why a line is not one."""
    with path.open("rb") as handle:
        for line_no, raw in enumerate(handle, start=1):
            if raw.strip():
                yield parse_recording_line(raw, line_no)
