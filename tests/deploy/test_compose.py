"""compose.yaml holds the whole stack (issue 8), and everything it mounts is there and parses.

Docker is not available here, so this checks the file's structure rather than running it.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from streams.remediation_policy import load_policy
from tests.conftest import REPO

COMPOSE = yaml.safe_load((REPO / "compose.yaml").read_text(encoding="utf-8"))
SERVICES = COMPOSE["services"]


def _bind_mounts() -> list[tuple[str, Path, str]]:
    mounts = []
    for name, service in SERVICES.items():
        for volume in service.get("volumes", []):
            source, target = volume.split(":")[:2]
            if source.startswith("./"):
                mounts.append((name, REPO / source, target))
    return mounts


def _parses(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        json.loads(text)
    elif path.suffix in (".yml", ".yaml"):
        assert yaml.safe_load(text) is not None, f"{path} is empty"


def test_the_stack_has_kafka_in_kraft_mode_redis_the_workers_prometheus_and_grafana():
    assert {"kafka", "redis", "extractor", "correlator", "remediation", "prometheus", "grafana"} <= set(
        SERVICES
    )
    assert "controller" in SERVICES["kafka"]["environment"]["KAFKA_PROCESS_ROLES"]
    assert SERVICES["extractor"]["command"] == ["worker", "extractor"]
    assert SERVICES["correlator"]["command"] == ["worker", "correlator"]


def test_scaled_workers_serve_metrics_that_prometheus_finds_by_service_name():
    port = SERVICES["extractor"]["environment"]["FAULTSTREAM_METRICS_PORT"]
    assert SERVICES["correlator"]["environment"]["FAULTSTREAM_METRICS_PORT"] == port
    for name in ("extractor", "correlator"):
        assert "container_name" not in SERVICES[name], "a fixed name would forbid --scale"
    config = yaml.safe_load((REPO / "deploy/prometheus/prometheus.yml").read_text(encoding="utf-8"))
    discovered = {
        (names, sd["port"])
        for job in config["scrape_configs"]
        for sd in job.get("dns_sd_configs", [])
        for names in sd["names"]
    }
    assert discovered == {("extractor", int(port)), ("correlator", int(port))}


def test_the_remediation_consumer_runs_in_dry_run_with_the_shipped_policy():
    command = SERVICES["remediation"]["command"]
    assert command[0] == "remediate" and "--execute" not in command  # dry-run is its default
    policy_path = command[command.index("--policy") + 1]
    (source,) = [source for name, source, target in _bind_mounts() if target == policy_path]
    policy = load_policy(source)
    assert policy.rules and all(rule.match.sub_domain == ["hardware"] for rule in policy.rules)


def test_every_mounted_config_exists_and_parses():
    mounts = _bind_mounts()
    assert {name for name, _, _ in mounts} == {"prometheus", "grafana", "remediation"}
    for name, source, _ in mounts:
        assert source.exists(), f"{name} mounts {source}, which does not exist"
        files = sorted(p for p in source.rglob("*") if p.is_file()) if source.is_dir() else [source]
        assert files, f"{name} mounts an empty {source}"
        for path in files:
            _parses(path)


def test_grafana_gets_both_data_sources_and_the_dashboard_that_uses_them():
    targets = {target: source for _, source, target in _bind_mounts()}
    provisioning = targets["/etc/grafana/provisioning"]
    sources = yaml.safe_load((provisioning / "datasources/faultstream.yaml").read_text(encoding="utf-8"))
    uids = {s["uid"]: s["url"] for s in sources["datasources"]}
    assert uids == {
        "faultstream-prometheus": "http://prometheus:9090",
        "faultstream-redis": "redis://redis:6379/0",
    }
    provider = yaml.safe_load((provisioning / "dashboards/faultstream.yaml").read_text(encoding="utf-8"))
    path = provider["providers"][0]["options"]["path"]
    board = json.loads((targets[path] / "faultstream.json").read_text(encoding="utf-8"))
    used = {t["datasource"]["uid"] for p in board["panels"] for t in p.get("targets", []) if "datasource" in t}
    used |= {p["datasource"]["uid"] for p in board["panels"] if "datasource" in p}
    assert used == set(uids)


def test_the_committed_dashboard_is_what_the_generator_builds():
    from tests.deploy.dashboard import dashboard_module

    generator = dashboard_module()
    committed = generator.OUTPUT.read_text(encoding="utf-8")
    assert committed == generator.dashboard_json(), "run: python deploy/grafana/dashboard.py"
    assert len(generator.PROMQL) >= 10
