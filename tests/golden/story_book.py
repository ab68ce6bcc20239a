"""The stories themselves (registered with ``@story``); see ``tests/golden/stories.py``."""

from __future__ import annotations

import random

from tests.golden import shapes as s
from tests.golden.stories import Story, healthy_noise, nodes, story

S = 1000  # ms per second


def _nccl_closed(host: str, rank: int, t: int, peer: str) -> dict:
    return s.vector_applog(
        host,
        t,
        f"{host}:2841:3012 [{rank % 8}] misc/socket.cc:50 NCCL WARN "
        f"socketProgress: Connection closed by remote peer {peer}<47032>",
        rank,
    )


def _ib_error(host: str, rank: int, t: int, peer_ip: str) -> dict:
    return s.vector_applog(
        host,
        t,
        f"{host}:2841:3012 [{rank % 8}] transport/net_ib.cc:1696 NCCL WARN "
        f"NET/IB : Got completion from peer {peer_ip}<33092> with status=12 opcode=129 "
        f"len=0 vendor err 129 (Recv) localGid ::ffff:10.2.0.{rank} hca mlx5_1",
        rank,
    )


def _watchdog(host: str, rank: int, t: int) -> dict:
    return s.vector_applog(
        host,
        t,
        f"[rank{rank}]:[E ProcessGroupNCCL.cpp:1182] [Rank {rank}] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=88121, OpType=ALLREDUCE, "
        "NumelIn=262144, NumelOut=262144, Timeout(ms)=600000) ran for 600032 "
        "milliseconds before timing out.",
        rank,
    )


@story
def xid79_one_of_sixteen(t0: int) -> Story:
    rng, hosts = random.Random(1), nodes("gpu", 16)
    bad, fault = "gpu007", t0 + 3000 * S
    recs = healthy_noise(rng, hosts, t0, fault)
    recs.append(
        s.fluentbit_dmesg(
            bad, fault, "NVRM: Xid (PCI:0000:3b:00): 79, pid=48213, name=python, GPU has fallen off the bus."
        )
    )
    recs.append(s.fluentbit_dmesg(bad, fault + 2, "NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus."))
    for rank, host in enumerate(hosts):
        if host != bad:
            recs += [_nccl_closed(host, rank, fault + 900 + 37 * i, "10.2.0.7") for i in range(12)]
            recs += [_ib_error(host, rank, fault + 1200 + 41 * i, "10.2.0.7") for i in range(3)]
            recs.append(_watchdog(host, rank, fault + 600 * S))
    end = fault + 610 * S
    recs.append(s.jobcomp(4101, t0, end, "FAILED", "gpu[001-016]", exit_code="1:0"))
    return Story(
        "xid79_one_of_sixteen",
        "Xid 79 on one of 16 nodes; NCCL noise on the 15 others",
        {
            "terminal_state": "fail",
            "sub_domain": "hardware",
            "responsible_nodes": [bad],
            "root_node": bad,
            "root_line": "79, pid=48213",
        },
        recs,
    )


@story
def cuda_oom_amid_nccl_noise(t0: int) -> Story:
    rng, hosts = random.Random(2), nodes("gpu", 8)
    fault = t0 + 1200 * S
    recs = healthy_noise(rng, hosts, t0, fault, job_id="4102")
    recs.append(
        s.vector_applog(
            "gpu005",
            fault,
            "[rank4]: torch.OutOfMemoryError: CUDA out of memory. Tried "
            "to allocate 2.00 GiB. GPU 4 has a total capacity of 79.11 GiB of which "
            "1.02 GiB is free.",
            4,
            "4102",
        )
    )
    for rank, host in enumerate(hosts):
        if host != "gpu005":
            recs += [_nccl_closed(host, rank, fault + 2000 + 50 * i, "10.2.0.5") for i in range(20)]
            recs.append(_watchdog(host, rank, fault + 600 * S))
    end = fault + 605 * S
    recs.append(s.jobcomp(4102, t0, end, "FAILED", "gpu[001-008]", exit_code="1:0"))
    return Story(
        "cuda_oom_amid_nccl_noise",
        "CUDA out of memory on one rank; NCCL errors everywhere else",
        {
            "terminal_state": "fail",
            "sub_domain": "user",
            "responsible_nodes": [],
            "root_node": "gpu005",
            "root_line": "CUDA out of memory",
        },
        recs,
    )


