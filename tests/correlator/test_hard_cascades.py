"""The hard cascades, on the bundled rules and real-looking lines (issue: 'Decisions for the hard
cascades'). Times are seconds after T0; each story is a timeline of lines and scheduler records.
"""

from __future__ import annotations

import pytest

from streams.records import JobEvent, LogLine
from tests.correlator.conftest import at, line, roles, verdict_of

NODES = tuple(f"gpu{n:03d}" for n in range(1, 17))
POD_NODE = ("gpu-node-7",)
#: NCCL 2.21 on a node where the IB plugin finds no usable HCA and the chosen net does not exist
NO_USABLE_NIC = ("NET/IB : No device found.", "Could not find NET with id 2")
XID79 = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1021, name=python, GPU has fallen off the bus."
IB_ERROR_12 = (
    "NET/IB : Got completion from peer {peer}<50066> with error 12, opcode 0, len 0, vendor err 129 (Send)"
)
BOOT = "[    0.000000] Linux version 5.15.0-105-generic (buildd@lcy02-amd64-007) (gcc 11.4.0)"
OOMKILLED = (
    "k8s reason=OOMKilled kind=Pod object=ml/train-0 node=gpu-node-7 message=Container trainer was OOM killed"
)
REMOTE_ERROR = (
    "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, "
    "remote process exited or there was a network error, NCCL version 2.21.5"
)


def start(job: str, seconds: float = 0, nodes=NODES, user: str = "alice") -> JobEvent:
    return JobEvent("job_start", job, at(seconds), nodes=tuple(nodes), user=user)


def end(job: str, seconds: float, state: str, nodes=NODES, user: str = "alice", **extra) -> JobEvent:
    return JobEvent(
        "job_end", job, at(seconds), nodes=tuple(nodes), state=state, start_ms=at(0), user=user, **extra
    )


def nccl(host: str, text: str) -> str:
    return f"{host}:2211:2290 [3] transport/net_ib.cc:1695 NCCL WARN {text}"


def survivors_closing(seconds: float, peer: str = "gpu007", skip: str = "gpu007") -> list[LogLine]:
    text = f"socketProgress: Connection closed by remote peer {peer}<38352>"
    return [line(nccl(n, text), n, seconds + i * 0.1) for i, n in enumerate(NODES) if n != skip]


def test_a_plain_scancel_is_the_users_cancel_and_the_teardown_after_it_is_no_cause(engine):
    # 0 start ─ 500 scancel (no DUE TO) ─ 501.. NCCL closes everywhere, Xid 45 on gpu005 ─ 530 CANCELLED
    lines = [
        line("slurmstepd: error: *** JOB 5001 ON gpu003 CANCELLED AT 2024-05-01T10:08:20 ***", "gpu003", 500),
        *survivors_closing(501),
        line("NVRM: Xid (PCI:0000:3b:00): 45, pid=88112, name=python, Ch 00000010", "gpu005", 502, "dmesg"),
    ]
    verdict = verdict_of(engine, lines, [start("5001"), end("5001", 530, "CANCELLED")])
    assert (verdict.terminal_state, verdict.sub_domain) == ("cancel", "user")
    assert verdict.cancellation_actor == "alice"
    assert verdict.responsible_nodes == []
    assert all(element.role != "root" for element in verdict.chain)


def test_a_walltime_reached_after_steady_progress_is_the_users_and_the_kill_noise_is_downstream(engine):
    # steady progress ─ 3600 DUE TO TIME LIMIT ─ 3601 IB completion errors on the survivors ─ 3605 TIMEOUT
    progress = [line(f"iteration {n}/100000 | loss 2.1{n % 10}", "gpu001", n * 30) for n in range(1, 120)]
    kill = "slurmstepd: error: *** STEP 5002.0 ON gpu001 CANCELLED AT 2024-05-01T11:00:00 DUE TO TIME LIMIT ***"
    ib = IB_ERROR_12.format(peer="10.0.0.9")
    lines = [*progress, line(kill, "gpu001", 3600), *[line(nccl(n, ib), n, 3601) for n in NODES[1:]]]
    verdict = verdict_of(engine, lines, [start("5002"), end("5002", 3605, "TIMEOUT")])
    assert (verdict.terminal_state, verdict.sub_domain) == ("timeout", "user")
    assert verdict.uncertainty_type is None
    assert roles(verdict).get("nccl_ib_completion_error") == "downstream"


