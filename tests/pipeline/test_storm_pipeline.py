"""A failure at scale, live: a 1,250-node job (10,000 GPUs) whose one node's GPU falls off the bus
while every other node's NCCL loses its peer (issue 7: the correlator crashed on a 1 MB record)."""

from __future__ import annotations

import time

import pytest

from scripts.bench.workload import STORM_JOB, storm_xid_node, write_storm_recording
from tests.pipeline.results import comparable, expected_verdicts, wait_for_verdicts

pytestmark = pytest.mark.services

NODES = 1_250
LINES = 200_000


def test_1250_node_storm_blames_the_xid_node_live_and_in_backtest(pipeline, tmp_path):
    recording = tmp_path / "storm.jsonl"
    write_storm_recording(recording, NODES, LINES)
    expected = expected_verdicts([recording], pipeline.grace_s)
    backtest_verdict = expected[str(STORM_JOB)]
    assert backtest_verdict["sub_domain"] == "hardware"
    assert backtest_verdict["responsible_nodes"] == [storm_xid_node(NODES)]
    assert backtest_verdict["root_symptom"]["symptom"] == "gpu_fallen_off_bus"

    pipeline.extractor()
    pipeline.correlator()
    started = time.monotonic()
    pipeline.load(recording)
    got = wait_for_verdicts(pipeline.services.redis, pipeline.prefix, expected, timeout_s=150)
    assert str(STORM_JOB) in got, f"no verdict after {time.monotonic() - started:.0f} s\n{pipeline.logs()}"
    assert comparable(got[str(STORM_JOB)]) == comparable(backtest_verdict), pipeline.logs()
    assert "MessageSizeTooLarge" not in pipeline.logs()