@story
def reboot_upstream_of_xid(t0: int) -> Story:
    rng, hosts = random.Random(3), nodes("dgx-a100-", 4)
    bad = hosts[2]
    boot = t0 + 120 * S
    recs = healthy_noise(rng, hosts, t0, t0 + 1800 * S)
    recs.append(
        s.fluentbit_dmesg(
            bad,
            boot,
            "Linux version 5.15.0-105-generic (buildd@lcy02-amd64-007) "
            "(gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0) #115-Ubuntu SMP",
            uptime_s=0.0,
        )
    )
    fault = t0 + 900 * S
    recs.append(
        s.fluentbit_dmesg(
            bad,
            fault,
            "NVRM: Xid (PCI:0000:b7:00): 48, pid=2231, name=python3, "
            "An uncorrectable double bit error (DBE) has been detected on GPU in the "
            "framebuffer at partition 4, subpartition 1.",
            uptime_s=780.0,
        )
    )
    recs.append(
        s.fluentbit_dmesg(
            bad,
            fault + 40,
            "NVRM: Xid (PCI:0000:b7:00): 154, GPU recovery action "
            "changed from 0x0 (None) to 0x1 (GPU Reset Required)",
            uptime_s=780.04,
        )
    )
    recs.append(
        s.vector_applog(bad, fault + 900, "RuntimeError: CUDA error: uncorrectable ECC error encountered", 2)
    )
    end = fault + 30 * S
    recs.append(s.jobcomp(4103, t0, end, "FAILED", "dgx-a100-[001-004]", exit_code="1:0"))
    return Story(
        "reboot_upstream_of_xid",
        "A node rebooted, then its GPU hit a double-bit ECC error",
        {
            "terminal_state": "fail",
            "sub_domain": "hardware",
            "responsible_nodes": [bad],
            "root_node": bad,
            "root_line": "): 48, pid=2231",
        },
        recs,
    )


@story
def nccl_invalid_nic_selection(t0: int) -> Story:
    rng, hosts = random.Random(4), nodes("gpu", 2)
    recs = healthy_noise(rng, hosts, t0, t0 + 30 * S)
    fault = t0 + 35 * S
    recs.append(
        s.vector_applog(
            "gpu001",
            fault,
            "gpu001:7712:7712 [0] transport/net_ib.cc:418 NCCL WARN NET/IB : No device found.",
            0,
        )
    )
    recs.append(
        s.vector_applog(
            "gpu001", fault + 5, "gpu001:7712:7712 [0] init.cc:1620 NCCL WARN Could not find NET with id 2", 0
        )
    )
    recs.append(
        s.vector_applog(
            "gpu001",
            fault + 9,
            "RuntimeError: NCCL error in: ../torch/csrc/distributed/"
            "c10d/ProcessGroupNCCL.cpp:1970, invalid usage (run with NCCL_DEBUG=WARN for "
            "details), NCCL version 2.21.5",
            0,
        )
    )
    end = fault + 20 * S
    recs.append(s.jobcomp(4104, t0, end, "FAILED", "gpu[001-002]", exit_code="1:0"))
    return Story(
        "nccl_invalid_nic_selection",
        "NCCL cannot use the NIC it was told to use",
        {
            "terminal_state": "fail",
            "sub_domain": "system_software",
            "root_node": "gpu001",
            "root_line": "Could not find NET with id 2",
        },
        recs,
    )


@story
def two_hardware_causes(t0: int) -> Story:
    rng, hosts = random.Random(5), nodes("gpu", 16)
    recs = healthy_noise(rng, hosts, t0, t0 + 2000 * S)
    recs.append(
        s.fluentbit_dmesg(
            "gpu003",
            t0 + 1500 * S,
            "NVRM: Xid (PCI:0000:18:00): 79, pid=911, name=python, GPU has fallen off the bus.",
        )
    )
    recs.append(
        s.fluentbit_dmesg(
            "gpu011",
            t0 + 1500 * S + 800,
            "NVRM: Xid (PCI:0000:9a:00): 95, pid=1201, name=python, Uncontained: FBHUB. RST: Yes, D-RST: No",
        )
    )
    for rank, host in enumerate(hosts):
        if host not in ("gpu003", "gpu011"):
            recs += [_nccl_closed(host, rank, t0 + 1501 * S + 30 * i, "10.2.0.3") for i in range(5)]
    end = t0 + 1520 * S
    recs.append(s.jobcomp(4105, t0, end, "FAILED", "gpu[001-016]", exit_code="1:0"))
    return Story(
        "two_hardware_causes",
        "Two GPUs on two nodes fail within a second",
        {
            "terminal_state": "fail",
            "sub_domain": "hardware",
            "responsible_nodes": ["gpu003", "gpu011"],
            "uncertainty_type": "multiple_nodes",
            "root_node": "gpu003",
        },
        recs,
    )


