"""More multi-node failure stories modelled on real, publicly described incidents (round 10).

Same method as ``test_incident_stories.py`` (whose helpers this module reuses): each story rebuilds one
published incident kind as a timeline on the bundled rules, with the fault on its node in the wording of
the versions involved, the echo on its peers and the scheduler's terminal record. The asserts are the
verdict a careful SRE would give from those logs alone. The source is in each docstring. These cover
kinds the first 25 do not: a GSP timeout, an SRAM contained error, host DRAM, a NIC's firmware, a leaf
switch under several nodes, a flapping port, an NFS outage at a checkpoint, a local NVMe SSD, Slurm
preemption, a Kubernetes node shutdown, a user's NCCL interface setting, two independent faults at once,
a NaN that only silent data corruption would explain, and a heat-slowed run reaching its walltime.
"""

from __future__ import annotations

from tests.correlator.conftest import roles
from tests.correlator.test_incident_stories import (
    CHILD_FAILED,
    NODES,
    REMOTE_ERROR,
    WATCHDOG_NEW,
    end,
    everywhere_but,
    line,
    nccl,
    outcome,
    progress,
    start,
    verdict_of,
)

LLAMA3 = "https://arxiv.org/abs/2407.21783 (section 3.3.4, Table 5)"


def oob_addresses(nodes=NODES, prefix: str = "10.216.210.") -> list:
    """NCCL 2.19+'s own-address line on every node: maps peer addresses to nodes."""
    return [
        line(f"{n}:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:{prefix}{k + 1}<0>", n, 5)
        for k, n in enumerate(nodes)
    ]


def test_llama3_gsp_rpc_timeout_on_one_gpu_hangs_the_job_and_blames_that_node_not_the_watchdogs(engine):
    """Llama 3 paper, Table 5: 'GPU System Processor' interruptions. On an H100 the GSP stops answering the
    driver's RPCs (Xid 119, wording of NVIDIA/open-gpu-kernel-modules#461 and the Xid catalog), the rank on
    that GPU hangs inside its kernel, and every other rank's NCCL watchdog fires ten minutes later.
    https://arxiv.org/abs/2407.21783 (section 3.3.4, Table 5)
    https://github.com/NVIDIA/open-gpu-kernel-modules/issues/461
    """
    lines = [
        *progress(1400),
        line(
            "NVRM: Xid (PCI:0000:9b:00): 119, pid=4071838, name=python, Timeout after 6s of waiting for RPC "
            "response from GPU4 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20801702 0x4).",
            "gpu010",
            1500,
            "dmesg",
        ),
        *everywhere_but("gpu010", 2100, WATCHDOG_NEW),
        *everywhere_but("gpu010", 2101, CHILD_FAILED),
    ]
    verdict = verdict_of(engine, lines, [start("9201"), end("9201", 2130, "FAILED")])
    terminal, domain, nodes = outcome(verdict)
    assert terminal == "fail" and domain in ("system_software", "hardware")
    assert nodes == ["gpu010"]
    assert verdict.root_symptom.rule_id == "gpu.xid.119"
    assert roles(verdict)["nccl_collective_timeout"] == "downstream"


def test_llama3_sram_contained_ecc_error_on_one_gpu_is_hardware_there_and_its_peers_only_echo(engine):
    """Llama 3 paper, Table 5: 'GPU SRAM Memory' interruptions. On an H100 an uncorrectable SRAM error that
    the GPU contains is Xid 94 ('Contained: SM (0x1). RST: No, D-RST: No', R535+ wording, NVIDIA's
    GPU memory error management guide); the process on that GPU dies with 'uncorrectable ECC error
    encountered' and the other ranks lose their peer.
    https://arxiv.org/abs/2407.21783 (section 3.3.4, Table 5)
    https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html
    """
    lines = [
        *progress(800),
        line(
            "NVRM: Xid (PCI:0000:1b:00): 94, pid=32112, name=python, Contained: SM (0x1). RST: No, D-RST: No",
            "gpu004",
            900,
            "dmesg",
        ),
        line("RuntimeError: CUDA error: uncorrectable ECC error encountered", "gpu004", 900.3),
        *everywhere_but("gpu004", 902, REMOTE_ERROR),
        *everywhere_but("gpu004", 903, CHILD_FAILED),
    ]
    verdict = verdict_of(engine, lines, [start("9202"), end("9202", 940, "FAILED")])
    assert outcome(verdict) == ("fail", "hardware", ["gpu004"])
    assert verdict.root_symptom.rule_id == "gpu.xid.94" and verdict.root_symptom.node == "gpu004"
    assert verdict.uncertainty_type is None


