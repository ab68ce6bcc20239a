"""A real Slurm 22.05 cluster (one node) reports its jobs through the Faultstream event script
(jobcomp/script + PrologSlurmctld), rsyslog ships the jobs' output and slurmctld's log, and
every job gets the verdict its ending deserves; a GPU that falls off the bus during a job gets
the node drained by `faultstream remediate` (docs/integrations.md, Slurm and remediation)."""

from __future__ import annotations

import os
import uuid

import pytest

from streams.normalize import normalize_record
from tests.integrations.shipping import (
    Rsyslog,
    missing_shippers,
    render_slurm_event_script,
    rfc3339_now,
    wait_for,
)
from tests.integrations.slurm_cluster import SlurmCluster, missing_programs
from tests.pipeline.results import read_topic

pytestmark = [pytest.mark.services, pytest.mark.slow]

XID79 = "NVRM: Xid (PCI:0000:3b:00): 79, pid=48211, name=python, GPU has fallen off the bus."
DRAIN_POLICY = """
max_nodes_per_window: 1
rules:
  - name: gpu-fatal
    match: {root_symptom: [gpu_fallen_off_bus]}
    reason: "faultstream {symptom} (job {workload_id})"
    actions:
      - exclude: {ttl_s: 3600}
      - command: [scontrol, update, "NodeName={node}", State=DRAIN, "Reason={reason}"]
"""

if missing := missing_programs() + missing_shippers():
    pytest.skip(f"not installed: {', '.join(missing)} (install-integrations.sh)", allow_module_level=True)
if os.geteuid() != 0:
    pytest.skip("the test cluster runs slurmd as root (SlurmdUser=root)", allow_module_level=True)


@pytest.fixture
def cluster(pipeline):
    # Job output carries no time of its own: rsyslog stamps it when it reads it, and Slurm's end
    # time is in whole seconds. A 5 s tail keeps a busy machine's read delay inside the run.
    pipeline.grace_s = 5.0
    script = render_slurm_event_script(
        pipeline.workdir / "faultstream-slurm-event.py", pipeline.services.kafka, pipeline.namespace
    )
    running = SlurmCluster(pipeline.workdir / "slurm", script)
    running.start()
    yield running
    running.stop()


@pytest.fixture
def shipped(pipeline, cluster):
    """rsyslog tails the job output files and slurmctld's log into the test's topics."""
    shipper = Rsyslog(pipeline.workdir, pipeline.services.kafka, pipeline.namespace)
    shipper.jobs_dir = cluster.jobs_dir
    shipper.start(slurm_logs=str(cluster.ctld_log))
    yield shipper
    shipper.stop()


def test_four_real_jobs_succeed_fail_time_out_and_get_cancelled_and_each_gets_its_verdict(
    pipeline, cluster, shipped
):
    pipeline.extractor()
    pipeline.correlator()
    succeeds = cluster.sbatch("--job-name=succeeds", wrap="echo step 1 of 1 done")
    fails = cluster.sbatch("--job-name=fails", wrap="echo loading model; python3 -c 'import transformerz'")
    times_out = cluster.sbatch("--job-name=times-out", "--time=5", wrap="sleep 300")
    cancelled = cluster.sbatch("--job-name=cancelled", wrap="sleep 300")
    cluster.wait_for_state(times_out, "RUNNING")
    cluster.wait_for_state(cancelled, "RUNNING")
    # A time limit of a minute would cost a minute: end the allowed time now instead, and the
    # controller's own time-limit check kills the job as TIMEOUT, as it would at the limit.
    cluster.run("scontrol", "update", f"JobId={times_out}", "EndTime=now")
    cluster.run("scancel", cancelled)
    for job in (succeeds, fails, times_out, cancelled):
        cluster.wait_for_state(job, "COMPLETED", "FAILED", "TIMEOUT", "CANCELLED", timeout_s=90)
    assert [cluster.job_state(job) for job in (succeeds, fails, times_out, cancelled)] == [
        "COMPLETED", "FAILED", "TIMEOUT", "CANCELLED"]  # fmt: skip

    jobs = {succeeds, fails, times_out, cancelled}
    got = wait_for(pipeline.services.redis, pipeline.prefix, lambda verdicts: jobs <= set(verdicts))
    assert jobs <= set(got), f"verdicts only for {sorted(got)}\n{pipeline.logs()}\n{shipped.log()}"

    def outcome(job: str) -> tuple[str, str | None]:
        return got[job]["terminal_state"], got[job]["sub_domain"]

    assert outcome(succeeds) == ("success", None)
    assert outcome(fails) == ("fail", "user")
    assert got[fails]["root_symptom"]["line"] == "ModuleNotFoundError: No module named 'transformerz'"
    assert got[fails]["responsible_nodes"] == []
    assert outcome(times_out) == ("timeout", "user")
    assert outcome(cancelled) == ("cancel", "user")
    assert got[cancelled]["cancellation_actor"] == "uid 0"  # from slurmctld's log, shipped by rsyslog
    for job in jobs:
        assert got[job]["job"]["scheduler"] == "slurm"
        assert got[job]["job"]["nodes"] == [cluster.host]
    assert got[fails]["job"]["exit_code"] == 1