@story
def hardware_and_user_independent(t0: int) -> Story:
    rng, hosts = random.Random(6), nodes("gpu", 8)
    recs = healthy_noise(rng, hosts, t0, t0 + 900 * S, job_id="4106")
    recs.append(
        s.vector_applog(
            "gpu002",
            t0 + 900 * S,
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB",
            1,
            "4106",
        )
    )
    recs.append(
        s.fluentbit_dmesg(
            "gpu006",
            t0 + 901 * S,
            "NVRM: Xid (PCI:0000:ca:00): 79, pid=7771, name=python, GPU has fallen off the bus.",
        )
    )
    end = t0 + 960 * S
    recs.append(s.jobcomp(4106, t0, end, "FAILED", "gpu[001-008]", exit_code="1:0"))
    return Story(
        "hardware_and_user_independent",
        "A CUDA OOM and an Xid 79 on different nodes, a second apart",
        {
            "terminal_state": "fail",
            "sub_domain": "ambiguous",
            "responsible_nodes": ["gpu006"],
            "failure_domains": ["hardware", "user"],
            "uncertainty_type": "competing_domains",
        },
        recs,
    )


@story
def failed_without_evidence(t0: int) -> Story:
    rng, hosts = random.Random(7), nodes("cpu", 2)
    recs = healthy_noise(rng, hosts, t0, t0 + 300 * S)
    recs.append(s.jobcomp(4107, t0, t0 + 310 * S, "FAILED", "cpu[001-002]", exit_code="2:0"))
    return Story(
        "failed_without_evidence",
        "The job exited 2 and nothing in its logs says why",
        {
            "terminal_state": "fail",
            "sub_domain": "unattributed",
            "responsible_nodes": [],
            "uncertainty_type": "no_evidence",
        },
        recs,
    )


@story
def scancel_by_user(t0: int) -> Story:
    rng, hosts = random.Random(8), nodes("gpu", 4)
    recs = healthy_noise(rng, hosts, t0, t0 + 600 * S)
    cancel = t0 + 600 * S
    recs.append(
        s.raw_syslog(
            "slurmctl01", cancel, "slurmctld[1822]", "_slurm_rpc_kill_job: REQUEST_KILL_JOB JobId=4108 uid 1001"
        )
    )
    for host in hosts:
        recs.append(
            s.vector_applog(
                host,
                cancel + 400,
                f"slurmstepd: error: *** STEP 4108.0 ON {host} CANCELLED AT 2024-05-09T10:10:00 ***",
                0,
            )
        )
    recs.append(s.jobcomp(4108, t0, cancel + 2 * S, "CANCELLED", "gpu[001-004]", exit_code="0:15"))
    return Story(
        "scancel_by_user",
        "The user cancelled the job with scancel",
        {
            "terminal_state": "cancel",
            "sub_domain": "user",
            "responsible_nodes": [],
            "cancellation_actor": "uid 1001",
        },
        recs,
    )


@story
def time_limit(t0: int) -> Story:
    rng, hosts = random.Random(9), nodes("gpu", 2)
    end = t0 + 3600 * S
    recs = healthy_noise(rng, hosts, t0, end, every_s=60)
    recs.append(
        s.vector_applog(
            "gpu001",
            end,
            "slurmstepd: error: *** JOB 4109 ON gpu001 CANCELLED AT 2024-05-10T11:00:00 DUE TO TIME LIMIT ***",
            0,
        )
    )
    recs.append(s.jobcomp(4109, t0, end + S, "TIMEOUT", "gpu[001-002]", exit_code="0:15"))
    return Story(
        "time_limit",
        "The job ran into its time limit",
        {"terminal_state": "timeout", "sub_domain": "user", "responsible_nodes": []},
        recs,
    )