def test_llama3_host_dram_uncorrectable_error_panics_one_node_and_the_node_fail_follows_it(engine):
    """Llama 3 paper, Table 5: 'System Memory' interruptions. EDAC reports an uncorrectable DIMM error
    (kernel EDAC wording), the kernel panics on the machine check, slurmctld loses the node and the job
    ends NODE_FAIL; the survivors' sockets to it close.
    https://arxiv.org/abs/2407.21783 (section 3.3.4, Table 5)
    https://docs.kernel.org/driver-api/edac.html
    """
    closed = "socketProgress: Connection closed by remote peer gpu007<38352>"
    lines = [
        line(
            "EDAC MC1: 1 UE memory read error on CPU_SrcID#1_Ha#0_Chan#2_DIMM#0 (channel:2 slot:0 "
            "page:0x3f0a11 offset:0x0 grain:32 - OVERFLOW)",
            "gpu007",
            1200,
            "dmesg",
        ),
        line("Kernel panic - not syncing: Fatal machine check", "gpu007", 1200.4, "dmesg"),
        *everywhere_but("gpu007", 1201, nccl("{host}", "misc/socket.cc:49", closed)),
        line("slurmctld[2201]: error: Nodes gpu007 not responding", "slurmctl01", 1290, "syslog"),
        line("slurmctld[2201]: Killing JobId=9203 on failed node gpu007", "slurmctl01", 1300, "syslog"),
    ]
    verdict = verdict_of(engine, lines, [start("9203"), end("9203", 1301, "NODE_FAIL")])
    assert outcome(verdict) == ("fail", "hardware", ["gpu007"])
    # the EDAC UE and the panic's machine check 0.4 s later are one fault: within the 2 s root tie the
    # higher priority (the machine check, 92 over 90) is the root; both stand as roots in the chain
    assert verdict.root_symptom.rule_id in ("kernel.edac.uncorrected", "kernel.mce.uncorrected")
    assert roles(verdict)["host_memory_uncorrectable"] == "root"
    assert roles(verdict)["nccl_remote_peer_lost"] == "downstream"


def test_a_connectx_firmware_fatal_error_on_one_node_blames_it_not_the_peers_completion_errors(engine):
    """Llama 3 paper, Table 5: 'NIC' interruptions; ByteDance MegaScale (NSDI '24, section 4) names NIC
    failures among the faults its diagnosis finds. The mlx5 driver's health poller reports the HCA's
    firmware fatal ('synd 0x1: firmware internal error', 'device's health compromised - reached miss
    count'); the ranks talking to that node get NCCL's IB completion error naming it.
    https://arxiv.org/abs/2402.15627
    https://arxiv.org/abs/2407.21783 (section 3.3.4, Table 5)
    """
    error = (
        "NET/IB : Got completion from peer 10.216.210.12<54862> with status=12 opcode=0 len=0 "
        "vendor err 129 (Recv) localGid fe80::a088:c203:ac:5ad2 remoteGidsfe80::a088:c203:ac:5a1e"
    )
    lines = [
        *oob_addresses(),
        line(
            "mlx5_core 0000:c1:00.0: print_health_info:425:(pid 0): synd 0x1: firmware internal error",
            "gpu012",
            1800,
            "dmesg",
        ),
        line(
            "mlx5_core 0000:c1:00.0: poll_health:800:(pid 0): device's health compromised - reached miss count",
            "gpu012",
            1801,
            "dmesg",
        ),
        *[line(nccl(n, "ib_plugin.c:1615", error), n, 1803 + k * 0.1) for k, n in enumerate(NODES[:6])],
        *everywhere_but("gpu012", 1805, CHILD_FAILED),
    ]
    verdict = verdict_of(engine, lines, [start("9204"), end("9204", 1840, "FAILED")])
    terminal, domain, nodes = outcome(verdict)
    assert terminal == "fail" and domain in ("hardware", "infrastructure")
    assert nodes == ["gpu012"]
    assert verdict.root_symptom.node == "gpu012"
    assert roles(verdict)["nccl_ib_completion_error"] == "downstream"