def test_an_xid_79_during_a_real_job_gets_the_node_drained_by_remediate(pipeline, cluster, shipped):
    policy = pipeline.workdir / "policy.yaml"
    policy.write_text(DRAIN_POLICY)
    pipeline.overrides["SLURM_CONF"] = str(cluster.conf)  # remediate's scontrol talks to this cluster
    pipeline.extractor()
    pipeline.correlator()
    pipeline.start("remediate", "--policy", str(policy), "--execute", "--from-beginning", name="remediate")
    job = cluster.sbatch(
        "--job-name=pretrain",
        wrap="sleep 4; echo 'RuntimeError: CUDA error: unspecified launch failure' >&2; exit 1",
    )
    cluster.wait_for_state(job, "RUNNING")
    shipped.append(shipped.kern_log, f"{rfc3339_now()} {cluster.host} kernel: {XID79}")
    cluster.wait_for_state(job, "FAILED")

    got = wait_for(pipeline.services.redis, pipeline.prefix, lambda verdicts: job in verdicts)
    assert job in got, f"no verdict\n{pipeline.logs()}\n{shipped.log()}"
    assert got[job]["verdict"]["attribution_outcome"] == "Fail Hardware"
    assert got[job]["responsible_nodes"] == [cluster.host]

    cluster.wait_until(lambda: "DRAIN" in cluster.node_state(), 60, f"the node to drain\n{pipeline.logs()}")
    assert f"Reason=faultstream gpu_fallen_off_bus (job {job})" in cluster.node_reason()
    actions = [
        record for _, record in read_topic(pipeline.services.kafka, f"{pipeline.namespace}faultstream.actions")
    ]
    assert [(a["node"], a["action"], a["outcome"]) for a in actions] == [
        (cluster.host, "exclude", "done"), (cluster.host, "command", "done")]  # fmt: skip
    assert actions[1]["argv"] == ["scontrol", "update", f"NodeName={cluster.host}", "State=DRAIN",
                                  f"Reason=faultstream gpu_fallen_off_bus (job {job})"]  # fmt: skip


def test_a_site_whose_jobcomp_is_taken_publishes_the_end_from_epilog_slurmctld(services, tmp_path):
    namespace = f"t{uuid.uuid4().hex[:8]}."
    slurm_conf = tmp_path / "slurm" / "slurm.conf"
    script = render_slurm_event_script(tmp_path / "event.py", services.kafka, namespace, slurm_conf)
    cluster = SlurmCluster(tmp_path / "slurm", script, hooks="epilog")
    cluster.start()
    try:
        job = cluster.sbatch("--job-name=short", wrap="exit 3")
        cluster.wait_for_state(job, "FAILED")
        records = cluster.wait_until_value(
            lambda: [r for _, r in read_topic(services.kafka, f"{namespace}events.scheduler", idle_s=1)], 30
        )
    finally:
        cluster.stop()
    (record,) = records
    assert (record["jobid"], record["state"], record["exit_code"]) == (int(job), "FAILED", "3:0")
    start, end = normalize_record("events.scheduler", record, job, None, "o").events
    assert (start.kind, end.kind, end.state, end.exit_code, end.nodes) == (
        "job_start", "job_end", "FAILED", 3, (cluster.host,))  # fmt: skip
    assert start.time_ms <= end.time_ms
