"""Live: one line from a node dated ten years ahead of its record does not carry event time with it,
so another node's job is not decided before its grace (streams/future_lines.py, issue 11)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import orjson
import pytest
from aiokafka import AIOKafkaConsumer

from tests.pipeline.results import comparable, expected_verdicts, wait_for_verdicts
from tests.streams.test_future_lines import TEN_YEARS_MS, XID79, T, _jobcomp, _line

pytestmark = [pytest.mark.services, pytest.mark.slow]

GRACE_S = 10.0  # the late line is loaded a few seconds after the job's end: well inside it


def _write(path: Path, records: list[dict]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(record) + b"\n" for record in records))
    return path


def test_a_line_ten_years_ahead_from_one_node_gets_no_other_job_decided_before_its_grace(pipeline, tmp_path):
    """gpu002 sends one line dated ten years ahead while job 9001 runs on gpu001; the event time it
    claims would have passed 9001's end and grace before 9001 ended: 9001 would have been decided
    at its end record, before gpu001's Xid (written 2 s before the end, arriving 1 s after it)."""
    before = [
        _line("gpu001", T, "kernel: eth0: link up", T),
        _line("gpu002", T + TEN_YEARS_MS, "kernel: eth0: link up", T + 30_000),
    ]
    end = [_jobcomp(9001, T, T + 60_000, "gpu001")]
    late = [_line("gpu001", T + 58_000, f"kernel: {XID79}", T + 61_000)]
    pipeline.grace_s = GRACE_S
    expected = expected_verdicts([_write(tmp_path / "whole.jsonl", before + end + late)], GRACE_S)
    assert expected["9001"]["responsible_nodes"] == ["gpu001"]

    pipeline.extractor()
    pipeline.correlator()
    pipeline.load(_write(tmp_path / "before.jsonl", before))
    # every ingest partition idle and read to its end: the extractor's watermark moves on (to the
    # far-ahead line's record time; to its own time without the bound)
    node_events = f"{pipeline.namespace}faultstream.node-events"
    mark = _watermark_reaching(pipeline.services.kafka, node_events, T + 30_000)
    assert mark < T + 60_000 + GRACE_S * 1000, "the line ten years ahead carried event time with it"
    time.sleep(2)  # the correlator takes it in
    pipeline.load(_write(tmp_path / "end.jsonl", end))
    pipeline.load(_write(tmp_path / "late.jsonl", late))

    got = wait_for_verdicts(pipeline.services.redis, pipeline.prefix, expected, timeout_s=90)
    assert "9001" in got, pipeline.logs()
    assert comparable(got["9001"]) == comparable(expected["9001"]), pipeline.logs()
    assert got["9001"]["revision"] == 1  # decided once, on its evidence: not early and then revised


def _watermark_reaching(bootstrap: str, topic: str, at_least_ms: int, timeout_s: float = 60.0) -> int:
    """The first extractor watermark on ``topic`` at or past ``at_least_ms`` (its time)."""

    async def consume() -> int:
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                    isolation_level="read_committed")  # fmt: skip
        await consumer.start()
        deadline = time.monotonic() + timeout_s
        try:
            while time.monotonic() < deadline:
                for rows in (await consumer.getmany(timeout_ms=500)).values():
                    for row in rows:
                        if row.key == b"__wm__" and orjson.loads(row.value)["time_ms"] >= at_least_ms:
                            return orjson.loads(row.value)["time_ms"]
        finally:
            await consumer.stop()
        raise AssertionError(f"no watermark reached {at_least_ms} in {timeout_s} s")

    return asyncio.run(consume())
