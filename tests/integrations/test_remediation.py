"""Acting on verdicts (streams/remediation.py) against a real Redis and real commands: what a
policy does, and every way it refuses to do more than it should."""

from __future__ import annotations

import asyncio
import copy
import json
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer

from sinks.redis_client import connect
from streams.remediation import Remediator
from streams.remediation_policy import Policy, load_policy
from tests.conftest import REPO
from tests.pipeline.results import read_topic

pytestmark = pytest.mark.services

GOLDEN_XID79 = json.loads((REPO / "tests/golden/expected/xid79_one_of_sixteen.json").read_text())
# A stand-in for scontrol that only writes down the argv it was given, one JSON line per call.
REASON_4101 = "faultstream gpu_fallen_off_bus job 4101"
RECORD_ARGV = "import json, sys; open(sys.argv[1], 'a').write(json.dumps(sys.argv[2:]) + '\\n')"


def hardware_verdict(workload_id: str, nodes: list[str], revision: int = 1, **changes) -> dict:
    verdict = copy.deepcopy(GOLDEN_XID79)
    verdict.update(workload_id=workload_id, responsible_nodes=nodes, revision=revision, **changes)
    verdict["job"]["end"] = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    return verdict


def policy(calls: Path, **limits) -> Policy:
    """Exclude the node for 10 minutes, then "drain" it with a command that writes down its argv."""
    drain = [sys.executable, "-c", RECORD_ARGV, str(calls), "NodeName={node}", "State=DRAIN", "Reason={reason}"]
    rule = {
        "name": "gpu-hardware",
        "reason": "faultstream {symptom} job {workload_id}",
        "actions": [{"exclude": {"ttl_s": 600}}, {"command": drain}],
        "match": limits.pop("match", {}),
    }
    return Policy.model_validate({"rules": [rule], **limits})


class Remediation:
    """A Remediator on its own Redis prefix, driven synchronously for the stories below."""

    def __init__(self, redis_url: str, policy: Policy, execute: bool) -> None:
        self.prefix = f"t{uuid.uuid4().hex[:8]}:"
        self.redis_url, self.policy, self.execute = redis_url, policy, execute

    def handle(self, *verdicts: dict) -> list[dict]:
        async def run() -> list[dict]:
            redis = connect(self.redis_url, name="test-remediation")
            try:
                remediator = Remediator(self.policy, redis, self.prefix, execute=self.execute)
                return [vars(record) for verdict in verdicts for record in await remediator.handle(verdict)]
            finally:
                await redis.aclose()

        return asyncio.run(run())

    def redis(self, *command: str):
        async def run():
            redis = connect(self.redis_url, name="test-remediation")
            try:
                return await redis.execute_command(*command)
            finally:
                await redis.aclose()

        return asyncio.run(run())


def calls_made(calls: Path) -> list[list[str]]:
    return [json.loads(line) for line in calls.read_text().splitlines()] if calls.exists() else []


def outcomes(records: list[dict]) -> list[tuple]:
    return [(r["node"], r["action"], r["outcome"]) for r in records]


def test_by_default_it_only_says_what_it_would_do(services, tmp_path):
    calls = tmp_path / "calls.jsonl"
    remediation = Remediation(services.redis, policy(calls), execute=False)
    records = remediation.handle(hardware_verdict("4101", ["gpu007"]))
    assert outcomes(records) == [("gpu007", "exclude", "dry_run"), ("gpu007", "command", "dry_run")]
    assert records[1]["argv"][-3:] == ["NodeName=gpu007", "State=DRAIN", f"Reason={REASON_4101}"]
    assert all(r["dry_run"] for r in records)
    assert calls_made(calls) == []
    assert remediation.redis("ZRANGE", f"{remediation.prefix}excluded", "0", "-1") == []


def test_executed_it_excludes_the_node_with_ttl_and_reason_and_drains_it_by_argv(services, tmp_path):
    calls = tmp_path / "calls.jsonl"
    remediation = Remediation(services.redis, policy(calls), execute=True)
    records = remediation.handle(hardware_verdict("4101", ["gpu007"]))
    assert outcomes(records) == [("gpu007", "exclude", "done"), ("gpu007", "command", "done")]
    assert calls_made(calls) == [["NodeName=gpu007", "State=DRAIN", f"Reason={REASON_4101}"]]
    until_ms = float(remediation.redis("ZSCORE", f"{remediation.prefix}excluded", "gpu007"))
    assert until_ms / 1000 == pytest.approx(time.time() + 600, abs=30)
    reason = json.loads(remediation.redis("GET", f"{remediation.prefix}excluded:gpu007"))
    assert reason["reason"] == REASON_4101 and reason["workload_id"] == "4101"
    assert 590 <= remediation.redis("TTL", f"{remediation.prefix}excluded:gpu007") <= 600


