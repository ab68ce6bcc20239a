#!/usr/bin/env python3
"""Slurm -> Faultstream: publish a job's start or end to events.scheduler, in the record shape of
Slurm's jobcomp/kafka plugin (docs/formats.md "Slurm jobcomp/kafka"), for Slurm < 23.02, which
has no jobcomp/kafka. One script, three places in slurm.conf (docs/integrations.md):

    JobCompType=jobcomp/script
    JobCompLoc=/etc/slurm/faultstream-slurm-event.py      # the end of every job (the record)
    PrologSlurmctld=/etc/slurm/faultstream-slurm-event.py # the start, as the job starts (optional)
    # or, when the site's one jobcomp plugin is taken, the end from the controller's epilog
    # (it returns at once and publishes from a detached child once the job's state is final):
    EpilogSlurmctld=/etc/slurm/faultstream-slurm-event.py

It runs on the controller as SlurmUser with the environment Slurm gives it (nothing else is
inherited), so the brokers and the topic are filled in when it is installed:

    python3 deploy/render.py deploy/slurm/faultstream-slurm-event.py \
        /etc/slurm/faultstream-slurm-event.py BROKERS=kafka-1:9092 TOPIC_PREFIX= \
        SLURM_CONF=/etc/slurm/slurm.conf

Standard library only; the record goes to Kafka through `kcat` (Debian package kcat), run as an
argument list: no value from a job (its name, its directory) ever reaches a shell.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import syslog
import time
from datetime import UTC, datetime

BROKERS = "@BROKERS@"
TOPIC = "@TOPIC_PREFIX@events.scheduler"
# EpilogSlurmctld's environment does not say where slurm.conf is; its scontrol call needs it.
SLURM_CONF = "@SLURM_CONF@"
KCAT = os.environ.get("FAULTSTREAM_KCAT", "kcat")
SEND_TIMEOUT_S = 20
FINAL_STATE_WAIT_S = 300
DETACHED = "--detached"
# Slurm's "no value" sentinels in the ids of array and het jobs (NO_VAL, NO_VAL - 1).
NO_VAL = {"", "0", "4294967294", "4294967295"}


def iso_utc(epoch_s: str | float | None) -> str:
    """jobcomp/kafka's time: %FT%T, UTC, no zone; "Unknown" when Slurm has none (0)."""
    if epoch_s in (None, "", "0", 0):
        return "Unknown"
    return datetime.fromtimestamp(float(epoch_s), UTC).strftime("%Y-%m-%dT%H:%M:%S")


def number(text: str | None) -> int | None:
    return int(text) if text and text.isdigit() else None


def drop_empty(record: dict) -> dict:
    return {key: value for key, value in record.items() if value not in (None, "")}


def jobcomp_record(env: dict[str, str]) -> dict:
    """The end of a job, from jobcomp/script's environment (JOBID, JOBSTATE, START, END, ...)."""
    job_id = env["JOBID"]
    record = {
        "jobid": int(job_id),
        "sluid": env.get("SLUID"),  # Slurm >= 26.05: the run's unique id (a requeue gets a new one)
        "original_sluid": env.get("ORIGINAL_SLUID"),
        "username": env.get("USERNAME"),
        "user_id": number(env.get("UID")),
        "groupname": env.get("GROUPNAME"),
        "group_id": number(env.get("GID")),
        "@submit": iso_utc(env.get("SUBMIT")),
        "@start": iso_utc(env.get("START")),
        "@end": iso_utc(env.get("END")),
        "partition": env.get("PARTITION"),
        "nodes": env.get("NODES"),
        "total_nodes": number(env.get("NODECNT")),
        "total_cpus": number(env.get("PROCS")),
        "exit_code": env.get("EXITCODE"),
        "derived_ec": env.get("DERIVED_EC"),
        "state": env["JOBSTATE"],
        "job_name": env.get("JOBNAME"),
        "cluster": env.get("CLUSTER"),
        "account": env.get("ACCOUNT"),
        "qos": env.get("QOS"),
        "time_limit": env.get("LIMIT"),
        "work_dir": env.get("WORK_DIR"),
        "std_out": output_path(env.get("STDOUT"), job_id),
        "std_err": output_path(env.get("STDERR"), job_id),
    }
    if env.get("ARRAYJOBID", "") not in NO_VAL:
        record |= {"array_job_id": number(env["ARRAYJOBID"]), "array_task_id": number(env.get("ARRAYTASKID"))}
    if env.get("HETJOBID", "") not in NO_VAL:
        record |= {"het_job_id": number(env["HETJOBID"]), "het_job_offset": number(env.get("HETJOBOFFSET"))}
    return drop_empty(record)


def prolog_record(env: dict[str, str], now: float) -> dict:
    """The start of a job, from PrologSlurmctld's environment: a running state, start = now."""
    record = {
        "jobid": int(env["SLURM_JOB_ID"]),
        "sluid": env.get("SLURM_JOB_SLUID"),  # Slurm >= 25.11
        "username": env.get("SLURM_JOB_USER"),
        "user_id": number(env.get("SLURM_JOB_UID")),
        "@start": iso_utc(now),
        "partition": env.get("SLURM_JOB_PARTITION"),
        "nodes": env.get("SLURM_JOB_NODELIST"),
        "state": "RUNNING",
        "job_name": env.get("SLURM_JOB_NAME"),
        "cluster": env.get("SLURM_CLUSTER_NAME"),
        "work_dir": env.get("SLURM_JOB_WORK_DIR"),
    }
    if env.get("SLURM_ARRAY_JOB_ID"):
        record |= {
            "array_job_id": number(env["SLURM_ARRAY_JOB_ID"]),
            "array_task_id": number(env.get("SLURM_ARRAY_TASK_ID")),
        }
    return drop_empty(record)


