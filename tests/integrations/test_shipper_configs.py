"""The Fluent Bit and Vector configs in deploy/: their binaries are not installed here, so these
tests check what the configs say (which input goes to which topic, keyed how, the job id taken
from the output file's name), then feed records in exactly the shapes those configs emit through
Faultstream's normalizer and engine. The general Fluent Bit / Vector record shapes are covered by
tests/streams/test_normalize_fluentbit.py and test_normalize_vector.py; this file adds what the
configs add (the job id from the path, the host field, the topic routing) and a job story."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest
import yaml

from correlator.settings import CorrelatorSettings
from streams.backtest import backtest, latest_revisions
from streams.normalize import normalize_record
from tests.conftest import REPO
from tests.integrations.shipping import render_file
from tests.streams.test_normalize_fluentbit import XID79

DEPLOY = REPO / "deploy"
SAMPLE_VALUES = {
    "BROKERS": "kafka-1:9092,kafka-2:9092", "TOPIC_PREFIX": "prod.", "STATE_DIR": "/var/lib/shipper",
    "JOB_OUTPUT_GLOB": "/var/log/slurm-jobs/*.out", "SLURM_LOGS": "/var/log/slurm/slurm*.log",
}  # fmt: skip
JOB_OUTPUT_PATHS = {  # --output=/var/log/slurm-jobs/%j.out, or a name around %j
    "/var/log/slurm-jobs/4242.out": "4242",
    "/var/log/slurm-jobs/train_4242.err": "4242",
    "/var/log/slurm-jobs/train.out": None,  # no number: no job id, the line joins by node and time
}
START, XID_AT, END = 1714557600.0, 1714557900.25, 1714557960.0  # 2024-05-01 10:00, 10:05, 10:06 UTC


def fluent_bit_sections(path: Path) -> list[tuple[str, dict[str, list[str]]]]:
    """Fluent Bit's classic format: [SECTION] headers, then `key value` lines (keys repeat)."""
    sections: list[tuple[str, dict[str, list[str]]]] = []
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            sections.append((line.strip("[]").upper(), {}))
        else:
            key, _, value = line.partition(" ")
            sections[-1][1].setdefault(key.lower(), []).append(value.strip())
    return sections


@pytest.fixture(scope="module")
def fluent_bit(tmp_path_factory) -> list[tuple[str, dict[str, list[str]]]]:
    rendered = tmp_path_factory.mktemp("fluent-bit") / "faultstream.conf"
    render_file(DEPLOY / "fluent-bit" / "faultstream.conf", rendered, SAMPLE_VALUES)
    return fluent_bit_sections(rendered)


@pytest.fixture(scope="module")
def vector(tmp_path_factory) -> dict:
    rendered = tmp_path_factory.mktemp("vector") / "faultstream.yaml"
    render_file(DEPLOY / "vector" / "faultstream.yaml", rendered, SAMPLE_VALUES)
    return yaml.safe_load(rendered.read_text())


def fluent_bit_routes(sections) -> dict[str, str]:
    """Input tag -> Kafka topic, following each output's match / match_regex."""
    tags = [conf["tag"][0] for kind, conf in sections if kind == "INPUT"]
    routes = {}
    for kind, conf in sections:
        if kind == "OUTPUT":
            pattern = conf["match_regex"][0] if "match_regex" in conf else re.escape(conf["match"][0])
            routes |= {tag: conf["topics"][0] for tag in tags if re.fullmatch(pattern, tag)}
    return routes


def test_fluent_bit_sends_kernel_lines_to_dmesg_the_rest_to_syslog_and_job_output_to_applog(fluent_bit):
    assert fluent_bit_routes(fluent_bit) == {
        "journal.kernel": "prod.logs.dmesg",
        "journal.system": "prod.logs.syslog",
        "slurm.daemon": "prod.logs.syslog",
        "slurm.job": "prod.logs.applog",
    }
    for kind, conf in fluent_bit:
        if kind == "OUTPUT":  # the record shape docs/formats.md describes, keyed by the node
            assert conf["format"] == ["json"] and conf["timestamp_key"] == ["@timestamp"]
            assert conf["timestamp_format"] == ["double"] and conf["message_key_field"] == ["hostname"]
            assert conf["brokers"] == ["kafka-1:9092,kafka-2:9092"]