def test_a_hostile_job_id_reaches_the_command_as_one_literal_argument_never_a_shell(services, tmp_path):
    calls, pwned = tmp_path / "calls.jsonl", tmp_path / "pwned"
    remediation = Remediation(services.redis, policy(calls), execute=True)
    workload = f"7; touch {pwned} $(touch {pwned})"
    remediation.handle(hardware_verdict(workload, ["gpu007"]))
    assert calls_made(calls)[0][-1] == f"Reason=faultstream gpu_fallen_off_bus job {workload}"
    assert not pwned.exists()


def test_a_node_name_that_is_not_a_host_name_is_refused(services, tmp_path):
    calls = tmp_path / "calls.jsonl"
    remediation = Remediation(services.redis, policy(calls), execute=True)
    records = remediation.handle(hardware_verdict("4101", ["--all"]))
    assert outcomes(records) == [("--all", None, "refused")]
    assert calls_made(calls) == []


def test_a_verdict_delivered_twice_acts_once(services, tmp_path):
    calls = tmp_path / "calls.jsonl"
    remediation = Remediation(services.redis, policy(calls), execute=True)
    verdict = hardware_verdict("4101", ["gpu007"])
    records = remediation.handle(verdict, verdict)
    assert [r["outcome"] for r in records] == ["done", "done", "duplicate", "duplicate"]
    assert len(calls_made(calls)) == 1


def test_a_revision_that_blames_another_node_acts_on_it_and_a_late_older_revision_changes_nothing(
    services, tmp_path
):
    calls = tmp_path / "calls.jsonl"
    remediation = Remediation(services.redis, policy(calls), execute=True)
    first, second = hardware_verdict("4101", ["gpu007"]), hardware_verdict("4101", ["gpu009"], revision=2)
    records = remediation.handle(first, second, first)
    assert outcomes(records) == [
        ("gpu007", "exclude", "done"), ("gpu007", "command", "done"),
        ("gpu007", None, "released"),  # revision 2 no longer blames it: counts drop, the drain stays
        ("gpu009", "exclude", "done"), ("gpu009", "command", "done"),
    ]  # fmt: skip
    assert [call[0] for call in calls_made(calls)] == ["NodeName=gpu007", "NodeName=gpu009"]


def test_a_rule_that_matches_everything_stops_at_the_cap(services, tmp_path):
    calls = tmp_path / "calls.jsonl"
    remediation = Remediation(services.redis, policy(calls, max_nodes_per_window=2), execute=True)
    records = remediation.handle(*(hardware_verdict(str(5000 + n), [f"gpu{n:03d}"]) for n in range(5)))
    drained = [call[0] for call in calls_made(calls)]
    assert drained == ["NodeName=gpu000", "NodeName=gpu001"]
    refusals = [r for r in records if r["outcome"] == "refused"]
    assert [r["node"] for r in refusals] == ["gpu002", "gpu003", "gpu004"]
    assert refusals[0]["detail"] == "cap: 2 nodes per 3600 s reached"


def test_a_node_already_acted_on_does_not_count_twice_against_the_cap(services, tmp_path):
    calls = tmp_path / "calls.jsonl"
    remediation = Remediation(services.redis, policy(calls, max_nodes_per_window=1), execute=True)
    remediation.handle(hardware_verdict("5001", ["gpu001"]), hardware_verdict("5002", ["gpu001"]))
    assert [call[0] for call in calls_made(calls)] == ["NodeName=gpu001", "NodeName=gpu001"]


def test_only_hardware_without_doubt_is_acted_on_by_default(services, tmp_path):
    calls = tmp_path / "calls.jsonl"
    remediation = Remediation(services.redis, policy(calls), execute=True)
    weak = hardware_verdict("6001", ["gpu001"], uncertainty_type="weak_evidence")
    ambiguous = hardware_verdict(
        "6002", ["gpu002"], sub_domain="ambiguous", uncertainty_type="competing_domains"
    )
    several = hardware_verdict("6003", ["gpu003", "gpu004"], uncertainty_type="multiple_nodes")
    records = remediation.handle(weak, ambiguous, several)
    assert outcomes(records)[0] == (None, None, "refused")
    assert records[0]["detail"] == "uncertainty 'weak_evidence' is not one of [None, 'multiple_nodes']"
    assert {r["node"] for r in records[1:]} == {"gpu003", "gpu004"}  # no rule takes ambiguous: silence
    assert sorted(call[0] for call in calls_made(calls)) == ["NodeName=gpu003", "NodeName=gpu004"]


def test_a_verdict_blaming_more_nodes_than_the_rule_allows_is_refused_whole(services, tmp_path):
    calls = tmp_path / "calls.jsonl"
    remediation = Remediation(services.redis, policy(calls, match={"max_responsible_nodes": 2}), execute=True)
    many = hardware_verdict("6100", ["gpu001", "gpu002", "gpu003"], uncertainty_type="multiple_nodes")
    records = remediation.handle(many)
    assert outcomes(records) == [(None, None, "refused")]
    assert records[0]["detail"] == "3 responsible nodes, more than max_responsible_nodes 2"
    assert calls_made(calls) == []


