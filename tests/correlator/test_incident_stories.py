"""Multi-node failure stories modelled on real, publicly described incidents (issue 6, section 2).

Each story rebuilds one published incident as a timeline on the bundled rules: the fault on the node
that had it, in the wording of the versions involved, the echo on its peers (watchdog timeouts, closed
connections, ``ncclRemoteError``, Slurm's step kill) and the scheduler's terminal record. The asserts
are the verdict a careful SRE would give from those logs alone: terminal state, domain, responsible
node(s) and root symptom. The source of each story is in its docstring. Times are seconds after T0.
"""

from __future__ import annotations

from streams.normalize.synth import job_end_line
from streams.records import JobEvent, LogLine
from tests.correlator.conftest import at, roles
from tests.correlator.conftest import verdict_of as timeline_verdict

NODES = tuple(f"gpu{n:03d}" for n in range(1, 17))
#: PyTorch 1.10-1.12 wording (OPT, BLOOM era) and 2.2+ wording of the same watchdog timeout
WATCHDOG_OLD = (
    "[E ProcessGroupNCCL.cpp:587] [Rank {rank}] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=48811, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800451 milliseconds "
    "before timing out."
)
WATCHDOG_NEW = (
    "[rank{rank}]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank {rank}] Watchdog caught collective "
    "operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, NumelOut=466119168, "
    "Timeout(ms)=600000) ran for 600060 milliseconds before timing out."
)
REMOTE_ERROR = (
    "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, "
    "remote process exited or there was a network error, NCCL version 2.21.5"
)
CHILD_FAILED = "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:"


def line(text: str, host: str, seconds: float, source: str = "applog") -> LogLine:
    return LogLine(text, host, at(seconds), source, f"incident:{host}:{seconds}")


def start(job: str, nodes=NODES, user: str = "alice") -> JobEvent:
    return JobEvent("job_start", job, at(0), nodes=tuple(nodes), user=user)


def end(job: str, seconds: float, state: str, nodes=NODES, user: str = "alice", **extra) -> JobEvent:
    return JobEvent(
        "job_end", job, at(seconds), nodes=tuple(nodes), state=state, start_ms=at(0), user=user, **extra
    )


def nccl(host: str, where: str, text: str) -> str:
    return f"{host}:2211:2290 [3] {where} NCCL WARN {text}"


def everywhere_but(faulty: str, seconds: float, text: str, nodes=NODES) -> list[LogLine]:
    """The same echo on every other node, one rank each, spread over a second."""
    return [
        line(text.format(rank=8 * k, host=n), n, seconds + k * 0.05) for k, n in enumerate(nodes) if n != faulty
    ]