def test_a_leaf_switch_failure_takes_the_links_of_four_nodes_down_at_once_infrastructure_on_those(engine):
    """Llama 3 paper, Table 5: 'Network Switch/Cable' caused 8.4 % of the interruptions. A leaf switch
    reboots: the four nodes cabled to it see their HCA port go down in the same second (mlx5 'Port: 1
    Link DOWN', NCCL's 'Got async event : port error'), the ranks elsewhere get completion errors naming
    those nodes. The logs point at the four nodes' links, not at any one of them.
    https://arxiv.org/abs/2407.21783 (section 3.3.4, Table 5)
    """
    leaf = NODES[4:8]
    peer = "10.216.210.{}<54862>"
    lines = [
        *oob_addresses(),
        *[line("kernel: mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link DOWN", n, 2400 + k * 0.02, "dmesg")
          for k, n in enumerate(leaf)],
        *[line(nccl(n, "transport/net_ib.cc:119", "NET/IB : mlx5_5:1 Got async event : port error"), n,
               2400.5 + k * 0.02) for k, n in enumerate(leaf)],
        *[
            line(
                nccl(n, "ib_plugin.c:1615", f"NET/IB : Got completion from peer {peer.format(5 + k % 4)} with "
                     "status=12 opcode=0 len=0 vendor err 129 (Recv)"),
                n,
                2402 + k * 0.1,
            )
            for k, n in enumerate(n for n in NODES if n not in leaf)
        ],
        *everywhere_but("", 2404, CHILD_FAILED),
    ]  # fmt: skip
    verdict = verdict_of(engine, lines, [start("9205"), end("9205", 2440, "FAILED")])
    assert outcome(verdict) == ("fail", "infrastructure", sorted(leaf))
    assert verdict.uncertainty_type == "multiple_nodes"
    assert roles(verdict)["nccl_ib_completion_error"] == "downstream"


def test_a_flapping_ib_port_on_one_node_that_stalls_the_collectives_is_infrastructure_on_it(engine):
    """Imbue, 'From bare metal to a 70B model' (2024-06-25): flaky InfiniBand links and ports on single
    hosts stalled or slowed the whole run and were found by looking at the links of the hosts involved.
    Here one node's port flaps (NCCL's async 'port error' three times) and, with nothing failing outright,
    every other rank's watchdog fires on the stalled all-reduce.
    https://imbue.com/research/70b-infrastructure/
    """
    flap = nccl("gpu014", "transport/net_ib.cc:119", "NET/IB : mlx5_3:1 Got async event : port error")
    lines = [
        *progress(1000),
        *[line(flap, "gpu014", 1100 + 40 * k) for k in range(3)],
        *everywhere_but("gpu014", 1800, WATCHDOG_NEW),
        *everywhere_but("gpu014", 1801, CHILD_FAILED),
    ]
    verdict = verdict_of(engine, lines, [start("9206"), end("9206", 1830, "FAILED")])
    assert outcome(verdict) == ("fail", "infrastructure", ["gpu014"])
    assert verdict.root_symptom.node == "gpu014"
    assert roles(verdict)["nccl_collective_timeout"] == "downstream"