def test_fluent_bit_takes_the_job_id_from_the_output_files_name(fluent_bit):
    parser_file = fluent_bit_sections(DEPLOY / "fluent-bit" / "parsers.conf")
    (parser,) = [conf for kind, conf in parser_file if kind == "PARSER"]
    job_filter = next(conf for kind, conf in fluent_bit if kind == "FILTER" and conf["name"] == ["parser"])
    assert job_filter["parser"] == parser["name"] and job_filter["key_name"] == ["file"]
    assert job_filter["reserve_data"] == ["on"] and job_filter["preserve_key"] == ["on"]
    onigmo = parser["regex"][0]
    python_regex = re.compile(onigmo.replace("(?<", "(?P<"))  # the same syntax for this pattern
    for path, job_id in JOB_OUTPUT_PATHS.items():
        found = python_regex.search(path)
        assert (found["job_id"] if found else None) == job_id, path


def test_vector_sends_kernel_lines_to_dmesg_the_rest_to_syslog_and_job_output_to_applog(vector):
    routes = {source: sink["topic"] for sink in vector["sinks"].values() for source in sink["inputs"]}
    assert routes == {
        "journal_kernel": "prod.logs.dmesg",
        "journal_system": "prod.logs.syslog",
        "slurm_daemons": "prod.logs.syslog",
        "slurm_job_id": "prod.logs.applog",
    }
    assert vector["transforms"]["slurm_job_id"]["inputs"] == ["slurm_jobs"]
    assert vector["sources"]["journal_kernel"]["include_matches"] == {"_TRANSPORT": ["kernel"]}
    assert vector["sources"]["journal_system"]["exclude_matches"] == {"_TRANSPORT": ["kernel"]}
    for sink in vector["sinks"].values():
        assert sink["encoding"] == {"codec": "json"} and sink["key_field"] == "host"


def test_vector_takes_the_job_id_from_the_output_files_name(vector):
    vrl = vector["transforms"]["slurm_job_id"]["source"]
    (rust_regex,) = re.findall(r"r'([^']*)'", vrl)  # Rust's regex syntax; Python reads this one alike
    for path, job_id in JOB_OUTPUT_PATHS.items():
        found = re.search(rust_regex, path)
        assert (found["job_id"] if found else None) == job_id, path


def test_a_job_output_line_from_either_shipper_belongs_to_the_job_named_by_its_file():
    text = "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    fluent_bit = {"@timestamp": XID_AT, "log": text, "file": "/var/log/slurm-jobs/4242.out",
                  "job_id": "4242", "hostname": "gpu007"}  # fmt: skip
    vector = {"file": "/var/log/slurm-jobs/4242.out", "host": "gpu007", "message": text, "source_type": "file",
              "timestamp": "2024-05-01T10:05:00.250Z", "job_id": "4242"}  # fmt: skip
    topics = {"prod.logs.applog": "applog"}
    for record in (fluent_bit, vector):
        (line,) = normalize_record("prod.logs.applog", record, "gpu007", None, "o", topics).lines
        assert line.workload_id == "4242" and line.host == "gpu007" and line.source == "applog"
        assert line.time_ms == 1714557900250


