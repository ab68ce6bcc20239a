"""rsyslog with omkafka, configured by deploy/rsyslog/faultstream.conf, feeds the live pipeline:
real rsyslogd tailing files, real Kafka, real Redis (docs/integrations.md, rsyslog)."""

from __future__ import annotations

import time

import pytest

from tests.integrations.shipping import (
    HOST,
    Rsyslog,
    missing_shippers,
    render_slurm_event_script,
    rfc3339_now,
    run_slurm_event_script,
    wait_for,
)

pytestmark = [pytest.mark.services, pytest.mark.slow]

if missing := missing_shippers():
    pytest.skip(f"not installed: {', '.join(missing)} (install-integrations.sh)", allow_module_level=True)

XID79 = "NVRM: Xid (PCI:0000:3b:00): 79, pid=48211, name=python, GPU has fallen off the bus."


@pytest.fixture
def rsyslog(pipeline):
    pipeline.grace_s = 5.0  # job output is stamped when rsyslog reads it: room for a busy machine
    shipper = Rsyslog(pipeline.workdir, pipeline.services.kafka, pipeline.namespace)
    yield shipper
    shipper.stop()


def test_an_xid_79_tailed_by_rsyslog_blames_the_node_that_logged_it(pipeline, rsyslog, tmp_path):
    pipeline.extractor()
    pipeline.correlator()
    rsyslog.start()
    script = render_slurm_event_script(tmp_path / "slurm-event.py", pipeline.services.kafka, pipeline.namespace)
    job = {"SLURM_JOB_ID": "7001", "SLURM_JOB_USER": "alice", "SLURM_JOB_UID": "1001",
           "SLURM_JOB_NODELIST": HOST, "SLURM_JOB_PARTITION": "gpu", "SLURM_JOB_NAME": "pretrain"}  # fmt: skip
    start = time.time()
    run_slurm_event_script(script, {**job, "SLURM_SCRIPT_CONTEXT": "prolog_slurmctld"})

    time.sleep(1.2)  # the record's start is whole seconds: the lines come after it
    rsyslog.append(rsyslog.syslog, f"{rfc3339_now()} {HOST} systemd[1]: Started Session 12 of user alice.")
    rsyslog.append(
        rsyslog.kern_log,
        f"{rfc3339_now()} {HOST} kernel: {XID79}",
        f"{rfc3339_now()} {HOST} kernel: NVRM: GPU at PCI:0000:3b:00: GPU-5e1f0a2b-9c3d-4e8f-a1b2-c3d4e5f60718",
        f"{rfc3339_now()} {HOST} kernel: NVRM: Xid (PCI:0000:3b:00): 154, GPU recovery action changed "
        "from 0x0 (None) to 0x2 (Node Reboot Required)",
    )
    rsyslog.append(rsyslog.jobs_dir / "7001.out", "[rank 0] iteration 120/5000 | loss 2.31",
                   "RuntimeError: CUDA error: unspecified launch failure")  # fmt: skip
    time.sleep(1.2)
    run_slurm_event_script(
        script,
        {"JOBID": "7001", "JOBSTATE": "FAILED", "EXITCODE": "1:0", "DERIVED_EC": "0:0", "USERNAME": "alice",
         "UID": "1001", "NODES": HOST, "PARTITION": "gpu", "JOBNAME": "pretrain",
         "START": str(int(start)), "END": str(int(time.time()))},
    )  # fmt: skip

    got = wait_for(pipeline.services.redis, pipeline.prefix, lambda verdicts: "7001" in verdicts)
    assert "7001" in got, f"no verdict\n{pipeline.logs()}\n{rsyslog.log()}"
    verdict = got["7001"]
    assert verdict["verdict"]["attribution_outcome"] == "Fail Hardware"
    assert verdict["responsible_nodes"] == [HOST]
    assert verdict["root_symptom"]["symptom"] == "gpu_fallen_off_bus"
    assert verdict["root_symptom"]["line"].endswith(f" {HOST} kernel: {XID79}")
    # The job's own output, tailed from <job id>.out, reached the job and is the Xid's echo.
    echoes = {link["symptom"]: link["role"] for link in verdict["chain"]}
    assert echoes["cuda_unspecified_launch_failure"] == "downstream"
    assert echoes["gpu_recovery_action_changed"] == "downstream"
    assert verdict["root_symptom"]["source"] == "dmesg"