def test_an_nfs_server_that_stops_answering_at_a_checkpoint_is_infrastructure_and_blames_no_node(engine):
    """THUDM/slime#326: a two-node Megatron job fails saving its second checkpoint with 'Local process 0
    encountered an error: [Errno 5] Input/output error' (the maintainer: 'looks like a file system
    problem'); Lablup's B200 report (arXiv 2605.09370) traces checkpoint stalls to NFS RPC saturation.
    Here the NFS server stops answering every client at the checkpoint ('nfs: server ... not responding,
    still trying'), the writes fail with EIO and the job fails.
    https://github.com/THUDM/slime/issues/326
    https://arxiv.org/abs/2605.09370
    """
    eio = (
        "ERROR: megatron.core.dist_checkpointing.strategies.filesystem_async: Local process 0 encountered an "
        "error: [Errno 5] Input/output error"
    )
    nodes = NODES[:4]
    lines = [
        *progress(3000),
        *everywhere_but("", 3100, "nfs: server vast-nfs01 not responding, still trying", nodes),
        *[line(eio, n, 3280 + k * 0.1) for k, n in enumerate(nodes)],
        *everywhere_but("", 3282, CHILD_FAILED, nodes),
    ]
    for ln in lines:
        ln.source = "dmesg" if ln.text.startswith("nfs:") else ln.source
    verdict = verdict_of(engine, lines, [start("9207", nodes), end("9207", 3300, "FAILED", nodes)])
    assert outcome(verdict) == ("fail", "infrastructure", [])
    assert verdict.root_symptom.rule_id == "storage.nfs.not-responding"


def test_llama3_a_local_nvme_ssd_that_drops_out_is_hardware_on_its_node(engine):
    """Llama 3 paper, Table 5: 'SSD' interruptions. A node's local NVMe drive (the data cache) stops
    answering: 'I/O ... QID ... timeout, reset controller', then 'Device not ready; aborting reset'
    (Linux drivers/nvme/host/pci.c wording); the dataloader on that node fails with EIO and the other
    ranks lose their peer. The drive is the node's own part, not a shared file system.
    https://arxiv.org/abs/2407.21783 (section 3.3.4, Table 5)
    https://github.com/torvalds/linux/blob/master/drivers/nvme/host/pci.c
    """
    lines = [
        *progress(600),
        line("nvme nvme0: I/O 417 QID 12 timeout, reset controller", "gpu003", 700, "dmesg"),
        line("nvme nvme0: Device not ready; aborting reset, CSTS=0x1", "gpu003", 730, "dmesg"),
        line("OSError: [Errno 5] Input/output error: '/local_nvme/cache/shard_00412.bin'", "gpu003", 731),
        *everywhere_but("gpu003", 733, REMOTE_ERROR),
    ]
    verdict = verdict_of(engine, lines, [start("9208"), end("9208", 760, "FAILED")])
    assert outcome(verdict) == ("fail", "hardware", ["gpu003"])
    assert verdict.root_symptom.rule_id == "storage.nvme.controller-failure"


def test_a_slurm_preemption_after_the_grace_hours_is_an_infrastructure_cancel_with_no_cause(engine):
    """Meta, 'Revisiting Reliability in Large-Scale Machine Learning Research Clusters' (HPCA 2025): jobs on
    the RSC clusters become preemptible after two hours so that large jobs can start; slurmstepd kills the
    step '*** JOB ... CANCELLED AT ... DUE TO PREEMPTION ***' (slurmstepd req.c) and every rank's NCCL
    connections close as the processes die.
    https://arxiv.org/abs/2410.21680
    https://github.com/SchedMD/slurm/blob/master/src/slurmd/slurmstepd/req.c
    """
    closed = "socketProgress: Connection closed by remote peer gpu003<38352>"
    lines = [
        *progress(8000),
        line(
            "slurmstepd: error: *** JOB 9209 ON gpu001 CANCELLED AT 2024-05-01T12:15:00 DUE TO PREEMPTION ***",
            "gpu001",
            8100,
        ),
        *everywhere_but("gpu003", 8101, nccl("{host}", "misc/socket.cc:49", closed)),
    ]
    verdict = verdict_of(engine, lines, [start("9209"), end("9209", 8130, "PREEMPTED")])
    assert outcome(verdict) == ("cancel", "infrastructure", [])
    assert verdict.cancellation_actor == "scheduler (preemption)"
    assert all(element.role != "root" for element in verdict.chain)


