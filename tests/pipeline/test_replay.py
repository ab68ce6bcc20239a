"""``faultstream replay`` / ``dump`` on the real broker: a rule author backtests a change on the
topics, sees exactly what it changes, and turns an incident into a recording; the live consumer
groups never notice."""

from __future__ import annotations

import asyncio
import json
import shutil
import uuid
from pathlib import Path

import orjson
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.structs import OffsetAndMetadata

from correlator.timefmt import iso as iso_ms
from streams.admin import ensure_topics
from streams.backtest import backtest, latest_revisions
from streams.cli import main
from streams.normalize.times import now_ms
from streams.publish import publish_recordings
from streams.settings import load_settings
from tests.conftest import REPO

pytestmark = pytest.mark.services

HOUR = 3_600_000
T = (now_ms() // HOUR - 3) * HOUR  # three hours ago, on the hour: inside any retention


def iso(seconds: float) -> str:
    return iso_ms(T + int(seconds * 1000))


def job_record(job: int, start_s: int, end_s: int, nodes: str, state: str) -> dict:
    times = {"@start": iso(start_s)[:19], "@end": iso(end_s)[:19]}
    value = {"jobid": job, "username": "alice", "user_id": 1001, "nodes": nodes, "exit_code": "1:0"}
    value |= times | {"state": state, "partition": "gpu"}
    return {"topic": "events.scheduler", "value": value, "key": str(job), "timestamp": T + end_s * 1000 + 200}


def line_record(topic: str, host: str, seconds: float, text: str) -> dict:
    stamp = T + int(seconds * 1000)
    return {"topic": topic, "value": {"@timestamp": stamp / 1000, "log": text, "hostname": host},
            "key": host, "timestamp": stamp}  # fmt: skip


XID79 = "[812345.1] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off the bus."
CLOSED = (
    "gpu001:71:90 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer gpu002<3>"
)
OOM = "[rank 0] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"

#: Job 7001 (Xid 79 on gpu002) ends in the first ten minutes; job 7002 (CUDA OOM) an hour later.
RECORDS = [
    line_record("logs.applog", "gpu001", 30, "[rank 0] iteration 10/100 | loss 2.1"),
    line_record("logs.dmesg", "gpu002", 60, XID79),
    line_record("logs.applog", "gpu001", 61, CLOSED),
    job_record(7001, 0, 120, "gpu[001-002]", "FAILED"),
    line_record("logs.applog", "gpu003", 3700, OOM),
    job_record(7002, 3600, 3760, "gpu003", "FAILED"),
]


@pytest.fixture(scope="module")
def topics(services):
    settings = load_settings(
        None, kafka_bootstrap_servers=services.kafka, namespace=f"replay{uuid.uuid4().hex[:8]}."
    )
    asyncio.run(_produce(settings, RECORDS))
    asyncio.run(_commit_a_live_group(settings))
    return settings


async def _produce(settings, records) -> None:
    await ensure_topics(settings)
    producer = AIOKafkaProducer(**settings.aiokafka_options())
    await producer.start()
    try:
        for record in records:
            value = orjson.dumps(record["value"])
            await producer.send_and_wait(settings.topic(record["topic"]), value, key=record["key"].encode(),
                                         timestamp_ms=record["timestamp"])  # fmt: skip
    finally:
        await producer.stop()


LIVE_GROUP = "faultstream-extractor-live"


async def _commit_a_live_group(settings) -> None:
    consumer = AIOKafkaConsumer(group_id=LIVE_GROUP, enable_auto_commit=False, **settings.aiokafka_options())
    await consumer.start()
    partition = TopicPartition(settings.topic("logs.applog"), 0)
    try:
        consumer.assign([partition])
        await consumer.commit({partition: OffsetAndMetadata(1, "")})
    finally:
        await consumer.stop()


async def _groups_and_offsets(settings) -> tuple[set[str], dict]:
    admin = AIOKafkaAdminClient(**settings.aiokafka_options())
    await admin.start()
    try:
        groups = {g[0] for g in await admin.list_consumer_groups()}
        offsets = await admin.list_consumer_group_offsets(LIVE_GROUP)
    finally:
        await admin.close()
    return groups, {tp: meta.offset for tp, meta in offsets.items()}


def cli(settings, tmp_path: Path, *argv: str) -> int:
    config = tmp_path / "config.yaml"
    config.write_text(
        f"kafka_bootstrap_servers: {settings.kafka_bootstrap_servers}\nnamespace: {settings.namespace}\n"
    )
    return main([*argv, "--config", str(config)])


def without_xid79(tmp_path: Path) -> Path:
    rules = tmp_path / "candidate"
    shutil.copytree(REPO / "rules", rules)
    (rules / "symptoms" / "gpu" / "gpu.xid.79.yaml").unlink()
    return rules


def test_a_sub_range_dump_holds_exactly_the_records_stamped_in_it(topics, tmp_path):
    out = tmp_path / "first.jsonl"
    assert cli(topics, tmp_path, "dump", "--since", iso(0), "--until", iso(600), "-o", str(out)) == 0
    dumped = [json.loads(row) for row in out.read_text().splitlines()]
    assert sorted(r["timestamp"] for r in dumped) == sorted(r["timestamp"] for r in RECORDS[:4])
    assert [r["timestamp"] for r in dumped] == sorted(r["timestamp"] for r in dumped)  # event-time order
    assert {r["topic"] for r in dumped} == {"logs.applog", "logs.dmesg", "events.scheduler"}


def test_removing_the_xid79_rule_changes_exactly_the_xid79_verdict(topics, tmp_path, capsys):
    before = asyncio.run(_groups_and_offsets(topics))
    candidate = without_xid79(tmp_path)
    argv = ["replay", "--since", iso(0), "--until", iso(7200), "--readback", "1h", "--rules", str(candidate)]
    assert cli(topics, tmp_path, *argv, "--json", "--fail-on-change") == 1
    diff = json.loads(capsys.readouterr().out)
    assert diff["verdicts"] == {"baseline": 2, "candidate": 2} and diff["unchanged"] == 1
    [change] = diff["changed"]
    assert change["workload_id"] == "7001"
    assert change["before"]["domain"] == "hardware" and change["after"]["domain"] != "hardware"
    assert change["before"]["root"] == "gpu_fallen_off_bus (gpu.xid.79)"
    assert diff["rule_hits"] == {"gpu.xid.79": {"before": 1, "after": 0}}
    assert diff["outcomes"]["Fail Hardware"] == {"before": 1, "after": 0}
    assert asyncio.run(_groups_and_offsets(topics)) == before  # no new group, the live offsets untouched


def test_the_same_rules_change_nothing_and_the_gate_passes(topics, tmp_path, capsys):
    assert cli(topics, tmp_path, "replay", "--since", iso(0), "--until", iso(7200), "--fail-on-change") == 0
    assert "0 changed" in capsys.readouterr().out


def test_a_dumped_incident_backtests_to_the_verdict_the_whole_range_gives(topics, tmp_path, bundled_ruleset):
    whole, incident = tmp_path / "whole.jsonl", tmp_path / "incident.jsonl"
    assert cli(topics, tmp_path, "dump", "--since", iso(-600), "--until", iso(7200), "-o", str(whole)) == 0
    argv = ["dump", "--since", iso(-600), "--until", iso(7200), "--workload", "7001", "-o", str(incident)]
    assert cli(topics, tmp_path, *argv) == 0
    assert len(incident.read_text().splitlines()) == 4  # its job record and its two nodes' lines

    def of(path: Path) -> dict:
        verdicts = latest_revisions(backtest(path, bundled_ruleset).verdicts)
        return {v.workload_id: v.model_dump(exclude={"lines_seen"}) for v in verdicts}

    assert of(incident)["7001"] == of(whole)["7001"]
    assert of(incident)["7001"]["sub_domain"] == "hardware"


def test_a_recording_replayed_with_load_is_judged_in_its_own_event_time(services, tmp_path, capsys):
    """`faultstream load` stamps records with the send time and keeps the recorded time in a
    header: the range selects by send time, the verdicts are the recording's."""
    settings = load_settings(
        None, kafka_bootstrap_servers=services.kafka, namespace=f"reload{uuid.uuid4().hex[:8]}."
    )
    incident = REPO / "tests" / "golden" / "incidents" / "xid79-two-nodes-7001.jsonl"
    since = iso_ms(now_ms() - 1000)
    asyncio.run(publish_recordings(settings, [incident]))
    assert (
        cli(settings, tmp_path, "replay", "--since", since, "--until", "now", "--readback", "0s", "--json") == 0
    )
    diff = json.loads(capsys.readouterr().out)
    assert diff["verdicts"] == {"baseline": 1, "candidate": 1} and diff["unchanged"] == 1