@story
def preemption(t0: int) -> Story:
    rng, hosts = random.Random(10), nodes("gpu", 4)
    end = t0 + 1200 * S
    recs = healthy_noise(rng, hosts, t0, end)
    recs.append(
        s.vector_applog(
            "gpu002",
            end,
            "slurmstepd: error: *** JOB 4110 ON gpu002 CANCELLED AT 2024-05-11T10:20:00 DUE TO PREEMPTION ***",
            1,
        )
    )
    recs.append(s.jobcomp(4110, t0, end + S, "PREEMPTED", "gpu[001-004]", exit_code="0:15"))
    return Story(
        "preemption",
        "A higher-priority job preempted this one",
        {
            "terminal_state": "cancel",
            "sub_domain": "infrastructure",
            "responsible_nodes": [],
            "cancellation_actor": "scheduler (preemption)",
        },
        recs,
    )


@story
def node_not_responding(t0: int) -> Story:
    rng, hosts = random.Random(11), nodes("gpu", 4)
    lost = t0 + 2400 * S
    recs = [
        r
        for r in healthy_noise(rng, hosts, t0, lost + 300 * S)
        if not (
            r["value"].get("host") == "gpu004" if isinstance(r["value"], dict) else " gpu004 " in r["value"]
        )
        or r["timestamp"] < lost
    ]
    recs.append(
        s.raw_syslog(
            "slurmctl01", lost + 300 * S, "slurmctld[1822]", "error: Nodes gpu004 not responding, setting DOWN"
        )
    )
    recs.append(
        s.raw_syslog(
            "slurmctl01", lost + 301 * S, "slurmctld[1822]", "Killing JobId=4111 on failed node gpu004"
        )
    )
    recs.append(
        s.jobcomp(4111, t0, lost + 302 * S, "NODE_FAIL", "gpu[001-004]", exit_code="0:9", failed_node="gpu004")
    )
    return Story(
        "node_not_responding",
        "A node stopped answering slurmctld; the job ended NODE_FAIL",
        {"terminal_state": "fail", "sub_domain": "infrastructure", "responsible_nodes": ["gpu004"]},
        recs,
    )


@story
def out_of_order_and_late_lines(t0: int) -> Story:
    rng, hosts = random.Random(12), nodes("gpu", 4)
    fault = t0 + 700 * S
    recs = healthy_noise(rng, hosts, t0, fault + 20 * S)
    end = fault + 5 * S
    recs.append(s.jobcomp(4112, t0, end, "FAILED", "gpu[001-004]", exit_code="1:0"))
    xid = s.fluentbit_dmesg(
        "gpu002",
        fault,
        "NVRM: Xid (PCI:0000:41:00): 95, pid=3311, name=python, Uncontained: HBM. RST: Yes, D-RST: No",
    )
    xid["timestamp"] = end + 15 * S  # the shipper on gpu002 was 20 s behind: it arrives after the job end
    recs.append(xid)
    for rank, host in enumerate(hosts):
        if host != "gpu002":
            late = _nccl_closed(host, rank, fault + 2 * S, "10.2.0.2")
            late["timestamp"] = end + 10 * S
            recs.append(late)
    return Story(
        "out_of_order_and_late_lines",
        "The Xid line arrives after the job-end record, within the grace",
        {
            "terminal_state": "fail",
            "sub_domain": "hardware",
            "responsible_nodes": ["gpu002"],
            "root_line": "95, pid=3311",
        },
        recs,
    )


@story
def success(t0: int) -> Story:
    rng, hosts = random.Random(13), nodes("gpu", 4)
    end = t0 + 1800 * S
    recs = healthy_noise(rng, hosts, t0, end)
    recs.append(s.vector_applog("gpu001", end - S, "[after training is done] saving final checkpoint", 0))
    recs.append(s.jobcomp(4113, t0, end, "COMPLETED", "gpu[001-004]", exit_code="0:0"))
    return Story(
        "success",
        "The job completed",
        {"terminal_state": "success", "sub_domain": None, "responsible_nodes": []},
        recs,
    )