def test_a_spot_gpu_node_reclaimed_under_a_pytorchjob_is_infrastructure_on_that_node(engine):
    """Kubernetes graceful node shutdown (GKE Spot VMs and preemptible nodes use it): the kubelet sees the
    host shut down ('Shutdown manager detected new shutdown event, isNodeShuttingDownNow' event=true) and
    kills the worker pod ('Shutdown manager killing pod with gracePeriod', kubelet 1.22+ wording); the other
    workers lose their peer and the PyTorchJob fails.
    https://kubernetes.io/docs/concepts/cluster-administration/node-shutdown/
    https://cloud.google.com/kubernetes-engine/docs/concepts/spot-vms
    """
    nodes = ("gpu-node-21", "gpu-node-22", "gpu-node-23", "gpu-node-24")
    lines = [
        line(
            'I0501 10:20:00.101234    1748 nodeshutdown_manager_linux.go:265] "Shutdown manager detected new '
            'shutdown event, isNodeShuttingDownNow" event=true',
            "gpu-node-23",
            1200,
            "syslog",
        ),
        line(
            'I0501 10:20:00.201234    1748 nodeshutdown_manager_linux.go:316] "Shutdown manager killing pod '
            'with gracePeriod" pod="ml/llm-worker-2" gracePeriod=30',
            "gpu-node-23",
            1200.1,
            "syslog",
        ),
        *everywhere_but("gpu-node-23", 1231, REMOTE_ERROR, nodes),
    ]
    events = [start("k8s:ml/llm21", nodes), end("k8s:ml/llm21", 1260, "FAILED", nodes)]
    verdict = verdict_of(engine, lines, events)
    assert outcome(verdict) == ("fail", "infrastructure", ["gpu-node-23"])
    assert verdict.root_symptom.node == "gpu-node-23"


def test_a_socket_ifname_that_matches_no_interface_on_any_node_is_the_users_setting(engine):
    """EvolvingLMMs-Lab/open-r1-multimodal#7 (also pytorch/pytorch#29482): 'NCCL error in: ...
    ProcessGroupNCCL.cpp:2588, internal error ... ncclInternalError: Internal check failed. Last error:
    Bootstrap : no socket interface found', 'resulting from the NCCL_SOCKET_IFNAME=eth0' the recipe set;
    every rank of the job fails at its first collective.
    https://github.com/EvolvingLMMs-Lab/open-r1-multimodal/issues/7
    https://github.com/pytorch/pytorch/issues/29482
    """
    nodes = NODES[:4]
    lines = [
        *[line(nccl(n, "bootstrap.cc:37", "Bootstrap : no socket interface found"), n, 20 + k * 0.1)
          for k, n in enumerate(nodes)],
        *everywhere_but(
            "", 21,
            "[rank{rank}]: torch.distributed.DistBackendError: NCCL error in: "
            "/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:2588, internal error - please report "
            "this issue to the NCCL developers, NCCL version 2.21.5",
            nodes,
        ),
        *everywhere_but("", 21.2, "[rank{rank}]: ncclInternalError: Internal check failed.", nodes),
        *everywhere_but("", 22, CHILD_FAILED, nodes),
    ]  # fmt: skip
    verdict = verdict_of(engine, lines, [start("9211", nodes), end("9211", 40, "FAILED", nodes)])
    assert outcome(verdict) == ("fail", "user", [])
    assert verdict.root_symptom.rule_id == "network.nccl.socket-ifname"