def test_with_min_repeats_the_second_blaming_job_drains_the_node(services, tmp_path):
    calls = tmp_path / "calls.jsonl"
    remediation = Remediation(services.redis, policy(calls, match={"min_repeats": 2}), execute=True)
    first = remediation.handle(hardware_verdict("7001", ["gpu001"]))
    assert outcomes(first) == [("gpu001", None, "refused")]
    assert first[0]["detail"] == "1 of 2 blaming workloads within 86400 s"
    again = remediation.handle(hardware_verdict("7001", ["gpu001"]))  # the same job does not count twice
    assert outcomes(again) == [("gpu001", None, "refused")]
    second = remediation.handle(hardware_verdict("7002", ["gpu001"]))
    assert outcomes(second) == [("gpu001", "exclude", "done"), ("gpu001", "command", "done")]


def test_a_verdict_of_a_job_that_ended_long_ago_is_refused(services, tmp_path):
    calls = tmp_path / "calls.jsonl"
    remediation = Remediation(services.redis, policy(calls), execute=True)
    old = hardware_verdict("4101", ["gpu007"])
    old["job"]["end"] = "2024-05-01T11:00:10.000Z"
    records = remediation.handle(old)
    assert outcomes(records) == [(None, None, "refused")]
    assert records[0]["detail"].startswith("stale: the job ended")
    assert calls_made(calls) == []


def test_a_dry_run_spends_none_of_the_real_budget(services, tmp_path):
    calls = tmp_path / "calls.jsonl"
    dry = Remediation(services.redis, policy(calls, max_nodes_per_window=1), execute=False)
    dry.handle(hardware_verdict("8001", ["gpu001"]))
    real = Remediation(services.redis, policy(calls, max_nodes_per_window=1), execute=True)
    real.prefix = dry.prefix
    assert outcomes(real.handle(hardware_verdict("8002", ["gpu002"])))[0] == ("gpu002", "exclude", "done")


def test_a_policy_with_an_unknown_placeholder_or_a_shell_string_is_rejected(tmp_path):
    bad = tmp_path / "policy.yaml"
    bad.write_text("rules:\n- name: r\n  actions:\n  - command: [scontrol, 'NodeName={host}']\n")
    with pytest.raises(ValueError, match=r"unknown placeholder\(s\) \['host'\]"):
        load_policy(bad)
    bad.write_text("rules:\n- name: r\n  actions:\n  - command: 'scontrol update NodeName={node}'\n")
    with pytest.raises(ValueError, match="valid list"):
        load_policy(bad)


def test_the_example_policy_in_deploy_loads():
    loaded = load_policy(REPO / "deploy" / "remediation" / "policy.yaml")
    assert loaded.rules[0].match.sub_domain == ["hardware"]
    assert loaded.max_nodes_per_window >= 1


def test_the_remediate_command_reads_the_verdicts_topic_and_publishes_its_decisions(pipeline, tmp_path):
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(
        "rules:\n- name: gpu-fatal\n  match: {root_symptom: [gpu_fallen_off_bus]}\n"
        "  actions:\n  - command: [scontrol, update, 'NodeName={node}', State=DRAIN, 'Reason={reason}']\n"
    )
    verdict = hardware_verdict("4101", ["gpu007"])
    publish(pipeline.services.kafka, f"{pipeline.namespace}faultstream.verdicts", verdict, verdict)
    pipeline.start("remediate", "--policy", str(policy_file), "--from-beginning", name="remediate")

    topic = f"{pipeline.namespace}faultstream.actions"
    deadline = time.monotonic() + 60
    while len(actions := [a for _, a in read_topic(pipeline.services.kafka, topic, idle_s=1)]) < 2:
        assert time.monotonic() < deadline, pipeline.logs()
    assert [(a["node"], a["outcome"], a["dry_run"]) for a in actions] == [
        ("gpu007", "dry_run", True), ("gpu007", "duplicate", True)]  # fmt: skip
    assert actions[0]["argv"] == ["scontrol", "update", "NodeName=gpu007", "State=DRAIN",
                                  "Reason=faultstream: gpu_fallen_off_bus in job 4101"]  # fmt: skip


def publish(kafka: str, topic: str, *verdicts: dict) -> None:
    async def send() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=kafka, acks="all")
        await producer.start()
        try:
            for verdict in verdicts:
                await producer.send_and_wait(
                    topic, json.dumps(verdict).encode(), key=verdict["workload_id"].encode()
                )
        finally:
            await producer.stop()

    asyncio.run(send())


def test_the_remediate_command_names_a_broken_policy_and_exits_2(tmp_path):
    broken = tmp_path / "policy.yaml"
    broken.write_text("rules: []\n")
    done = subprocess.run(
        [sys.executable, "-m", "streams", "remediate", "--policy", str(broken)], capture_output=True, text=True
    )
    assert done.returncode == 2
    assert done.stderr.startswith(f"faultstream: invalid policy {broken}:")
