"""See it (issue 8): a real Prometheus scrapes a running pipeline; the metrics count what the
engine saw, every PromQL expression of the Grafana dashboard returns data, the shipped alert
rules load, and the fleet view names the node that failed under two jobs.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

from correlator.settings import CorrelatorSettings
from extractors.loader import load_ruleset
from streams.backtest import backtest, latest_revisions
from streams.cli import main
from tests.conftest import REPO
from tests.deploy.dashboard import dashboard_module
from tests.pipeline.results import ALL_RECORDINGS, read_topic, wait_for_verdicts

pytestmark = [pytest.mark.services, pytest.mark.slow]

#: Grafana fills these in; any window that covers the test's few minutes gives data.
GRAFANA_VARIABLES = {"$__rate_interval": "1m", "$__range": "1h"}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Prometheus:
    """Debian's prometheus binary on a free port, scraping the given targets every second."""

    def __init__(self, workdir: Path, targets: dict[str, int]) -> None:
        self.port = _free_port()
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(REPO / "deploy/prometheus/alerts.yml")],
            "scrape_configs": [
                {"job_name": job, "static_configs": [{"targets": [f"127.0.0.1:{port}"]}]}
                for job, port in targets.items()
            ],
        }
        (workdir / "prometheus.yml").write_text(json.dumps(config), encoding="utf-8")  # JSON is YAML
        self.log = (workdir / "prometheus.log").open("wb")
        self.process = subprocess.Popen(
            [
                "prometheus",
                f"--config.file={workdir / 'prometheus.yml'}",
                f"--storage.tsdb.path={workdir / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--log.level=warn",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

    def api(self, path: str, **params: str) -> dict:
        url = f"http://127.0.0.1:{self.port}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=10) as reply:
            body = json.loads(reply.read())
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list[dict]:
        return self.api("query", query=expr)["result"]

    def value(self, expr: str) -> float:
        result = self.query(expr)
        assert len(result) == 1, f"{expr}: {result}"
        return float(result[0]["value"][1])

    def by(self, expr: str, label: str) -> dict[str, float]:
        return {r["metric"][label]: float(r["value"][1]) for r in self.query(expr)}

    def wait_until(self, expr: str, expected: float, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            result = self.query(expr)
            if result and float(result[0]["value"][1]) == expected:
                return
            time.sleep(0.5)
        raise AssertionError(f"{expr} never reached {expected}: {self.query(expr)}")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=20)
        self.log.close()


@pytest.fixture
def prometheus_for(tmp_path):
    started: list[Prometheus] = []

    def start(targets: dict[str, int]) -> Prometheus:
        started.append(Prometheus(tmp_path, targets))
        return started[-1]

    yield start
    for server in started:
        server.stop()


def _what_the_engine_saw() -> tuple[dict[str, dict], Counter, int, list]:
    """The backtest's latest verdicts, symptoms by rule, lines, and all revisions."""
    ruleset = load_ruleset(REPO / "rules")
    settings = CorrelatorSettings(grace_s=2.0, tail_s=2.0)
    latest, by_rule, lines, revisions = {}, Counter(), 0, []
    for path in ALL_RECORDINGS:
        result = backtest(path, ruleset, settings)
        revisions += result.verdicts
        by_rule.update(result.engine.stats.by_rule)
        lines += result.engine.stats.lines
        for verdict in latest_revisions(result.verdicts):
            latest[verdict.workload_id] = verdict.model_dump(mode="json")
    return latest, by_rule, lines, revisions


def test_prometheus_scraping_a_running_pipeline_sees_what_the_engine_saw(pipeline, prometheus_for, capsys):
    expected, symptoms_by_rule, lines, _ = _what_the_engine_saw()
    ports = {"faultstream-extractor": _free_port(), "faultstream-correlator": _free_port()}
    pipeline.start(
        "worker", "extractor", "--metrics-port", str(ports["faultstream-extractor"]), name="extractor"
    )
    pipeline.start(
        "worker", "correlator", "--metrics-port", str(ports["faultstream-correlator"]), name="correlator"
    )
    prometheus = prometheus_for(ports)
    pipeline.load(*ALL_RECORDINGS)
    wait_for_verdicts(pipeline.services.redis, pipeline.prefix, expected)
    prometheus.wait_until('sum(faultstream_verdicts_total{job="faultstream-correlator"})', len(expected))

    # every job's first verdict, counted by terminal state; each with its job-end latency
    states = prometheus.by("sum by (state) (faultstream_verdicts_total)", "state")
    assert states == Counter(v["terminal_state"] for v in expected.values())
    assert prometheus.value("sum(faultstream_verdict_latency_seconds_count)") == len(expected)
    # lines and symptoms: the same numbers as the offline engine on the same recordings
    prometheus.wait_until("sum(faultstream_lines_total)", lines)
    symptoms = prometheus.by("sum by (rule) (faultstream_symptoms_total)", "rule")
    assert symptoms == {rule: float(n) for rule, n in symptoms_by_rule.items()}
    # dead letters: as many as reached the dead-letter topic
    dead = read_topic(pipeline.services.kafka, f"{pipeline.namespace}faultstream.deadletter")
    assert dead and prometheus.value("sum(faultstream_dead_letters_total)") == len(dead)
    # the sink wrote every revision the correlator emitted
    emitted = prometheus.value(
        "sum(faultstream_verdicts_total) + (sum(faultstream_verdict_revisions_total) or vector(0))"
    )
    assert prometheus.by("sum by (result) (faultstream_sink_verdicts_total)", "result")["applied"] == emitted
    # health: both workers up, each joined its group, lag measured for both groups
    assert prometheus.by("up", "job") == {"faultstream-extractor": 1.0, "faultstream-correlator": 1.0}
    rebalances = prometheus.by("sum by (stage) (faultstream_rebalances_total)", "stage")
    assert set(rebalances) == {"extractor", "correlator"} and min(rebalances.values()) >= 1  # joined
    groups = set(prometheus.by("sum by (group) (faultstream_consumer_lag)", "group"))
    assert groups == {
        f"{pipeline.namespace}faultstream-extractor",
        f"{pipeline.namespace}faultstream-correlator",
    }

    # every PromQL expression of the dashboard returns data from this Prometheus
    generator = dashboard_module()
    generator.build()
    assert generator.PROMQL
    for expr in generator.PROMQL:
        concrete = expr
        for variable, value in GRAFANA_VARIABLES.items():
            concrete = concrete.replace(variable, value)
        assert prometheus.query(concrete), f"no data for the dashboard's {expr}"

    # the shipped alert rules load and evaluate against these series
    rules = [rule for group in prometheus.api("rules")["groups"] for rule in group["rules"]]
    assert len(rules) == 4 and all(rule["health"] == "ok" for rule in rules), rules

    # the fleet view: gpu002 failed two jobs (Xid 95, then Xid 94) and is one finding
    hardware = prometheus.by('sum by (node) (faultstream_node_verdicts_total{domain="hardware"})', "node")
    assert hardware["gpu002"] == 2.0
    url, prefix = pipeline.services.redis, pipeline.prefix
    assert main(["nodes", "--redis-url", url, "--prefix", prefix, "--node", "gpu002", "--json"]) == 0
    finding = json.loads(capsys.readouterr().out)["nodes"][0]
    assert finding["workloads"] == 2
    assert set(finding["root_symptoms"]) == {"gpu_uncontained_memory_error", "gpu_contained_memory_error"}