def epilog_record(env: dict[str, str], job_fields: dict[str, str]) -> dict:
    """The end of a job from EpilogSlurmctld. Its environment has the exit code but not the
    job's state or times (Slurm 22.05), so those come from `scontrol show job`."""
    record = {
        "jobid": int(env["SLURM_JOB_ID"]),
        "sluid": env.get("SLURM_JOB_SLUID"),  # Slurm >= 25.11
        "username": env.get("SLURM_JOB_USER"),
        "user_id": number(env.get("SLURM_JOB_UID")),
        "@start": job_fields.get("StartTime", "Unknown"),
        "@end": job_fields.get("EndTime"),
        "partition": env.get("SLURM_JOB_PARTITION"),
        "nodes": env.get("SLURM_JOB_NODELIST"),
        "exit_code": env.get("SLURM_JOB_EXIT_CODE2"),
        "state": job_fields.get("JobState"),
        "job_name": env.get("SLURM_JOB_NAME"),
        "cluster": env.get("SLURM_CLUSTER_NAME"),
        "work_dir": env.get("SLURM_JOB_WORK_DIR"),
    }
    return drop_empty(record)


def output_path(pattern: str | None, job_id: str) -> str | None:
    """jobcomp/script passes the --output pattern unexpanded; %j and %A are enough to find it."""
    if not pattern:
        return None
    return pattern.replace("%j", job_id).replace("%A", job_id)


def scontrol_job_fields(job_id: str) -> dict[str, str]:
    """`scontrol show job -o ID` as key=value pairs. Times are the controller's local time: run
    controllers in UTC, as docs/formats.md asks of nodes."""
    env = {**os.environ, "SLURM_CONF": SLURM_CONF}
    argv = ["scontrol", "show", "job", "-o", job_id]
    shown = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30, check=True)
    return parse_scontrol_job(shown.stdout)


def parse_scontrol_job(text: str) -> dict[str, str]:
    """The fields we read (JobState, StartTime, EndTime) hold no spaces; others may, and are not read."""
    return dict(re.findall(r"(?:^|\s)(\w+)=(\S*)", text))


def final_job_fields(job_id: str) -> dict[str, str]:
    """The job as scontrol shows it once it is no longer COMPLETING (the flag hides the final
    state, and it stays set while EpilogSlurmctld runs: see `main`, which waits detached)."""
    deadline = time.monotonic() + FINAL_STATE_WAIT_S
    while True:
        fields = scontrol_job_fields(job_id)
        if fields.get("JobState") != "COMPLETING" or time.monotonic() > deadline:
            return fields
        time.sleep(1)


def record_for(env: dict[str, str], now: float) -> dict:
    context = env.get("SLURM_SCRIPT_CONTEXT", "")
    if context == "prolog_slurmctld":
        return prolog_record(env, now)
    if context == "epilog_slurmctld":
        return epilog_record(env, final_job_fields(env["SLURM_JOB_ID"]))
    if "JOBSTATE" in env:
        return jobcomp_record(env)
    raise SystemExit("faultstream-slurm-event: not run by Slurm (no JOBSTATE, no SLURM_SCRIPT_CONTEXT)")


def publish(record: dict) -> None:
    """One record, keyed by the job id, acknowledged by the brokers before we return."""
    if "@" in BROKERS or "@" in TOPIC:
        raise SystemExit("faultstream-slurm-event: render the script first (deploy/render.py BROKERS=...)")
    command = [KCAT, "-P", "-b", BROKERS, "-t", TOPIC, "-k", str(record["jobid"]), "-X",
               "request.required.acks=all", "-X", f"message.timeout.ms={SEND_TIMEOUT_S * 1000}"]  # fmt: skip
    payload = json.dumps(record, separators=(",", ":")) + "\n"
    sent = subprocess.run(command, input=payload, capture_output=True, text=True, timeout=SEND_TIMEOUT_S + 10)
    if sent.returncode != 0 or "failed" in sent.stderr.lower():
        raise SystemExit(f"faultstream-slurm-event: job {record['jobid']} not published: {sent.stderr.strip()}")


def detach() -> int:
    """EpilogSlurmctld: hand the work to a child in its own session and return at once, so the
    job can leave COMPLETING (Slurm waits for this script) and show its final state."""
    subprocess.Popen(
        [os.path.abspath(__file__), DETACHED],  # by its #! line: Slurm gives us no PATH to find python
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return 0


def main() -> int:
    env = dict(os.environ)
    if env.get("SLURM_SCRIPT_CONTEXT") == "epilog_slurmctld" and DETACHED not in sys.argv:
        return detach()
    try:
        publish(record_for(env, datetime.now(UTC).timestamp()))
    except (SystemExit, OSError, subprocess.SubprocessError, KeyError, ValueError) as error:
        print(f"faultstream-slurm-event: {error}", file=sys.stderr)
        if DETACHED in sys.argv:  # nobody reads a detached child's stderr: tell syslog
            syslog.syslog(syslog.LOG_ERR, f"faultstream-slurm-event: {error}")
        # A failing PrologSlurmctld would requeue the job: losing a start record is the lesser harm.
        return 0 if env.get("SLURM_SCRIPT_CONTEXT") == "prolog_slurmctld" else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