@story
def k8s_jobset_oomkilled(t0: int) -> Story:
    labels = {"jobset.sigs.k8s.io/jobset-name": "bert-ft", "batch.kubernetes.io/job-name": "bert-ft-workers-0"}
    recs = []
    for i, host in enumerate(["gpu-node-7", "gpu-node-8"]):
        recs.append(
            s.k8s_event(
                "Scheduled",
                "Pod",
                "ml",
                f"bert-ft-workers-0-{i}",
                f"Successfully assigned ml/bert-ft-workers-0-{i} to {host}",
                t0 + i * S,
                component="default-scheduler",
                labels=labels,
                event_type="Normal",
            )
        )
    rng = random.Random(14)
    recs += healthy_noise(rng, ["gpu-node-7", "gpu-node-8"], t0 + 5 * S, t0 + 600 * S)
    recs.append(
        s.k8s_event(
            "OOMKilled",
            "Pod",
            "ml",
            "bert-ft-workers-0-1",
            "Container trainer was OOM killed: memory limit 64Gi exceeded",
            t0 + 610 * S,
            host="gpu-node-8",
            labels=labels,
        )
    )
    recs.append(
        s.k8s_event(
            "BackoffLimitExceeded",
            "Job",
            "ml",
            "bert-ft-workers-0",
            "Job has reached the specified backoff limit",
            t0 + 640 * S,
            component="job-controller",
            labels=labels,
        )
    )
    return Story(
        "k8s_jobset_oomkilled",
        "A JobSet pod was OOM-killed by its memory limit",
        {"terminal_state": "fail", "sub_domain": "user", "responsible_nodes": [], "root_node": "gpu-node-8"},
        recs,
    )


@story
def xid_with_companions(t0: int) -> Story:
    rng, hosts = random.Random(15), nodes("gpu", 2)
    fault = t0 + 400 * S
    recs = healthy_noise(rng, hosts, t0, fault)
    recs.append(
        s.fluentbit_dmesg(
            "gpu002",
            fault,
            "NVRM: Xid (PCI:0000:c1:00): 94, pid=5120, name=python, Contained: SM (0x1). RST: No, D-RST: No",
        )
    )
    recs.append(
        s.fluentbit_dmesg(
            "gpu002",
            fault + 30,
            "NVRM: Xid (PCI:0000:c1:00): 154, GPU recovery action "
            "changed from 0x0 (None) to 0x2 (Node Reboot Required)",
        )
    )
    recs.append(
        s.fluentbit_dmesg(
            "gpu002", fault + 900, "NVRM: Xid (PCI:0000:c1:00): 45, pid=5120, name=python, Ch 00000010"
        )
    )
    recs.append(
        s.vector_applog(
            "gpu002", fault + 950, "RuntimeError: CUDA error: uncorrectable ECC error encountered", 1
        )
    )
    end = fault + 10 * S
    recs.append(s.jobcomp(4115, t0, end, "FAILED", "gpu[001-002]", exit_code="1:0"))
    return Story(
        "xid_with_companions",
        "Xid 94 with its companions 154 and 45",
        {
            "terminal_state": "fail",
            "sub_domain": "hardware",
            "responsible_nodes": ["gpu002"],
            "root_line": "94, pid=5120",
        },
        recs,
    )


@story
def host_memory_oom_kill(t0: int) -> Story:
    rng, hosts = random.Random(16), nodes("gpu", 2)
    fault = t0 + 800 * S
    recs = healthy_noise(rng, hosts, t0, fault)
    recs.append(
        s.fluentbit_dmesg(
            "gpu001",
            fault,
            "Memory cgroup out of memory: Killed process 88123 (python) "
            "total-vm:912341234kB, anon-rss:501234123kB, file-rss:0kB, shmem-rss:0kB, "
            "UID:1001 pgtables:1234kB oom_score_adj:0",
        )
    )
    recs.append(
        s.vector_applog(
            "gpu001",
            fault + 2 * S,
            "slurmstepd: error: Detected 1 oom_kill event in "
            "StepId=4116.0. Some of the step tasks have been OOM Killed.",
            0,
        )
    )
    recs.append(s.vector_applog("gpu001", fault + 2 * S + 10, "srun: error: gpu001: task 0: Out Of Memory", 0))
    recs.append(s.jobcomp(4116, t0, fault + 3 * S, "OUT_OF_MEMORY", "gpu[001-002]", exit_code="0:125"))
    return Story(
        "host_memory_oom_kill",
        "The job's cgroup ran out of host memory",
        {"terminal_state": "fail", "sub_domain": "user", "responsible_nodes": []},
        recs,
    )