def test_a_walltime_whose_kill_leaves_one_system_error_and_hung_peers_is_still_the_users_timeout(engine):
    # 3600 DUE TO TIME LIMIT ─ 3601 one rank's ncclSystemError ─ 3602 the others' watchdogs, which
    # a refiner first reads as echoes of that error ─ 3605 TIMEOUT: all of it is the kill's echo
    kill = "slurmstepd: error: *** STEP 5003.0 ON gpu001 CANCELLED AT 2024-05-01T11:00:00 DUE TO TIME LIMIT ***"
    system_error = (
        "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error."
    )
    hang = (
        "[rank{r}]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank {r}] Heartbeat monitor timed out! "
        "Process will be terminated after dumping debug info."
    )
    lines = [
        line(kill, "gpu001", 3600),
        line(system_error, "gpu002", 3601),
        *[line(hang.format(r=i), n, 3602) for i, n in enumerate(NODES[2:8], start=2)],
    ]
    verdict = verdict_of(engine, lines, [start("5003"), end("5003", 3605, "TIMEOUT")])
    assert (verdict.terminal_state, verdict.sub_domain) == ("timeout", "user")
    assert verdict.root_symptom is None
    hung = [e for e in verdict.chain if e.symptom == "nccl_watchdog_hang"]
    assert hung and all(e.role == "downstream" and e.explained_by == "scheduler kill" for e in hung)


def test_xid45_and_xid43_after_an_xid79_are_its_consequences_not_the_root(engine):
    lines = [
        line(XID79, "gpu007", 100, "dmesg"),
        line("NVRM: Xid (PCI:0000:3b:00): 45, pid=1021, name=python, Ch 00000008", "gpu007", 101, "dmesg"),
        line("NVRM: Xid (PCI:0000:3b:00): 43, pid=1021, name=python, Ch 00000008", "gpu007", 102, "dmesg"),
        *survivors_closing(103),
    ]
    verdict = verdict_of(engine, lines, [start("5003"), end("5003", 200, "FAILED")])
    assert (verdict.sub_domain, verdict.responsible_nodes) == ("hardware", ["gpu007"])
    assert verdict.root_symptom.catalog_id == "XID-79"


def test_a_fatal_sxid_with_a_failed_job_on_that_node_is_hardware_on_that_node(engine):
    sxid = "nvidia-nvswitch3: SXid (PCI:0000:86:00.0): 24007, Fatal, Link 61 sourcetrack timeout error (First)"
    lines = [line(sxid, "gpu004", 100, "dmesg"), *survivors_closing(102, peer="gpu004", skip="gpu004")]
    verdict = verdict_of(engine, lines, [start("5004"), end("5004", 200, "FAILED")])
    assert (verdict.sub_domain, verdict.responsible_nodes) == ("hardware", ["gpu004"])


def test_xid13_bursts_with_an_app_crash_and_no_ecc_pcie_or_nvlink_error_are_the_users(engine):
    xid13 = (
        "NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on "
        "(GPC 7, TPC 7, SM 0): Illegal Instruction Parameter"
    )
    crash = "RuntimeError: CUDA error: an illegal memory access was encountered"
    lines = [*[line(xid13, "gpu002", 100 + i * 0.2, "dmesg") for i in range(5)], line(crash, "gpu002", 101)]
    verdict = verdict_of(engine, lines, [start("5005"), end("5005", 200, "FAILED")])
    assert verdict.sub_domain == "user"
    assert verdict.responsible_nodes == []


def test_fabric_manager_failing_before_the_job_started_is_the_jobs_cause_on_that_node(engine):
    fm = "gpu009 nv-fabricmanager[2231]: NVIDIA Fabric Manager failed to start"
    nvml = "[2024-05-01 10:00:10] ERROR: NCCL WARN Cuda failure 'system not yet initialized'"
    lines = [line(fm, "gpu009", -120, "syslog"), line(nvml, "gpu009", 10)]
    verdict = verdict_of(engine, lines, [start("5006"), end("5006", 60, "FAILED")])
    assert verdict.sub_domain == "system_software"
    assert verdict.responsible_nodes == ["gpu009"]


