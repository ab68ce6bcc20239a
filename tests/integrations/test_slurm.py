"""A real Slurm 22.05 cluster (one node) reports its jobs through the Faultstream event script
(jobcomp/script + PrologSlurmctld), rsyslog ships the jobs' output and slurmctld's log, and
every job gets the verdict its ending deserves (docs/integrations.md, Slurm)."""

from __future__ import annotations

import shutil

import pytest

from tests.integrations.shipping import Rsyslog, render_slurm_event_script, wait_for
from tests.integrations.slurm_cluster import SlurmCluster, missing_programs

pytestmark = [pytest.mark.services, pytest.mark.slow]

if missing := missing_programs() + [p for p in ("rsyslogd", "kcat") if shutil.which(p) is None]:
    pytest.skip(f"not installed: {', '.join(missing)} (install-integrations.sh)", allow_module_level=True)


@pytest.fixture
def cluster(pipeline):
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
