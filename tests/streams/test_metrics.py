"""The metrics' own rules: bounded labels, first verdicts apart from revisions, and a stall
restart count that survives the process replacing itself."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from prometheus_client import REGISTRY

from streams import metrics
from tests.conftest import REPO


def _sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_dead_letter_reasons_become_one_label_whatever_value_the_record_held():
    first = metrics.reason_class("Slurm jobcomp record: 'jobid' must be an integer, got 'x7'")
    second = metrics.reason_class("Slurm jobcomp record: 'jobid' must be an integer, got 'abc'")
    assert first == second == "Slurm jobcomp record: '…' must be an integer"
    assert metrics.reason_class("bad time 2024-05-01T10:00:00 at line 17") == "bad time N-N-NTN:N:N at line N"
    assert len(metrics.reason_class("x" * 500)) == 80


def test_a_first_verdict_counts_its_domain_nodes_root_and_latency_and_a_revision_only_itself():
    verdict = {
        "workload_id": "m-1",
        "revision": 1,
        "terminal_state": "fail",
        "sub_domain": "hardware",
        "responsible_nodes": ["metrics-node-a", "metrics-node-a"],
        "root_symptom": {"symptom": "metrics_test_symptom"},
        "job": {"end": "2026-03-01T12:00:00Z"},
    }
    before = {
        "verdicts": _sample("faultstream_verdicts_total", domain="hardware", state="fail"),
        "revisions": _sample("faultstream_verdict_revisions_total", domain="hardware", state="fail"),
        "latency": _sample("faultstream_verdict_latency_seconds_count"),
        "latency_sum": _sample("faultstream_verdict_latency_seconds_sum"),
    }
    end = 1772366400.0  # 2026-03-01T12:00:00Z
    metrics.count_verdict(verdict, now=end + 12.5)
    metrics.count_verdict({**verdict, "revision": 2}, now=end + 40)

    assert _sample("faultstream_verdicts_total", domain="hardware", state="fail") == before["verdicts"] + 1
    assert (
        _sample("faultstream_verdict_revisions_total", domain="hardware", state="fail")
        == before["revisions"] + 1
    )
    assert _sample("faultstream_node_verdicts_total", node="metrics-node-a", domain="hardware") == 1
    assert _sample("faultstream_root_symptoms_total", symptom="metrics_test_symptom", domain="hardware") == 1
    assert _sample("faultstream_verdict_latency_seconds_count") == before["latency"] + 1
    assert _sample("faultstream_verdict_latency_seconds_sum") - before["latency_sum"] == 12.5


def test_the_stall_restart_count_carries_over_into_the_replacement_process(monkeypatch):
    monkeypatch.setenv(metrics.STALL_RESTART_ENV, "2")
    metrics.count_stall_restart_before_exec()  # what the stall watch does right before execv
    assert os.environ[metrics.STALL_RESTART_ENV] == "3"
    replacement = subprocess.run(
        [sys.executable, "-c", "from streams import metrics; print(metrics.STALL_RESTARTS._value.get())"],
        cwd=REPO,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        check=True,
    )
    assert float(replacement.stdout) == 3.0


def test_a_busy_metrics_port_stops_the_worker_with_one_line_before_it_touches_kafka():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        env = {"KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1"}  # nothing there: it must not get that far
        worker = subprocess.run(
            [sys.executable, "-m", "streams", "worker", "extractor", "--metrics-port", str(port)],
            cwd=REPO,
            env={**os.environ, **env, "FAULTSTREAM_METRICS_HOST": "127.0.0.1"},
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert worker.returncode == 2
    assert worker.stderr.strip().splitlines()[-1] == (
        f"faultstream: cannot serve metrics on 127.0.0.1:{port}: Address already in use"
    )
