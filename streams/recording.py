"""Recording files: JSON Lines, one Kafka record a line (``streams.records.TopicRecord``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from streams.records import DeadLetter, TopicRecord

__all__ = ["RawRecord", "read_recording"]


@dataclass(slots=True)
class RawRecord:
    topic: str
    value: Any
    key: str | None
    timestamp_ms: int | None
    origin: str


def _fast_shape_ok(data: Any) -> bool:
    """The common case checked without pydantic; anything odd gets the model's full check."""
    return (
        type(data) is dict
        and type(data.get("topic")) is str
        and type(data.get("value")) in (dict, str)
        and (data.get("key") is None or type(data["key"]) is str)
        and (data.get("timestamp") is None or type(data["timestamp"]) is int)
        and len(data) <= 6
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
    if not _fast_shape_ok(data):
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