def test_a_gpu_off_the_bus_while_the_nfs_server_stalls_the_checkpoint_is_ambiguous_never_plain(engine):
    """Lablup's B200 report (arXiv 2605.09370) documents both Xid-identified GPU failures and checkpoint
    stalls from NFS RPC saturation in the same campaign; here they coincide in one job: a GPU falls off the
    bus on one node (Xid 79) two seconds after every node's NFS client lost its server at a checkpoint.
    Two independent causes in two domains: the honest verdict is ambiguous, naming both.
    https://arxiv.org/abs/2605.09370
    """
    nodes = NODES[:4]
    lines = [
        *progress(2000),
        *everywhere_but("", 2100, "nfs: server vast-nfs01 not responding, still trying", nodes),
        line(
            "NVRM: Xid (PCI:0000:3b:00): 79, pid=30211, name=python, GPU has fallen off the bus.",
            "gpu002",
            2102,
            "dmesg",
        ),
        *everywhere_but("gpu002", 2104, REMOTE_ERROR, nodes),
    ]
    for ln in lines:
        ln.source = "dmesg" if ln.text.startswith("nfs:") else ln.source
    verdict = verdict_of(engine, lines, [start("9212", nodes), end("9212", 2140, "FAILED", nodes)])
    terminal, domain, responsible = outcome(verdict)
    assert terminal == "fail" and domain == "ambiguous"
    assert set(verdict.failure_domains) >= {"hardware", "infrastructure"}
    assert verdict.uncertainty_type == "competing_domains"
    assert set(responsible) <= {"gpu002"}


def test_a_nan_grad_norm_on_one_rank_with_no_hardware_line_never_blames_a_node(engine):
    """Llama 3 paper, Table 5: 'Silent Data Corruption' caused six interruptions; Megatron-LM's
    check_for_nan_in_loss_and_grad raises 'Rank N: found NaN in local grad norm in backward pass before
    data-parallel communication collective' (megatron/core/distributed). A NaN on one rank, with no Xid,
    ECC or machine check anywhere, may be corrupted arithmetic or the user's model: the logs cannot say
    which, so no node may be drained and no hardware claimed.
    https://arxiv.org/abs/2407.21783 (section 3.3.4, Table 5)
    https://github.com/NVIDIA/Megatron-LM/blob/main/megatron/core/distributed/param_and_grad_buffer.py
    """
    nan = (
        "[rank37]: RuntimeError: Rank 37: found NaN in local grad norm in backward pass before data-parallel "
        "communication collective. Device: 5, node: gpu005"
    )
    lines = [*progress(1500), line(nan, "gpu005", 1600), *everywhere_but("gpu005", 1602, REMOTE_ERROR)]
    verdict = verdict_of(engine, lines, [start("9213"), end("9213", 1640, "FAILED")])
    terminal, domain, nodes = outcome(verdict)
    assert terminal == "fail"
    assert domain in ("user", "unattributed")
    assert nodes == []
    assert verdict.uncertainty_type in ("weak_evidence", "no_evidence")


def test_a_run_slowed_by_a_hot_gpu_that_reaches_its_walltime_is_the_users_timeout_not_hardware(engine):
    """Llama 3 paper, section 3.3.4: throughput varied 1-2 % with the time of day because higher mid-day
    temperatures change the GPUs' dynamic voltage and frequency scaling; Table 5 also lists 'GPU Thermal
    Interface + Sensor'. Here DCGM notes thermal clock throttling on one GPU, the iterations slow down and
    Slurm kills the job at its time limit: nothing failed, the job ran out of its own time.
    https://arxiv.org/abs/2407.21783 (section 3.3.4, Table 5)
    https://github.com/NVIDIA/DCGM/blob/master/dcgmlib/dcgm_errors.h
    """
    kill = "slurmstepd: error: *** JOB 9214 ON gpu001 CANCELLED AT 2024-05-01T14:00:00 DUE TO TIME LIMIT ***"
    lines = [
        *progress(14000, step_s=700),
        line("Detected clock throttling due to thermal violation in GPU 6.", "gpu009", 9000, "syslog"),
        line(kill, "gpu001", 14400),
        *everywhere_but("gpu001", 14401, nccl("{host}", "misc/socket.cc:49",
                        "socketProgress: Connection closed by remote peer gpu001<38352>")),
    ]  # fmt: skip
    verdict = verdict_of(engine, lines, [start("9214"), end("9214", 14405, "TIMEOUT")])
    assert outcome(verdict) == ("timeout", "user", [])