def test_hundreds_of_transport_errors_and_one_invalid_nic_selection_is_system_software(engine):
    nodes = tuple(f"node{n:03d}" for n in range(128))
    closes = [
        line(
            nccl(n, f"socketProgress: Connection closed by remote peer node{(k + 1) % 128:03d}<41022>"),
            n,
            60 + k % 7,
        )
        for k, n in enumerate(nodes)
        for _ in range(3)
    ]
    remote = [line(REMOTE_ERROR, n, 70) for n in nodes[:40]]
    nic = [line(nccl("node017", text), "node017", 30) for text in NO_USABLE_NIC]
    events = [start("5007", nodes=nodes), end("5007", 120, "FAILED", nodes=nodes)]
    verdict = verdict_of(engine, [*nic, *closes, *remote], events)
    assert (verdict.terminal_state, verdict.sub_domain) == ("fail", "system_software")


def test_a_socket_interface_missing_on_some_nodes_is_the_users_nccl_setting(engine):
    missing = nccl("gpu012", "Bootstrap : no socket interface found")
    lines = [line(missing, "gpu012", 20), *survivors_closing(25, peer="gpu012", skip="gpu012")]
    verdict = verdict_of(engine, lines, [start("5008"), end("5008", 90, "FAILED")])
    assert verdict.sub_domain == "user"


def test_the_same_local_protection_error_on_every_node_at_the_first_collective_is_the_software_setup(engine):
    error = (
        "NET/IB : Got completion from peer 10.0.0.{n}<50066> with error 4, opcode 0, len 0, vendor err 81 "
        "(Recv) localGid ::ffff:10.0.0.{m} remoteGids::ffff:10.0.0.{n} hca mlx5_0"
    )
    lines = [line(nccl(n, error.format(n=k % 16 + 1, m=k)), n, 30 + k * 0.05) for k, n in enumerate(NODES)]
    verdict = verdict_of(engine, lines, [start("5009"), end("5009", 90, "FAILED")])
    assert verdict.sub_domain == "system_software"
    assert verdict.responsible_nodes == []


@pytest.mark.parametrize(
    ("library", "domain"),
    [("libnccl.so.2", "system_software"), ("libcuda.so.535.104.05", "system_software"), ("python3.10", "user")],
)
def test_a_segfault_in_a_vendor_library_is_system_software_in_python_the_users(engine, library, domain):
    segv = f"python[88213]: segfault at 7f2a10 ip 00007f2a1c3e sp 00007ffd9 error 4 in {library}[7f+1a]"
    verdict = verdict_of(
        engine, [line(segv, "gpu006", 100, "dmesg")], [start("5010"), end("5010", 160, "FAILED")]
    )
    assert verdict.sub_domain == domain


def survivors_completion_errors(seconds: float, peer: str = "10.0.0.6", skip: str = "gpu006") -> list[LogLine]:
    return [
        line(nccl(n, IB_ERROR_12.format(peer=peer)), n, seconds + i * 0.1)
        for i, n in enumerate(NODES)
        if n != skip
    ]


@pytest.mark.parametrize(
    ("library", "domain"),
    [("libnccl.so.2", "system_software"), ("python3.10", "user")],
)
def test_a_rank_that_segfaults_is_the_cause_of_its_survivors_completion_errors_not_the_fabric(
    engine, library, domain
):
    segv = f"python[88213]: segfault at 7f2a10 ip 00007f2a1c3e sp 00007ffd9 error 4 in {library}[7f+1a]"
    lines = [line(segv, "gpu006", 100, "dmesg"), *survivors_completion_errors(101)]
    verdict = verdict_of(engine, lines, [start("5011"), end("5011", 160, "FAILED")])
    assert (verdict.sub_domain, verdict.uncertainty_type) == (domain, "weak_evidence")
    assert verdict.root_symptom.symptom.endswith("segfault")
    assert roles(verdict)["nccl_ib_completion_error"] == "downstream"