def progress(until: float, host: str = "gpu001", step_s: float = 105) -> list[LogLine]:
    """Megatron-DeepSpeed's iteration lines (BLOOM's wording): steady, healthy progress."""
    text = (
        "[default7]: iteration {n:>8}/  115311 | consumed samples:     9841584 | "
        "elapsed time per iteration (s): 105.22 | learning rate: 5.969E-05 | global batch size:  2048 | "
        "lm loss: 2.463556E+00 | grad norm: 0.174 "
        "| number of skipped iterations:   0 | number of nan iterations:   0 | TFLOPs: 149.02 |"
    )
    return [line(text.format(n=12000 + k), host, k * step_s) for k in range(1, int(until // step_s))]


def record_line(event: JobEvent) -> LogLine:
    """The line the Slurm jobcomp normalizer synthesizes beside the job-end event (streams/normalize)."""
    text = job_end_line(
        "slurm", event.workload_id or "-", event.state or "-", event.exit_code, event.signal,
        event.failed_node, event.user, event.actor,
    )  # fmt: skip
    return LogLine(text, event.failed_node, event.time_ms, "scheduler", "jobcomp", event.workload_id)


def verdict_of(engine, lines: list[LogLine], events: list[JobEvent]):
    """Feed the story in event-time order, each job end with its synthesized scheduler line, as live."""
    slurm_ends = [e for e in events if e.kind == "job_end" and not (e.workload_id or "").startswith("k8s:")]
    return timeline_verdict(engine, [*lines, *map(record_line, slurm_ends)], events, tick_s=200_000)


def outcome(verdict) -> tuple[str, str | None, list[str]]:
    return verdict.terminal_state, verdict.sub_domain, sorted(verdict.responsible_nodes)


def test_opt175b_uncorrectable_ecc_on_one_gpu_blames_that_node_not_the_watchdog_timeouts_everywhere(engine):
    """OPT-175B logbook: restarts 'all related to hardware issues (... ECC errors ...)'; an uncorrectable ECC
    error on one GPU stalls the all-reduce and every other rank's watchdog fires 30 minutes later.
    https://github.com/facebookresearch/metaseq/blob/main/projects/OPT/chronicles/10_percent_update.md
    """
    pci = "PCI:0000:47:00"
    lines = [
        line(
            f"NVRM: Xid ({pci}): 48, pid=2711, name=python, Ch 00000000, DBE (double bit error) ECC error",
            "gpu012",
            3000,
            "dmesg",
        ),
        line(
            f"NVRM: Xid ({pci}): 63, pid=2711, name=python, Ch 00000000, Row Remapper: New row marked for "
            "remapping, reset gpu to activate.",
            "gpu012",
            3000.2,
            "dmesg",
        ),
        line("RuntimeError: CUDA error: uncorrectable ECC error encountered", "gpu012", 3001),
        *everywhere_but("gpu012", 4801, WATCHDOG_OLD),
    ]
    verdict = verdict_of(engine, lines, [start("9101"), end("9101", 4830, "FAILED")])
    assert outcome(verdict) == ("fail", "hardware", ["gpu012"])
    assert verdict.root_symptom.rule_id == "gpu.xid.48" and verdict.root_symptom.node == "gpu012"
    assert roles(verdict)["nccl_collective_timeout"] == "downstream"
    assert verdict.uncertainty_type is None


def test_llama3_hbm3_contained_ecc_error_on_one_gpu_with_peers_seeing_remote_errors_is_hardware_there(engine):
    """Llama 3 paper, Table 5: 'GPU HBM3 Memory' caused 17.2 % of the 419 unexpected interruptions; an HBM
    error on an H100 is Xid 94/95 plus a row remap, and the other ranks die on ncclRemoteError.
    https://arxiv.org/abs/2407.21783 (section 3.3.4, Table 5)
    """
    pci = "PCI:0000:9d:00"
    lines = [
        line(
            f"NVRM: Xid ({pci}): 95, pid=90122, name=python, Ch 00000008, Uncontained ECC error.",
            "gpu005",
            700,
            "dmesg",
        ),
        line(
            f"NVRM: Xid ({pci}): 63, pid=90122, name=python, Ch 00000000, Row Remapper: New row marked for "
            "remapping, reset gpu to activate.",
            "gpu005",
            700.1,
            "dmesg",
        ),
        line(f"NVRM: Xid ({pci}): 45, pid=90122, name=python, Ch 00000010", "gpu005", 700.5, "dmesg"),
        *everywhere_but("gpu005", 702, REMOTE_ERROR),
        *everywhere_but("gpu005", 703, CHILD_FAILED),
    ]
    verdict = verdict_of(engine, lines, [start("9102"), end("9102", 760, "FAILED")])
    assert outcome(verdict) == ("fail", "hardware", ["gpu005"])
    assert verdict.root_symptom.node == "gpu005"
    assert verdict.root_symptom.rule_id == "gpu.xid.95"


def test_ib_link_down_on_one_hca_blames_that_node_not_the_peers_reporting_retry_exceeded(engine):
    """NVIDIA/nccl#1405: 'NCCL failure caused by NET/IB completion error' (status=12, vendor err 129,
    NCCL 2.19+ plugin wording) on the ranks talking to one peer; Llama 3's Table 5 puts 'Network Switch/Cable'
    at 8.4 % of interruptions. The peer's own HCA logs the link going down first.
    https://github.com/NVIDIA/nccl/issues/1405
    """
    oob = [
        line(f"{n}:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.216.210.{k + 1}<0>", n, 5)
        for k, n in enumerate(NODES)
    ]
    error = (
        "NET/IB : Got completion from peer 10.216.210.9<54862> with status=12 opcode=0 len=0 "
        "vendor err 129 (Recv) "
        "localGid fd00:1148:9000:5000:4:200:3:ff22 remoteGidsfd00:1148:9000:5000:4:200:3:ff1f"
    )
    lines = [
        *oob,
        line("mlx5_core 0000:c1:00.0 ibp193s0: Link down", "gpu009", 900, "dmesg"),
        line("mlx5_core 0000:c1:00.0 ibp193s0: Link up", "gpu009", 904, "dmesg"),
        line("mlx5_core 0000:c1:00.0 ibp193s0: Link down", "gpu009", 906, "dmesg"),
        *[line(nccl(n, "ib_plugin.c:1615", error), n, 908 + k * 0.1) for k, n in enumerate(NODES[:4])],
        *everywhere_but("gpu009", 910, CHILD_FAILED),
    ]
    verdict = verdict_of(engine, lines, [start("9103"), end("9103", 960, "FAILED")])
    terminal, domain, nodes = outcome(verdict)
    assert terminal == "fail" and domain in ("infrastructure", "hardware")
    assert nodes == ["gpu009"]
    assert verdict.root_symptom.node == "gpu009"
    assert roles(verdict)["nccl_ib_completion_error"] == "downstream"


def test_a_node_that_stops_responding_ends_node_fail_and_its_echoing_peers_are_never_blamed(engine):
    """ArjunaCluster/ArjunaUsers#51: a compute node 'that has the tendency to shut down under load' went
    down, its jobs were killed (NODE_FAIL); the controller logs the node, the survivors' ranks see their
    connections to it close and slurmstepd kills the step 'DUE TO NODE FAILURE'.
    https://github.com/ArjunaCluster/ArjunaUsers/issues/51
    """
    closed = "socketProgress: Connection closed by remote peer gpu011<38352>"
    lines = [
        *everywhere_but("gpu011", 1200, nccl("{host}", "misc/socket.cc:49", closed)),
        line("slurmctld[2201]: error: Nodes gpu011 not responding", "slurmctl01", 1290, "syslog"),
        line("slurmctld[2201]: Killing JobId=9104 on failed node gpu011", "slurmctl01", 1300, "syslog"),
        line(
            "slurmstepd: error: *** JOB 9104 ON gpu001 CANCELLED AT 2024-05-01T10:21:40 DUE TO NODE FAILURE, "
            "SEE SLURMCTLD LOG FOR DETAILS ***",
            "gpu001",
            1300,
        ),
        line("srun: error: Node failure on gpu011", "gpu001", 1300.5),
    ]
    verdict = verdict_of(engine, lines, [start("9104"), end("9104", 1301, "NODE_FAIL")])
    terminal, domain, nodes = outcome(verdict)
    assert terminal == "fail"
    assert domain in ("infrastructure", "hardware")
    assert nodes == ["gpu011"]
    assert roles(verdict)["nccl_remote_peer_lost"] == "downstream"


def test_a_lustre_outage_on_every_node_is_infrastructure_and_blames_no_node(engine):
    """SemiAnalysisAI/InferenceX#2892: compute-node Lustre clients 'evicted or stuck reconnecting' on every
    node of a B300 cluster, jobs hung on shared-file I/O; here the OST connection is lost on all nodes at
    a checkpoint, the clients are evicted and the hung step's watchdogs fire.
    https://github.com/SemiAnalysisAI/InferenceX/pull/2892
    """
    osc = "scratch-OST0003-osc-ffff9a1c2e5e8000"
    lost = (
        f"Lustre: {osc}: Connection to scratch-OST0003 (at 10.1.1.3@o2ib) was lost; "
        "in progress operations using "
        "this service will wait for recovery to complete"
    )
    evicted = (
        f"LustreError: 167-0: {osc}: This client was evicted by scratch-OST0003; in progress operations using "
        "this service will fail."
    )
    lines = [
        *everywhere_but("", 2000, lost),
        *everywhere_but("", 2100, "INFO: task python:22911 blocked for more than 120 seconds."),
        *everywhere_but("", 2160, evicted),
        *everywhere_but("", 3800, WATCHDOG_NEW),
    ]
    for ln in lines:
        ln.source = "dmesg" if "Lustre" in ln.text or "blocked" in ln.text else ln.source
    verdict = verdict_of(engine, lines, [start("9105"), end("9105", 3830, "FAILED")])
    assert outcome(verdict) == ("fail", "infrastructure", [])
    assert verdict.root_symptom.rule_id.startswith("storage.lustre.")


def test_an_illegal_memory_access_on_every_rank_with_mmu_faults_is_the_users_code(engine):
    """bytedance/flux#40 '[BUG] Illegal memory with multi-node': every rank's watchdog terminates with
    'CUDA error: an illegal memory access was encountered'; the driver logs Xid 31 MMU faults (as in
    pytorch/pytorch#21819) and no ECC, PCIe or NVLink error.
    https://github.com/bytedance/flux/issues/40
    """
    watchdog = (
        "[rank{rank}]:[E907 22:34:22.823452114 ProcessGroupNCCL.cpp:1515] [PG 0 (default_pg) "
        "Rank {rank}] Process "
        "group watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered"
    )
    mmu = (
        "NVRM: Xid (PCI:0000:cb:00): 31, pid=15342, name=python, Ch 00000010, intr 00000000. MMU Fault: ENGINE "
        "GRAPHICS GPCCLIENT_T1_11 faulted @ 0x7f95_4afff000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ"
    )
    nodes = NODES[:4]
    lines = [
        *[line(mmu, n, 300 + k * 0.2, "dmesg") for k, n in enumerate(nodes)],
        *everywhere_but("", 301, watchdog, nodes),
        *everywhere_but("", 302, CHILD_FAILED, nodes),
    ]
    events = [start("9106", nodes), end("9106", 330, "FAILED", nodes)]
    verdict = verdict_of(engine, lines, events)
    assert outcome(verdict) == ("fail", "user", [])


def test_a_nan_loss_that_stops_the_run_is_the_users_and_its_teardown_is_no_cause(engine):
    """OPT-175B logbook, 11.xx lineage: 'grad norm explosions / loss explosions / nans after a couple hundred
    updates after each restart'; the trainer stops on the NaN loss and the other ranks lose their peers.
    https://github.com/facebookresearch/metaseq/blob/main/projects/OPT/chronicles/10_percent_update.md
    """
    lines = [
        *progress(1000),
        line(
            "Exception: Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.",
            "gpu001",
            1050,
        ),
        *everywhere_but("gpu001", 1052, REMOTE_ERROR),
    ]
    verdict = verdict_of(engine, lines, [start("9107"), end("9107", 1080, "FAILED")])
    assert outcome(verdict) == ("fail", "user", [])
    assert verdict.root_symptom.rule_id == "app.train.nan-loss"


def test_a_cuda_oom_on_one_rank_is_the_users_and_the_remote_errors_on_its_peers_are_echoes(engine):
    """hiyouga/LlamaFactory#7396-style multi-node fine-tune: one rank runs out of GPU memory on a long
    batch, every other rank fails with 'remote process exited or there was a network error'.
    https://github.com/hiyouga/LlamaFactory/issues/7396
    """
    oom = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.91 GiB. GPU 5 has a total capacity of "
        "79.14 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this process has "
        "78.11 GiB memory in use."
    )
    lines = [line(oom, "gpu004", 500), *everywhere_but("gpu004", 501, REMOTE_ERROR)]
    verdict = verdict_of(engine, lines, [start("9108"), end("9108", 540, "FAILED")])
    assert outcome(verdict) == ("fail", "user", [])
    assert verdict.root_symptom.node == "gpu004"


def test_a_collective_timeout_everywhere_with_no_fault_anywhere_is_ambiguous_never_hardware(engine):
    """hiyouga/LlamaFactory#7396: 'Watchdog caught collective operation timeout ... ran for 600060
    milliseconds' on every rank and nothing else: no Xid, no link, no storage error. The logs cannot say
    which node hung; nobody may be drained for it.
    https://github.com/hiyouga/LlamaFactory/issues/7396
    """
    lines = [*progress(1200), *everywhere_but("", 1800, WATCHDOG_NEW), *everywhere_but("", 1801, CHILD_FAILED)]
    verdict = verdict_of(engine, lines, [start("9109"), end("9109", 1830, "FAILED")])
    terminal, domain, nodes = outcome(verdict)
    assert terminal == "fail"
    assert domain in ("ambiguous", "unattributed")
    assert nodes == []
    assert verdict.uncertainty_type in ("secondary_only", "no_evidence")


def test_a_gpu_fallen_off_the_bus_after_a_fatal_aer_blames_that_node_not_its_nccl_peers(engine):
    """rwth-i6/returnn#1486: training hangs, `nvidia-smi` answers 'Unable to determine the device handle for
    GPU0000:03:00.0: Unknown Error' and dmesg shows PCIe AER errors on the GPU's root port; with the
    uncorrected error the GPU drops off the bus (Xid 79) and the job's other nodes see ncclRemoteError.
    https://github.com/rwth-i6/returnn/issues/1486
    """
    lines = [
        line(
            "pcieport 0000:00:03.0: AER: Uncorrected (Fatal) error received: 0000:00:03.0",
            "gpu014",
            400,
            "dmesg",
        ),
        line("NVRM: GPU 0000:03:00.0: GPU has fallen off the bus.", "gpu014", 400.3, "dmesg"),
        line(
            "NVRM: Xid (PCI:0000:03:00): 79, pid=30211, name=python, GPU has fallen off the bus.",
            "gpu014",
            400.3,
            "dmesg",
        ),
        line(
            "Unable to determine the device handle for GPU0000:03:00.0: Unknown Error", "gpu014", 430, "syslog"
        ),
        *everywhere_but(
            "gpu014",
            402,
            "ncclRemoteError: A call failed possibly due to a network error or a "
            "remote process exiting prematurely.",
        ),
    ]
    verdict = verdict_of(engine, lines, [start("9110"), end("9110", 460, "FAILED")])
    assert outcome(verdict) == ("fail", "hardware", ["gpu014"])
    assert verdict.root_symptom.node == "gpu014"


def test_a_critical_temperature_shutdown_of_one_node_is_hardware_there_and_the_node_loss_follows(engine):
    """Llama 3 paper, Table 5: 'GPU thermal interface + sensor' and 'Power supply' interruptions; a node that
    reaches critical temperature powers off, slurmctld loses it and the job ends NODE_FAIL; the jobcomp
    record names no failed node, so its NODE_FAIL line belongs to no node and still follows the fault.
    https://arxiv.org/abs/2407.21783 (section 3.3.4, Table 5)
    """
    closed = "socketProgress: Connection closed by remote peer gpu006<38352>"
    lines = [
        line(
            "CPU12: Core temperature above threshold, cpu clock throttled (total events = 31442)",
            "gpu006",
            1500,
            "dmesg",
        ),
        line("critical temperature reached (105 C), shutting down", "gpu006", 1530, "dmesg"),
        *everywhere_but("gpu006", 1531, nccl("{host}", "misc/socket.cc:49", closed)),
        line("slurmctld[2201]: error: Nodes gpu006 not responding", "slurmctl01", 1620, "syslog"),
        line("slurmctld[2201]: Killing JobId=9111 on failed node gpu006", "slurmctl01", 1630, "syslog"),
    ]
    verdict = verdict_of(engine, lines, [start("9111"), end("9111", 1631, "NODE_FAIL")])
    assert outcome(verdict) == ("fail", "hardware", ["gpu006"])
    assert verdict.root_symptom.rule_id == "kernel.thermal.critical"


def test_a_worker_pod_evicted_for_ephemeral_storage_is_infrastructure_on_its_node(engine):
    """kubernetes/kubernetes#91600: 'The node was low on resource: ephemeral-storage' evicts a pod that used
    34 MiB (it did not fill the disk); here one worker of a 4-node PyTorchJob, the others die on
    'remote process exited or there was a network error'.
    https://github.com/kubernetes/kubernetes/issues/91600
    """
    nodes = ("gpu-node-10", "gpu-node-11", "gpu-node-12", "gpu-node-13")
    evicted = (
        "k8s reason=Evicted kind=Pod object=ml/llm-worker-2 node=gpu-node-12 "
        "message=The node was low on resource: "
        "ephemeral-storage. Container pytorch was using 34260Ki, which exceeds its request of 0."
    )
    lines = [line(evicted, "gpu-node-12", 600, "k8s"), *everywhere_but("gpu-node-12", 603, REMOTE_ERROR, nodes)]
    events = [start("k8s:ml/llm", nodes), end("k8s:ml/llm", 640, "FAILED", nodes)]
    verdict = verdict_of(engine, lines, events)
    assert outcome(verdict) == ("fail", "infrastructure", ["gpu-node-12"])


def test_a_hang_at_eval_with_no_error_ended_by_the_owners_scancel_is_the_users_cancel(engine):
    """BLOOM-176B chronicles, 2022-04-30 'hanging at eval': a DataLoader deadlock left every GPU spinning
    with no NCCL or distributed timeout; the owner cancelled the job by hand. No node is at fault.
    https://github.com/bigscience-workshop/bigscience/blob/master/train/tr11-176B-ml/chronicles.md
    """
    kill = "slurmstepd: error: *** JOB 9113 ON gpu001 CANCELLED AT 2024-05-01T13:20:00 ***"
    lines = [*progress(1000), line(kill, "gpu001", 12000)]
    verdict = verdict_of(engine, lines, [start("9113"), end("9113", 12030, "CANCELLED")])
    assert outcome(verdict) == ("cancel", "user", [])
    assert verdict.cancellation_actor == "alice"


def test_bloom_gpu_crash_with_only_a_cuda_unknown_error_never_blames_an_echoing_peer(engine):
    """BLOOM-176B chronicles, 2022-03-21: 'One of the GPUs crashed' with only 'CUDA error: unknown error'
    from the rank's NCCL watchdog in the job log ('every week or so we have hardware issues where one of
    the gpus dies'); the other ranks lose their peer.
    https://github.com/bigscience-workshop/bigscience/blob/master/train/tr11-176B-ml/chronicles.md
    """
    lines = [
        line("[default3]:terminate called after throwing an instance of 'c10::CUDAError'", "gpu021", 800),
        line("[default3]:  what():  CUDA error: unknown error", "gpu021", 800),
        *everywhere_but("gpu021", 802, REMOTE_ERROR, (*NODES, "gpu021")),
    ]
    nodes = (*NODES, "gpu021")
    verdict = verdict_of(engine, lines, [start("9114", nodes), end("9114", 860, "FAILED", nodes)])
    terminal, domain, responsible = outcome(verdict)
    assert terminal == "fail"
    assert domain != "user"
    assert set(responsible) <= {"gpu021"}


def test_an_nvswitch_error_then_xid62_and_an_xid45_burst_on_one_node_blames_that_node(engine):
    """NVIDIA/open-gpu-kernel-modules#446: on an 8x A100 SXM4 node the NVSwitch logs 'SXid (PCI:..): 24007,
    Severity 1 Engine instance 12 ...' (severity 1 is NVSWITCH_ERROR_SEVERITY_FATAL), then Xid 62 and a
    burst of Xid 45 as the driver tears the channels down; here one node of a 4-node job. The SXid
    error-log dump lines alone are context for the rules (the corpus labels them an echo of the
    primary SXid print); Xid 62 is the node's own strong fault and the Xid 45s are its consequence.
    https://github.com/NVIDIA/open-gpu-kernel-modules/issues/446
    """
    nodes = NODES[:4]
    dump = "nvidia-nvswitch1: SXid (PCI:0000:aa:00.0): 24007, {}"
    lines = [
        line(dump.format("Severity 1 Engine instance 12 Sub-engine instance 00"), "gpu003", 900, "dmesg"),
        line(
            dump.format(
                "Data {0x10000000, 0x10008100, 0x10000000, 0x10008100, 0x00000000, 0x00000000, "
                "0x00000000, 0x00000000, 0x00000000}"
            ),
            "gpu003",
            900,
            "dmesg",
        ),
        line(
            "NVRM: Xid (PCI:0000:48:00): 62, 00002740 00002b08 00001126 0000117a 0000279f 0002a91a 00000011 "
            "00000000",
            "gpu003",
            900.05,
            "dmesg",
        ),
        *[
            line(
                f"NVRM: Xid (PCI:0000:48:00): 45, pid=22884, name=python, channel 0x0000000{c}",
                "gpu003",
                900.1,
                "dmesg",
            )
            for c in "abcd"
        ],
        *everywhere_but("gpu003", 903, REMOTE_ERROR, nodes),
    ]
    verdict = verdict_of(engine, lines, [start("9115", nodes), end("9115", 940, "FAILED", nodes)])
    assert outcome(verdict) == ("fail", "hardware", ["gpu003"])
    assert verdict.root_symptom.node == "gpu003"
    assert roles(verdict)["gpu_preemptive_cleanup"] == "downstream"


def test_a_fatal_nvlink5_xid_on_one_gb200_node_with_contained_errors_in_its_ranks_is_hardware_there(engine):
    """NVIDIA/open-gpu-kernel-modules#1150: 'Xid 149' (NVLink NETIR) on one node followed by Xid 45 'caused
    by previous Xid 149'; its own ranks fail with 'Invalid access of peer GPU memory over nvlink or a
    hardware error' and the job's other nodes see their peers exit.
    https://github.com/NVIDIA/open-gpu-kernel-modules/issues/1150
    """
    contained = (
        "torch.AcceleratorError: CUDA error: Invalid access of peer GPU memory over nvlink or a hardware error"
    )
    lines = [
        line(
            "NVRM: Xid (PCI:0019:01:00): 149, NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000 0x00000000 "
            "0x00000000 0x00000000 0x00000000)",
            "gpu007",
            1200,
            "dmesg",
        ),
        line(
            "NVRM: Xid (PCI:0019:01:00): 45, pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149",
            "gpu007",
            1200.2,
            "dmesg",
        ),
        line(contained, "gpu007", 1200.4),
        *everywhere_but("gpu007", 1202, REMOTE_ERROR),
    ]
    verdict = verdict_of(engine, lines, [start("9116"), end("9116", 1240, "FAILED")])
    assert outcome(verdict) == ("fail", "hardware", ["gpu007"])
    assert verdict.root_symptom.rule_id == "gpu.xid.nvlink5"
    assert roles(verdict)["cuda_contained_error"] == "downstream"


def test_contained_errors_across_an_nvlink_domain_with_no_driver_line_are_weak_hardware_never_user(engine):
    """marin-community/marin#8934: on a GB200 NVL72 domain one task logged 'CUDA_ERROR_CONTAINED: Invalid
    access of peer GPU memory over nvlink or a hardware error', the domain's seven other nodes within
    0.5 s, every other rack by fate sharing within 7 s; no Xid visible from the task, GPU-side NVLink
    counters unchanged (switch side suspected). The logs name no single faulty node.
    https://github.com/marin-community/marin/issues/8934
    """
    contained = (
        "E gpu_cudamallocasync_allocator.cc:414] CUDA_ERROR_CONTAINED: Invalid access of peer GPU memory over "
        "nvlink or a hardware error"
    )
    domain = NODES[:8]
    lines = [
        *[line(contained, n, 1800 + k * 0.06) for k, n in enumerate(domain)],
        *[line(REMOTE_ERROR, n, 1803 + k * 0.5) for k, n in enumerate(NODES[8:])],
    ]
    verdict = verdict_of(engine, lines, [start("9117"), end("9117", 1830, "FAILED")])
    terminal, sub_domain, _ = outcome(verdict)
    assert terminal == "fail"
    assert sub_domain == "hardware"
    assert verdict.uncertainty_type == "weak_evidence"
    assert not set(verdict.responsible_nodes) & set(NODES[8:])


def test_a_host_oom_kill_on_one_node_is_the_users_and_the_hung_survivors_are_its_echo(engine):
    """goodfire-ai/spd#537: 'a dead torchrun on one node (e.g. OOM) ... leaving surviving nodes hung in NCCL
    collectives ... until the watchdog timeout'; slurmstepd's cgroup OOM wording as in nextflow-io/nextflow#5932
    ('Detected 1 oom_kill event in StepId=... Some of the step tasks have been OOM Killed').
    https://github.com/goodfire-ai/spd/pull/537
    """
    lines = [
        line(
            "Out of memory: Killed process 22911 (python) total-vm:712003844kB, anon-rss:498123456kB, "
            "file-rss:0kB, shmem-rss:0kB, UID:1001 pgtables:980000kB oom_score_adj:0",
            "gpu008",
            2500,
            "dmesg",
        ),
        line(
            "slurmstepd: error: Detected 1 oom_kill event in StepId=9118.0. "
            "Some of the step tasks have been OOM "
            "Killed.",
            "gpu008",
            2501,
        ),
        line("srun: error: gpu008: task 56: Out Of Memory", "gpu001", 2501.5),
        *everywhere_but("gpu008", 3100, WATCHDOG_NEW),
    ]
    verdict = verdict_of(engine, lines, [start("9118"), end("9118", 3130, "OUT_OF_MEMORY")])
    assert outcome(verdict) == ("fail", "user", [])
    assert verdict.root_symptom.node == "gpu008"
    assert roles(verdict)["nccl_collective_timeout"] == "downstream"


def test_a_gpu_crash_that_leaves_the_job_hanging_until_its_walltime_is_no_user_timeout(engine):
    """BLOOM-176B chronicles, 2022-04: 'Sometimes the training gets stuck despite a crashing process and it
    won't quit' (before NCCL_ASYNC_ERROR_HANDLING=1): one rank dies on a CUDA error, nobody times out, and
    Slurm kills the job at its time limit hours later.
    https://github.com/bigscience-workshop/bigscience/blob/master/train/tr11-176B-ml/chronicles.md
    """
    kill = "slurmstepd: error: *** JOB 9119 ON gpu001 CANCELLED AT 2024-05-01T16:00:00 DUE TO TIME LIMIT ***"
    lines = [
        *progress(3000),
        line("[default3]:terminate called after throwing an instance of 'c10::CUDAError'", "gpu013", 3100),
        line("[default3]:  what():  CUDA error: unknown error", "gpu013", 3100),
        line(kill, "gpu001", 21600),
    ]
    verdict = verdict_of(engine, lines, [start("9119"), end("9119", 21605, "TIMEOUT")])
    terminal, domain, nodes = outcome(verdict)
    assert terminal == "timeout"
    assert domain != "user"
    assert set(nodes) <= {"gpu013"}
    assert verdict.root_symptom is not None and verdict.root_symptom.node == "gpu013"


def test_a_straggler_that_only_slows_the_run_and_the_owners_stop_is_the_users_cancel(engine):
    """BLOOM-176B chronicles, 2022-04-28 'sudden 5% drop in throughput': one slow GPU took the run from 149
    to 140 TFLOPs with no error anywhere; the owner stopped the job to bisect the nodes. Nothing in the logs
    names the slow node, so no node may be blamed.
    https://github.com/bigscience-workshop/bigscience/blob/master/train/tr11-176B-ml/chronicles.md
    """
    slow = [
        line(
            f"[default7]: iteration {42780 + k:>8}/ 115311 | "
            f"elapsed time per iteration (s): {105.2 + k * 1.5:.2f} | "
            f"lm loss: 2.117073E+00 | grad norm: 0.150 | TFLOPs: {149.1 - k * 2:.2f} |",
            "gpu001",
            k * 110,
        )
        for k in range(1, 6)
    ]
    kill = "slurmstepd: error: *** JOB 9120 ON gpu001 CANCELLED AT 2024-05-01T10:12:00 ***"
    lines = [*slow, line(kill, "gpu001", 720)]
    verdict = verdict_of(engine, lines, [start("9120"), end("9120", 725, "CANCELLED")])
    assert outcome(verdict) == ("cancel", "user", [])


def test_a_kubernetes_node_that_goes_not_ready_mid_run_is_infrastructure_on_that_node(engine):
    """kubeflow/trainer#2185: 'failed K8s nodes leave jobs hanging' on GPU instance / node failures; the node
    controller marks the node NotReady, the taint manager evicts the worker pod, the other workers' NCCL
    watchdogs fire and the PyTorchJob fails.
    https://github.com/kubeflow/trainer/issues/2185
    """
    nodes = ("gpu-node-5", "gpu-node-6", "gpu-node-7", "gpu-node-8")
    not_ready = (
        "k8s reason=NodeNotReady kind=Node object=gpu-node-7 node=gpu-node-7 "
        "message=Node gpu-node-7 status is now: NodeNotReady"
    )
    taint = (
        "k8s reason=TaintManagerEviction kind=Pod object=ml/llm-worker-2 node=gpu-node-7 "
        "message=Marking for deletion Pod ml/llm-worker-2"
    )
    lines = [
        line(not_ready, "gpu-node-7", 1000, "k8s"),
        line(taint, "gpu-node-7", 1300, "k8s"),
        *everywhere_but("gpu-node-7", 1600, WATCHDOG_NEW, nodes),
    ]
    events = [start("k8s:ml/llm2", nodes), end("k8s:ml/llm2", 1630, "FAILED", nodes)]
    verdict = verdict_of(engine, lines, events)
    assert outcome(verdict) == ("fail", "infrastructure", ["gpu-node-7"])
    assert roles(verdict)["nccl_collective_timeout"] == "downstream"


def test_the_device_plugins_xid79_on_one_kubernetes_node_blames_that_node(engine):
    """NVIDIA/k8s-device-plugin#189: the plugin logs 'XidCriticalError: Xid=.. on Device=GPU-.., the device
    will go unhealthy.' and marks the GPU unhealthy (the issue shows Xid=69; here the same template with
    Xid 79, a GPU fallen off the bus); the PyTorchJob's other workers lose their peer.
    https://github.com/NVIDIA/k8s-device-plugin/issues/189
    """
    nodes = ("gpu-node-1", "gpu-node-2", "gpu-node-3")
    gpu = "GPU-7540a9b3-eeb9-1214-1526-f93c9ea826a8"
    lines = [
        line(
            f"2020/08/10 19:09:42 XidCriticalError: Xid=79 on Device={gpu}, the device will go unhealthy.",
            "gpu-node-2",
            400,
        ),
        line(f"2020/08/10 19:09:42 'nvidia.com/gpu' device marked unhealthy: {gpu}", "gpu-node-2", 400),
        *everywhere_but("gpu-node-2", 402, REMOTE_ERROR, nodes),
    ]
    events = [start("k8s:ml/llm3", nodes), end("k8s:ml/llm3", 440, "FAILED", nodes)]
    verdict = verdict_of(engine, lines, events)
    assert outcome(verdict) == ("fail", "hardware", ["gpu-node-2"])


def test_an_operators_cancel_for_unplanned_host_maintenance_is_infrastructure_and_its_teardown_no_cause(engine):
    """Llama 3 paper, Table 5: 'Unplanned Host Maintenance' caused 7.6 % of the interruptions; root cancels
    the job (slurmctld logs the uid), every rank's NCCL connections close and the GPUs log Xid 45 as the
    processes are killed.
    https://arxiv.org/abs/2407.21783 (section 3.3.4, Table 5)
    """
    closed = "socketProgress: Connection closed by remote peer gpu002<38352>"
    lines = [
        *progress(3000),
        line(
            "slurmctld[1822]: _slurm_rpc_kill_job: REQUEST_KILL_JOB JobId=9121 uid 0",
            "slurmctl01",
            3050,
            "syslog",
        ),
        line(
            "slurmstepd: error: *** JOB 9121 ON gpu001 CANCELLED AT 2024-05-01T10:50:50 ***", "gpu001", 3050.2
        ),
        *everywhere_but("gpu002", 3051, nccl("{host}", "misc/socket.cc:49", closed)),
        line("NVRM: Xid (PCI:0000:3b:00): 45, pid=88112, name=python, Ch 00000010", "gpu005", 3051.5, "dmesg"),
    ]
    events = [start("9121"), end("9121", 3080, "CANCELLED", extra={"user_id": "1001"})]
    verdict = verdict_of(engine, lines, events)
    assert outcome(verdict) == ("cancel", "infrastructure", [])
    assert verdict.cancellation_actor == "uid 0"
    assert all(element.role != "root" for element in verdict.chain)


def test_the_owners_own_scancel_logged_with_their_uid_is_the_users_cancel(engine):
    """BLOOM-176B chronicles, 2022-04-30: the run hung at eval and 'I manually restarted the training'; the
    owner's scancel reaches slurmctld with the owner's uid, which the jobcomp record carries as user_id.
    https://github.com/bigscience-workshop/bigscience/blob/master/train/tr11-176B-ml/chronicles.md
    """
    lines = [
        *progress(1000),
        line(
            "slurmctld[1822]: _slurm_rpc_kill_job: REQUEST_KILL_JOB JobId=9122 uid 1001",
            "slurmctl01",
            9000,
            "syslog",
        ),
        line(
            "slurmstepd: error: *** JOB 9122 ON gpu001 CANCELLED AT 2024-05-01T12:30:00 ***", "gpu001", 9000.2
        ),
    ]
    events = [start("9122"), end("9122", 9030, "CANCELLED", extra={"user_id": "1001"})]
    verdict = verdict_of(engine, lines, events)
    assert outcome(verdict) == ("cancel", "user", [])


def test_a_power_event_that_takes_two_nodes_down_names_both_from_slurmctlds_hostlist(engine):
    """ArjunaCluster/ArjunaUsers#106 'PSC Power Issues': a power problem took nodes down under running
    jobs. slurmctld reports several nodes in one line as a hostlist ('Nodes gpu[010-011] not
    responding, setting DOWN'); the job ends NODE_FAIL and its other ranks only lose their peers.
    https://github.com/ArjunaCluster/ArjunaUsers/issues/106
    """
    closed = "socketProgress: Connection closed by remote peer gpu010<38352>"
    survivors = tuple(n for n in NODES if n not in ("gpu010", "gpu011"))
    lines = [
        *[line(nccl(n, "misc/socket.cc:49", closed), n, 2000 + k * 0.05) for k, n in enumerate(survivors)],
        line("slurmctld[2201]: error: Nodes gpu[010-011] not responding, setting DOWN", "slurmctl01", 2090,
             "syslog"),
    ]  # fmt: skip
    verdict = verdict_of(engine, lines, [start("9123"), end("9123", 2100, "NODE_FAIL")])
    assert outcome(verdict) == ("fail", "infrastructure", ["gpu010", "gpu011"])
    assert verdict.uncertainty_type == "multiple_nodes"
    assert roles(verdict)["nccl_remote_peer_lost"] == "downstream"
