"""deploy/render.py fills every template completely or refuses, and the Slurm event script's
records (jobcomp, prolog, epilog) are what Faultstream's jobcomp normalizer expects."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from streams.normalize import normalize_record
from tests.conftest import REPO
from tests.integrations.shipping import SLURM_EVENT_SCRIPT, render_file

TEMPLATE_VALUES = {
    "rsyslog/faultstream.conf": {
        "BROKERS": "k1:9092,k2:9092", "TOPIC_PREFIX": "", "WORKDIR": "/var/spool/rsyslog",
        "KERN_LOG": "/var/log/kern.log", "SYSLOG": "/var/log/syslog", "SLURM_LOGS": "/var/log/slurm/*.log",
        "JOB_OUTPUT_GLOB": "/var/log/slurm-jobs/*.out",
    },
    "slurm/faultstream-slurm-event.py": {
        "BROKERS": "k1:9092", "TOPIC_PREFIX": "prod.", "SLURM_CONF": "/etc/slurm/slurm.conf",
    },
    "fluent-bit/faultstream.conf": {
        "BROKERS": "k1:9092", "TOPIC_PREFIX": "", "STATE_DIR": "/var/lib/fluent-bit",
        "JOB_OUTPUT_GLOB": "/var/log/slurm-jobs/*.out", "SLURM_LOGS": "/var/log/slurm/*.log",
    },
    "vector/faultstream.yaml": {
        "BROKERS": "k1:9092", "TOPIC_PREFIX": "", "STATE_DIR": "/var/lib/vector",
        "JOB_OUTPUT_GLOB": "/var/log/slurm-jobs/*.out", "SLURM_LOGS": "/var/log/slurm/*.log",
    },
}  # fmt: skip


def load_file_module(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


render = load_file_module(REPO / "deploy" / "render.py", "faultstream_render_under_test")
slurm_event = load_file_module(SLURM_EVENT_SCRIPT, "faultstream_slurm_event_under_test")


@pytest.mark.parametrize("template", sorted(TEMPLATE_VALUES))
def test_every_deploy_template_renders_with_no_placeholder_left(template, tmp_path):
    target = tmp_path / Path(template).name
    render_file(REPO / "deploy" / template, target, TEMPLATE_VALUES[template])
    assert render.placeholders(target.read_text()) == set()


def test_the_renderer_names_a_missing_value_an_unknown_one_and_refuses_quotes():
    template = 'broker=["@BROKERS@"] topic="@TOPIC_PREFIX@logs.dmesg"'
    with pytest.raises(render.RenderError, match="no value for TOPIC_PREFIX"):
        render.render(template, {"BROKERS": "k:9092"})
    with pytest.raises(render.RenderError, match="no placeholder BROKER"):
        render.render(template, {"BROKERS": "k:9092", "TOPIC_PREFIX": "", "BROKER": "x"})
    with pytest.raises(render.RenderError, match="not allowed"):
        render.render(template, {"BROKERS": 'k:9092"] action(type="omfile', "TOPIC_PREFIX": ""})


@pytest.mark.skipif(shutil.which("rsyslogd") is None, reason="rsyslogd not installed")
def test_the_rendered_rsyslog_config_passes_rsyslogds_own_check(tmp_path):
    values = dict(TEMPLATE_VALUES["rsyslog/faultstream.conf"], WORKDIR=str(tmp_path))
    render_file(REPO / "deploy" / "rsyslog" / "faultstream.conf", tmp_path / "rsyslog.conf", values)
    checked = subprocess.run(
        ["rsyslogd", "-N1", "-f", str(tmp_path / "rsyslog.conf")], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stderr


# jobcomp/script's environment for a job cancelled at 10:10:02 after starting at 10:00:00 (as
# Slurm 22.05 sets it: epoch seconds, the --output pattern unexpanded, NO_VAL array ids).
JOBCOMP_ENV = {
    "JOBID": "4108", "JOBSTATE": "CANCELLED", "START": "1715162400", "END": "1715163002",
    "SUBMIT": "1715162390",
    "EXITCODE": "0:15", "DERIVED_EC": "0:0", "NODES": "gpu[001-004]", "NODECNT": "4", "PROCS": "128",
    "USERNAME": "alice", "UID": "1001", "GROUPNAME": "ml", "GID": "1000", "PARTITION": "gpu",
    "JOBNAME": "llama-pretrain", "WORK_DIR": "/home/alice/run", "STDOUT": "/var/log/slurm-jobs/%j.out",
    "ARRAYJOBID": "0", "ARRAYTASKID": "4294967294", "LIMIT": "1440", "ACCOUNT": "", "QOS": "normal",
}  # fmt: skip


def normalized(record: dict):
    return normalize_record("events.scheduler", record, str(record["jobid"]), 1715163003000, "o")


def test_a_jobcomp_script_record_gives_the_jobs_start_and_end():
    record = slurm_event.jobcomp_record(JOBCOMP_ENV)
    assert record["@start"] == "2024-05-08T10:00:00" and record["@end"] == "2024-05-08T10:10:02"
    assert record["std_out"] == "/var/log/slurm-jobs/4108.out"
    assert "array_job_id" not in record and "account" not in record  # Slurm's "none" values are dropped
    result = normalized(record)
    assert result.dead == []
    start, end = result.events
    assert start.kind == "job_start" and start.time_ms == 1715162400000
    assert start.nodes == ("gpu001", "gpu002", "gpu003", "gpu004")
    assert end.kind == "job_end" and end.time_ms == 1715163002000 and end.state == "CANCELLED"
    assert (end.exit_code, end.signal) == (0, 15)
    assert end.workload_id == "4108" and end.user == "alice"


def test_a_job_cancelled_while_pending_has_no_start():
    record = slurm_event.jobcomp_record(dict(JOBCOMP_ENV, START="0", NODES="None assigned"))
    assert record["@start"] == "Unknown"
    (end,) = normalized(record).events
    assert end.kind == "job_end" and end.nodes == ()


def test_an_array_task_keeps_its_array_ids():
    record = slurm_event.jobcomp_record(dict(JOBCOMP_ENV, JOBID="4110", ARRAYJOBID="4100", ARRAYTASKID="10"))
    assert (record["jobid"], record["array_job_id"], record["array_task_id"]) == (4110, 4100, 10)
    assert normalized(record).events[-1].workload_id == "4110"


def test_a_prolog_record_is_the_jobs_start_on_its_nodes():
    env = {"SLURM_SCRIPT_CONTEXT": "prolog_slurmctld", "SLURM_JOB_ID": "4108", "SLURM_JOB_USER": "alice",
           "SLURM_JOB_UID": "1001", "SLURM_JOB_NODELIST": "gpu[001-002]", "SLURM_JOB_PARTITION": "gpu",
           "SLURM_JOB_NAME": "llama-pretrain", "SLURM_CLUSTER_NAME": "c1"}  # fmt: skip
    record = slurm_event.record_for(env, now=1715162400.7)
    assert record["state"] == "RUNNING" and record["@start"] == "2024-05-08T10:00:00"
    (start,) = normalized(record).events
    assert (start.kind, start.time_ms, start.nodes) == ("job_start", 1715162400000, ("gpu001", "gpu002"))


def test_an_epilog_record_takes_the_state_and_times_slurm_keeps_out_of_the_epilogs_environment():
    shown = (
        "JobId=4109 JobName=llama-pretrain UserId=alice(1001) GroupId=ml(1000) MCS_label=N/A Priority=1 "
        "Nice=0 Account=ml QOS=normal JobState=TIMEOUT Reason=TimeLimit Dependency=(null) Requeue=1 Restarts=0 "
        "BatchFlag=1 Reboot=0 ExitCode=0:15 RunTime=01:00:01 TimeLimit=01:00:00 TimeMin=N/A "
        "SubmitTime=2024-05-09T09:59:58 EligibleTime=2024-05-09T09:59:58 StartTime=2024-05-09T10:00:00 "
        "EndTime=2024-05-09T11:00:01 Deadline=N/A Partition=gpu NodeList=gpu[001-002] "
        "Command=/home/alice/run/train job.sh WorkDir=/home/alice/run"
    )
    env = {"SLURM_SCRIPT_CONTEXT": "epilog_slurmctld", "SLURM_JOB_ID": "4109", "SLURM_JOB_USER": "alice",
           "SLURM_JOB_UID": "1001", "SLURM_JOB_NODELIST": "gpu[001-002]", "SLURM_JOB_EXIT_CODE2": "0:15",
           "SLURM_JOB_PARTITION": "gpu", "SLURM_JOB_NAME": "llama-pretrain"}  # fmt: skip
    record = slurm_event.epilog_record(env, slurm_event.parse_scontrol_job(shown))
    assert record["state"] == "TIMEOUT"
    assert (record["@start"], record["@end"]) == ("2024-05-09T10:00:00", "2024-05-09T11:00:01")
    end = normalized(record).events[-1]
    assert (end.kind, end.state, end.signal) == ("job_end", "TIMEOUT", 15)


def test_an_unrendered_script_refuses_to_publish():
    with pytest.raises(SystemExit, match="render the script first"):
        slurm_event.publish({"jobid": 1})


def test_slurms_unique_job_id_travels_with_the_job_end_but_the_job_id_names_the_workload():
    record = slurm_event.jobcomp_record(
        dict(JOBCOMP_ENV, SLUID="s0k2m4p6r8t0v", ORIGINAL_SLUID="s0k2m4p6r8t0a")
    )
    end = normalized(record).events[-1]
    assert end.workload_id == "4108"  # what slurmstepd lines and %j output files name
    assert (end.extra["sluid"], end.extra["original_sluid"]) == ("s0k2m4p6r8t0v", "s0k2m4p6r8t0a")