def test_a_survivor_that_segfaults_after_its_own_transport_error_does_not_hide_the_fabric(engine):
    # the completion errors come first everywhere; one survivor then crashes in the abort
    segv = "python[88213]: segfault at 0 ip 00007f2a1c3e sp 00007ffd9 error 4 in python3.10[7f+1a]"
    lines = [*survivors_completion_errors(100), line(segv, "gpu003", 103, "dmesg")]
    verdict = verdict_of(engine, lines, [start("5012"), end("5012", 160, "FAILED")])
    assert verdict.root_symptom.symptom == "nccl_ib_completion_error"
    assert verdict.sub_domain != "user"


def test_a_pod_evicted_for_node_memory_pressure_is_infrastructure_on_that_node(engine):
    evicted = (
        "k8s reason=Evicted kind=Pod object=ml/train-0 node=gpu-node-7 message=The node was low on "
        "resource: memory. Threshold quantity: 100Mi, available: 68Mi."
    )
    events = [
        start("k8s:ml/train", nodes=POD_NODE),
        end("k8s:ml/train", 200, "FAILED", nodes=POD_NODE),
    ]
    verdict = verdict_of(engine, [line(evicted, "gpu-node-7", 100, "k8s")], events)
    assert (verdict.sub_domain, verdict.responsible_nodes) == ("infrastructure", ["gpu-node-7"])


def test_a_pod_oomkilled_over_its_own_limit_is_the_users(engine):
    oom = OOMKILLED
    events = [start("k8s:ml/t2", nodes=POD_NODE), end("k8s:ml/t2", 200, "FAILED", nodes=POD_NODE)]
    verdict = verdict_of(engine, [line(oom, "gpu-node-7", 100, "k8s")], events)
    assert (verdict.sub_domain, verdict.responsible_nodes) == ("user", [])


def test_peers_naming_the_faulty_node_make_its_later_xid_the_root_despite_clock_skew(engine):
    # gpu007's clock runs 4 s late: its Xid 79 is stamped after the peers' errors about it
    oob = [
        line(f"{n}:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.{k + 1}<0>", n, 5)
        for k, n in enumerate(NODES)
    ]
    ib = IB_ERROR_12.format(peer="10.0.0.7")
    errors = [line(nccl(n, ib), n, 100) for n in NODES if n != "gpu007"]
    xid = line(
        XID79,
        "gpu007",
        104,
        "dmesg",
    )
    verdict = verdict_of(engine, [*oob, *errors, xid], [start("5011"), end("5011", 200, "FAILED")])
    assert (verdict.sub_domain, verdict.responsible_nodes) == ("hardware", ["gpu007"])
    assert verdict.root_symptom.node == "gpu007"
    assert roles(verdict)["nccl_ib_completion_error"] == "downstream"


def test_a_reboot_mid_run_then_an_xid_is_hardware_with_the_reboot_upstream_in_the_chain(engine):
    lines = [
        line(BOOT, "gpu003", 200, "dmesg"),
        line(XID79, "gpu003", 260, "dmesg"),
    ]
    verdict = verdict_of(engine, lines, [start("5012"), end("5012", 300, "FAILED")])
    assert (verdict.sub_domain, verdict.responsible_nodes) == ("hardware", ["gpu003"])
    chain = [(element.symptom, element.role) for element in verdict.chain]
    reboot = next(i for i, (_, role) in enumerate(chain) if role == "context")
    root = next(i for i, (_, role) in enumerate(chain) if role == "root")
    assert reboot < root


def test_a_driver_missing_since_before_the_job_started_is_its_cause_on_that_node(engine):
    # gpu005 came back from a reboot without its NVIDIA module; the job started on it anyway
    missing = "modprobe: FATAL: Module nvidia not found in directory /lib/modules/5.15.0-91-generic"
    lines = [line(missing, "gpu005", -200, "syslog"), *survivors_closing(40, peer="gpu005", skip="gpu005")]
    verdict = verdict_of(engine, lines, [start("5013"), end("5013", 90, "FAILED")])
    assert (verdict.sub_domain, verdict.responsible_nodes) == ("system_software", ["gpu005"])


def test_an_error_that_ended_before_the_job_started_is_context_not_its_cause(engine):
    # a CUDA OOM of the previous tenant, logged before this job's start
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    verdict = verdict_of(engine, [line(oom, "gpu005", -200)], [start("5014"), end("5014", 90, "FAILED")])
    assert verdict.sub_domain == "unattributed"
    assert [element.role for element in verdict.chain] == ["context"]
