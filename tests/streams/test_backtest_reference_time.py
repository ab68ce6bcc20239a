"""A backtest dates a syslog line without a year by the recording, never by the day it runs."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import orjson

from streams.backtest import backtest

#: A raw RFC 3164 line shipped without a Kafka timestamp: only the recording can date it.
YEARLESS = {"topic": "logs.syslog", "value": "Dec 31 23:59:58 gpu001 kernel: NVRM: GPU0 PMU has halted."}


def utc_ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


def _recording(tmp_path: Path, written: str) -> Path:
    path = tmp_path / "old.jsonl"
    path.write_bytes(orjson.dumps(YEARLESS) + b"\n")
    os.utime(path, ns=(utc_ms(written) * 1_000_000,) * 2)
    return path


def test_a_line_without_a_year_takes_it_from_when_the_recording_was_written(tmp_path, bundled_ruleset):
    # written two days into 2025: the December line is from 2024, whatever year it is now
    result = backtest(_recording(tmp_path, "2025-01-02T00:00:00"), bundled_ruleset)
    assert result.dead_letters == []
    assert result.engine is not None and result.engine.watermark_ms == utc_ms("2024-12-31T23:59:58")


def test_the_caller_may_name_the_reference_instead(tmp_path, bundled_ruleset):
    path = _recording(tmp_path, "2025-01-02T00:00:00")
    result = backtest(path, bundled_ruleset, reference_ms=utc_ms("2021-06-01T00:00:00"))
    assert result.engine is not None and result.engine.watermark_ms == utc_ms("2020-12-31T23:59:58")