def fluent_bit_story() -> list[dict]:
    """Job 4242 on gpu007 and gpu008, as Fluent Bit ships it: an Xid 79 from journald's kernel
    transport on gpu007, the job's output, slurmctld's log, then the end record from Slurm."""
    journal_common = {
        "_TRANSPORT": "kernel",
        "SYSLOG_IDENTIFIER": "kernel",
        "PRIORITY": "3",
        "_BOOT_ID": "8f7e",
    }
    return [
        {"topic": "logs.applog", "value": {"@timestamp": START + 30, "log": "[rank 0] iteration 10 | loss 2.3",
         "file": "/var/log/slurm-jobs/4242.out", "job_id": "4242", "hostname": "gpu007"}},
        {"topic": "logs.dmesg", "value": {"@timestamp": XID_AT, "MESSAGE": XID79, "_HOSTNAME": "gpu007",
         "hostname": "gpu007", **journal_common}},
        {"topic": "logs.applog", "value": {"@timestamp": XID_AT + 2, "log": "RuntimeError: CUDA error: "
         "unspecified launch failure", "file": "/var/log/slurm-jobs/4242.out", "job_id": "4242",
         "hostname": "gpu007"}},
        {"topic": "logs.syslog", "value": {"@timestamp": END - 1, "log": "[2024-05-01T10:05:59.000] "
         "_job_complete: JobId=4242 WEXITSTATUS 1", "file": "/var/log/slurm/slurmctld.log",
         "hostname": "ctl01"}},
        *slurm_end(),
    ]  # fmt: skip


def vector_story() -> list[dict]:
    """The same job as Vector ships it."""
    return [
        {"topic": "logs.applog", "value": {"file": "/var/log/slurm-jobs/4242.out", "host": "gpu007",
         "message": "[rank 0] iteration 10/5000 | loss 2.3", "source_type": "file",
         "timestamp": "2024-05-01T10:00:30Z", "job_id": "4242"}},
        {"topic": "logs.dmesg", "value": {"host": "gpu007", "message": XID79, "source_type": "journald",
         "timestamp": "2024-05-01T10:05:00.250Z", "_HOSTNAME": "gpu007", "_TRANSPORT": "kernel",
         "SYSLOG_IDENTIFIER": "kernel", "PRIORITY": "3"}},
        {"topic": "logs.applog", "value": {"file": "/var/log/slurm-jobs/4242.out", "host": "gpu007",
         "message": "RuntimeError: CUDA error: unspecified launch failure", "source_type": "file",
         "timestamp": "2024-05-01T10:05:02.250Z", "job_id": "4242"}},
        {"topic": "logs.syslog", "value": {"file": "/var/log/slurm/slurmctld.log", "host": "ctl01",
         "message": "[2024-05-01T10:05:59.000] _job_complete: JobId=4242 WEXITSTATUS 1",
         "source_type": "file", "timestamp": "2024-05-01T10:05:59Z"}},
        *slurm_end(),
    ]  # fmt: skip


def slurm_end() -> list[dict]:
    """What deploy/slurm/faultstream-slurm-event.py publishes for the job's end."""
    record = {"jobid": 4242, "username": "alice", "user_id": 1001, "@start": "2024-05-01T10:00:00",
              "@end": "2024-05-01T10:06:00", "partition": "gpu", "nodes": "gpu[007-008]", "exit_code": "1:0",
              "derived_ec": "0:0", "state": "FAILED", "job_name": "pretrain"}  # fmt: skip
    return [{"topic": "events.scheduler", "value": record, "key": "4242"}]


@pytest.mark.parametrize("story", [fluent_bit_story, vector_story], ids=["fluent-bit", "vector"])
def test_an_xid_79_shipped_by_either_shipper_blames_its_node(story, tmp_path, bundled_ruleset):
    recording = tmp_path / "recording.jsonl"
    rows = [{"key": None, "timestamp": int(END * 1000), **row} for row in story()]
    recording.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    result = backtest(recording, bundled_ruleset, CorrelatorSettings(grace_s=30, tail_s=30))
    assert result.dead_letters == []
    (verdict,) = latest_revisions(result.verdicts)
    assert verdict.verdict.attribution_outcome == "Fail Hardware"
    assert verdict.responsible_nodes == ["gpu007"]
    assert verdict.root_symptom.symptom == "gpu_fallen_off_bus" and verdict.root_symptom.source == "dmesg"
    echoes = {link.symptom: link.role for link in verdict.chain}
    assert echoes["cuda_unspecified_launch_failure"] == "downstream"  # the job's output reached the job