@story
def lustre_eviction(t0: int) -> Story:
    rng, hosts = random.Random(17), nodes("gpu", 4)
    fault = t0 + 1000 * S
    recs = healthy_noise(rng, hosts, t0, fault)
    for host in hosts:
        recs.append(
            s.fluentbit_syslog(
                host,
                fault + 100,
                "kernel",
                "LustreError: 11-0: lustre-OST0004-osc-"
                "ffff9a0c3b6c8000: operation ost_write to node 10.10.0.14@o2ib failed: "
                "rc = -107",
            )
        )
        recs.append(
            s.fluentbit_syslog(
                host,
                fault + 200,
                "kernel",
                "Lustre: lustre-OST0004-osc-ffff9a0c3b6c8000"
                ": Connection to lustre-OST0004 (at 10.10.0.14@o2ib) was lost; in progress "
                "operations using this service will wait for recovery to complete",
            )
        )
    recs.append(
        s.vector_applog(
            "gpu003",
            fault + 300 * S,
            "OSError: [Errno 5] Input/output error: '/lustre/ckpt/step_40000/model.pt'",
            2,
        )
    )
    recs.append(s.jobcomp(4117, t0, fault + 310 * S, "FAILED", "gpu[001-004]", exit_code="1:0"))
    return Story(
        "lustre_eviction",
        "Every node lost its Lustre OST; the checkpoint write failed",
        {"terminal_state": "fail", "sub_domain": "infrastructure"},
        recs,
    )


@story
def canonical_scheduler_nic_fatal(t0: int) -> Story:
    rng, hosts = random.Random(18), nodes("h100-", 2)
    recs = [
        s.canonical(
            "job_start", "kueue:ml/gpt-sft-7", t0, nodes=hosts, user="bob", name="gpt-sft", scheduler="kueue"
        )
    ]
    recs += healthy_noise(rng, hosts, t0, t0 + 500 * S)
    fault = t0 + 500 * S
    recs.append(
        s.raw_syslog(
            "h100-002",
            fault,
            "kernel",
            "mlx5_core 0000:ab:00.0: mlx5_health_check_fatal_"
            "sensors:152:(pid 0): device's health compromised - reached miss count",
            pri=3,
        )
    )
    recs.append(_ib_error("h100-001", 0, fault + 3 * S, "10.2.1.2"))
    recs.append(
        s.canonical(
            "job_end",
            "kueue:ml/gpt-sft-7",
            fault + 60 * S,
            nodes=hosts,
            state="FAILED",
            exit_code=1,
            user="bob",
            scheduler="kueue",
        )
    )
    return Story(
        "canonical_scheduler_nic_fatal",
        "A NIC's firmware health check failed; peers saw IB errors",
        {"terminal_state": "fail", "sub_domain": "hardware", "responsible_nodes": ["h100-002"]},
        recs,
    )


@story
def malformed_records_are_dead_lettered(t0: int) -> Story:
    rng, hosts = random.Random(19), nodes("gpu", 2)
    recs = healthy_noise(rng, hosts, t0, t0 + 300 * S)
    recs.append(
        {
            "topic": "logs.dmesg",
            "value": "[ 1234.5678] NVRM: loading module",
            "key": None,
            "timestamp": t0 + 10 * S,
        }
    )  # a raw dmesg line with no host anywhere
    recs.append(
        {"topic": "events.scheduler", "value": {"hello": "world"}, "key": None, "timestamp": t0 + 11 * S}
    )
    recs.append(
        {
            "topic": "events.scheduler",
            "value": {"jobid": 4119, "state": "FAILED", "nodes": "gpu[001-", "@start": "x", "@end": "y"},
            "key": None,
            "timestamp": t0 + 12 * S,
        }
    )
    recs.append(s.jobcomp(4119, t0, t0 + 310 * S, "FAILED", "gpu[001-002]", exit_code="2:0"))
    return Story(
        "malformed_records_are_dead_lettered",
        "Bad records mixed in: dead-lettered, verdict unharmed",
        {"terminal_state": "fail", "sub_domain": "unattributed", "dead_letters": 3},
        recs,
    )
