"""A line dated far ahead of its record's Kafka timestamp does not move event time; a node whose
clock runs in a zone ahead of UTC still does (streams/future_lines.py, issue 11)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from aiokafka.structs import ConsumerRecord
from prometheus_client import REGISTRY

from correlator.settings import CorrelatorSettings
from correlator.timefmt import iso
from streams.backtest import backtest, latest_revisions
from streams.cli import main
from streams.extract_worker import ExtractorWorker
from streams.future_lines import AHEAD_LIMIT_MS, HOUR_MS, reference_ms
from streams.settings import Settings
from streams.topics import RECORDED_TIME_HEADER

T = 1_714_557_600_000  # 2024-05-01T10:00:00Z: when the broker took the records
TEN_YEARS_MS = 3_652 * 24 * HOUR_MS
SYSLOG0 = ("logs.syslog", 0)
XID79 = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off the bus."


def _header_line(host: str, at_ms: int, text: str = "kernel: eth0: link up") -> bytes:
    """A raw syslog line whose header the node wrote (RFC 3339 with an offset, as rsyslog's
    RSYSLOG_FileFormat does): the node says when, whatever the broker says."""
    return f"{iso(at_ms)[:19]}+00:00 {host} {text}".encode()


def _record(value: bytes, timestamp: int, offset: int, headers: list | None = None) -> ConsumerRecord:
    return ConsumerRecord("logs.syslog", 0, offset, timestamp, 0, None, value, None, 0, 0, headers or [])


@pytest.fixture(scope="module")
def worker(bundled_ruleset) -> ExtractorWorker:
    return ExtractorWorker(Settings(), bundled_ruleset)


def _watermark_after(worker: ExtractorWorker, records: list[ConsumerRecord]) -> int:
    worker.inputs.assign([SYSLOG0], 0)
    worker.process(records)
    return worker.inputs.advance(1)


def _ahead_count() -> float:
    return (
        REGISTRY.get_sample_value(
            "faultstream_ahead_of_record_total", {"stage": "extractor", "topic": "logs.syslog"}
        )
        or 0.0
    )


def test_a_line_dated_ten_years_ahead_does_not_carry_the_watermark_but_keeps_its_own_time(worker):
    before = _ahead_count()
    honest = _record(_header_line("gpu001", T), T + 1_000, 0)
    forged = _record(_header_line("gpu002", T + TEN_YEARS_MS, XID79), T + 2_000, 1)
    worker.inputs.assign([SYSLOG0], 0)
    out = worker.process([honest, forged])
    assert worker.inputs.advance(1) == T + 2_000  # the forged line's record time, not its own
    assert _ahead_count() - before == 1
    counted = [row for _, record in out.node_counts for row in record["counts"]]
    assert ("gpu002", T + TEN_YEARS_MS) in {(node, max_ms) for node, _, _, max_ms in counted}


def test_a_node_thirteen_hours_ahead_of_utc_still_moves_the_watermark(worker):
    """Its syslog header is its local time, read as UTC (docs/formats.md): 13 h ahead of the broker."""
    local = _record(_header_line("gpu003", T + 13 * HOUR_MS), T, 0)
    assert _watermark_after(worker, [local]) == T + 13 * HOUR_MS


def test_a_line_just_inside_the_limit_moves_the_watermark_and_one_just_past_it_does_not(worker):
    inside = _record(_header_line("gpu004", T + AHEAD_LIMIT_MS), T, 0)
    assert _watermark_after(worker, [inside]) == T + AHEAD_LIMIT_MS
    past = _record(_header_line("gpu004", T + AHEAD_LIMIT_MS + 1_000), T, 0)
    assert _watermark_after(worker, [past]) == T


def test_a_replayed_record_is_bounded_by_its_recorded_time_and_a_forged_header_cannot_raise_it():
    recorded = [(RECORDED_TIME_HEADER, b"%d" % T)]
    assert reference_ms(T + 90 * 24 * HOUR_MS, recorded) == T  # `faultstream load`: sent months later
    forged = [(RECORDED_TIME_HEADER, b"%d" % (T + TEN_YEARS_MS))]
    assert reference_ms(T, forged) == T  # the broker's time stands
    assert reference_ms(-1, []) is None  # no time at all: no bound


def _recording(tmp_path: Path, records: list[dict]) -> Path:
    path = tmp_path / "recording.jsonl"
    path.write_bytes(b"".join(orjson.dumps(record) + b"\n" for record in records))
    return path


def _line(host: str, at_ms: int, text: str, recorded_ms: int | None) -> dict:
    return {"topic": "logs.syslog", "value": _header_line(host, at_ms, text).decode(), "key": None,
            "timestamp": recorded_ms}  # fmt: skip


def _jobcomp(job: int, start_ms: int, end_ms: int, nodes: str) -> dict:
    value = {"jobid": job, "username": "alice", "user_id": 1001, "nodes": nodes, "exit_code": "1:0",
             "@start": iso(start_ms)[:19], "@end": iso(end_ms)[:19], "state": "FAILED"}  # fmt: skip
    return {"topic": "events.scheduler", "value": value, "key": str(job), "timestamp": end_ms + 200}


def _story(recorded: bool) -> list[dict]:
    """Job 9001 runs on gpu001 for a minute: its GPU falls off the bus 20 s in; 10 s later gpu002
    (not in the job) sends one line dated ten years ahead."""
    stamp = (lambda ms: ms) if recorded else (lambda ms: None)
    return [
        _line("gpu001", T, "kernel: eth0: link up", stamp(T)),
        _line("gpu001", T + 20_000, f"kernel: {XID79}", stamp(T + 20_000)),
        _line("gpu002", T + TEN_YEARS_MS, "kernel: eth0: link up", stamp(T + 30_000)),
        _jobcomp(9001, T, T + 60_000, "gpu001"),
    ]


def test_in_the_backtest_a_line_ten_years_ahead_does_not_expire_the_evidence_of_a_running_job(
    tmp_path, bundled_ruleset
):
    settings = CorrelatorSettings(grace_s=2.0, tail_s=2.0)
    path = _recording(tmp_path, _story(recorded=True))
    result = backtest(path, bundled_ruleset, settings, batch_bytes=1)  # one record a batch, as it streams
    (verdict,) = latest_revisions(result.verdicts)
    assert verdict.responsible_nodes == ["gpu001"], verdict
    assert verdict.root_symptom is not None and verdict.root_symptom.rule_id == "gpu.xid.79"
    assert result.ahead_of_record == 1


def test_the_backtest_summary_says_how_many_lines_were_too_far_ahead(tmp_path, capsys):
    path = _recording(tmp_path, _story(recorded=True))
    assert main(["backtest", "-i", str(path), "--workers", "1"]) == 0
    assert "1 lines or job events more than 26 h ahead of their record's time" in capsys.readouterr().err


def test_a_recording_without_kafka_timestamps_has_no_bound(tmp_path, bundled_ruleset):
    """Nothing to bound a line against: its own time moves event time, as before the bound."""
    settings = CorrelatorSettings(grace_s=2.0, tail_s=2.0)
    result = backtest(_recording(tmp_path, _story(recorded=False)), bundled_ruleset, settings, batch_bytes=1)
    assert result.ahead_of_record == 0
    assert result.engine is not None and result.engine.watermark_ms >= T + TEN_YEARS_MS
