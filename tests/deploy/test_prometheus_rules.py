"""The shipped Prometheus config and alert rules pass promtool, and the rules' own unit tests
(deploy/prometheus/alerts_test.yml: a node's hardware verdicts, pipeline lag, dead-letter rate,
stall restarts) fire exactly when they should."""

from __future__ import annotations

import subprocess

from tests.conftest import REPO

PROMETHEUS_DIR = REPO / "deploy" / "prometheus"  # promtool comes with scripts/install.sh


def _promtool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["promtool", *args], cwd=PROMETHEUS_DIR, capture_output=True, text=True, timeout=60)


def test_the_shipped_prometheus_config_and_its_rule_file_are_valid():
    checked = _promtool("check", "config", "prometheus.yml")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "4 rules found" in checked.stdout


def test_the_alert_rules_fire_in_their_unit_tests_and_stay_quiet_otherwise():
    tested = _promtool("test", "rules", "alerts_test.yml")
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout
