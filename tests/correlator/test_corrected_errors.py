"""Corrected errors, told as timelines on the bundled rules (issue 6: right on real logs).

A corrected error is one the hardware already fixed: the PCIe link retried the TLP, the ECC
fixed the bit, the machine-check bank logged a corrected event. Alone it did not end the job and
must never make a verdict that drains the node. It is shown as context, and tied to an
uncorrectable error on the same node when one follows. A failed job whose only evidence is
corrected *memory* errors (DIMM ECC, machine checks, GHES, GPU single-bit ECC) names that hardware
as its one lead with uncertainty ``corrected_only``, which no remediation rule acts on by default;
corrected PCIe link errors come from firmware and ASPM set-up on healthy links as often as from a
failing link, so alone they leave the job unattributed.
"""

from __future__ import annotations

import pytest

from streams.records import JobEvent, LogLine
from streams.remediation_policy import Match
from tests.correlator.conftest import T0, line, roles, verdict_of

NODES = tuple(f"gpu{n:03d}" for n in range(1, 9))
XID79 = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1021, name=python, GPU has fallen off the bus."

PORT = "0000:3a:00.0"  # the root port above gpu007's GPU at 0000:3b:00
CORRECTED_AER = (
    f"pcieport {PORT}: AER: Multiple Corrected error received: {PORT}",
    f"pcieport {PORT}: PCIe Bus Error: severity=Corrected, type=Data Link Layer, (Transmitter ID)",
)
FATAL_AER = (
    f"pcieport {PORT}: AER: Uncorrected (Fatal) error received: 0000:3b:00.0",
    "nvidia 0000:3b:00.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Requester ID)",
)
EDAC_CE = (
    "EDAC MC1: 262 CE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0 "
    "(channel:1 slot:0 page:0x2031c14 offset:0x940 grain:32 syndrome:0x0)"
)
MCE_CORRECTED = "mce: [Hardware Error]: CPU 3: Machine Check: 0 Bank 7: cc00418000010091"
GHES_CORRECTED = "{1}[Hardware Error]: It has been corrected by h/w and requires no further action"
MCE_FATAL = "Kernel panic - not syncing: Fatal machine check"
EDAC_UE = (
    "EDAC MC1: 1 UE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0 "
    "(channel:1 slot:0 page:0x2031c14 offset:0x0 grain:32 - OVERFLOW)"
)


def start(job: str) -> JobEvent:
    return JobEvent("job_start", job, T0, nodes=NODES, user="alice")


def end(job: str, seconds: float, state: str) -> JobEvent:
    return JobEvent(
        "job_end", job, T0 + int(seconds * 1000), nodes=NODES, state=state, start_ms=T0, user="alice"
    )


def survivors_closing(seconds: float, peer: str = "gpu007", skip: str = "gpu007") -> list[LogLine]:
    """Every other rank's NCCL socket to the lost peer closes."""
    text = f"socketProgress: Connection closed by remote peer {peer}<38352>"
    return [
        line(f"{n}:2211:2290 [3] misc/socket.cc:50 NCCL WARN {text}", n, seconds + i * 0.1)
        for i, n in enumerate(NODES)
        if n != skip
    ]


def kernel(texts: tuple[str, ...] | list[str], host: str, seconds: float) -> list:
    return [line(text, host, seconds + i * 0.01, "dmesg") for i, text in enumerate(texts)]


def test_corrected_aer_alone_does_not_blame_hardware(engine):
    # gpu007's root port logs corrected data-link errors twice mid-run; the job then fails
    lines = [*kernel(CORRECTED_AER, "gpu007", 100), *kernel(CORRECTED_AER, "gpu007", 160)]
    verdict = verdict_of(engine, lines, [start("6001"), end("6001", 300, "FAILED")])
    assert verdict.sub_domain != "hardware"
    assert (verdict.sub_domain, verdict.responsible_nodes, verdict.root_symptom) == ("unattributed", [], None)
    assert roles(verdict) == {"pcie_aer_corrected": "context"}


@pytest.mark.parametrize(
    ("text", "symptom"),
    [
        (EDAC_CE, "host_memory_correctable"),
        (MCE_CORRECTED, "cpu_machine_check_corrected"),
        (GHES_CORRECTED, "firmware_hardware_error_corrected"),
        (
            "NVRM: Xid (PCI:0000:3b:00): 92, pid=1021, name=python, High single-bit ECC error rate",
            "gpu_excessive_sbe_rate",
        ),
    ],
)
def test_a_failed_job_with_only_corrected_memory_errors_names_the_node_but_no_drain_follows(
    engine, text, symptom
):
    verdict = verdict_of(engine, kernel([text], "gpu005", 120), [start("6002"), end("6002", 300, "FAILED")])
    assert (verdict.sub_domain, verdict.uncertainty_type) == ("hardware", "corrected_only")
    assert verdict.responsible_nodes == ["gpu005"]
    assert verdict.root_symptom.symptom == symptom
    assert roles(verdict) == {symptom: "root"}
    assert "only errors the hardware corrected" in verdict.detail
    # the default remediation rule acts on hardware blamed without doubt, never on this
    assert "corrected_only" not in Match().uncertainty


def test_corrected_dimm_errors_do_not_outweigh_the_users_own_oom(engine):
    lines = [
        *kernel([EDAC_CE], "gpu005", 60),
        line("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "gpu002", 200),
    ]
    verdict = verdict_of(engine, lines, [start("6007"), end("6007", 300, "FAILED")])
    assert verdict.sub_domain == "user"
    assert roles(verdict)["host_memory_correctable"] == "context"


@pytest.mark.parametrize(("state", "terminal"), [("COMPLETED", "success"), ("CANCELLED", "cancel")])
def test_corrected_dimm_errors_in_a_job_that_did_not_fail_blame_nothing(engine, state, terminal):
    verdict = verdict_of(engine, kernel([EDAC_CE], "gpu005", 60), [start("6008"), end("6008", 300, state)])
    assert verdict.terminal_state == terminal
    assert verdict.sub_domain != "hardware" and "gpu005" not in verdict.responsible_nodes


def test_corrected_dimm_errors_from_before_the_job_started_are_not_its_lead(engine):
    # logged during the previous tenant's run, inside the look-back: context, not this job's lead
    events = [
        JobEvent("job_start", "6009", T0 + 200_000, nodes=NODES, user="alice"),
        JobEvent("job_end", "6009", T0 + 400_000, nodes=NODES, state="FAILED", start_ms=T0 + 200_000),
    ]
    verdict = verdict_of(engine, kernel([EDAC_CE], "gpu005", 60), events)
    assert (verdict.sub_domain, verdict.responsible_nodes) == ("unattributed", [])


def test_corrected_aer_before_an_uncorrectable_one_on_the_same_device_is_its_context(engine):
    # the link degrades (corrected errors), then fails (fatal AER) and the GPU falls off the bus
    lines = [
        *kernel(CORRECTED_AER, "gpu007", 100),
        *kernel(FATAL_AER, "gpu007", 180),
        line(XID79, "gpu007", 181, "dmesg"),
        *survivors_closing(183),
    ]
    verdict = verdict_of(engine, lines, [start("6003"), end("6003", 300, "FAILED")])
    assert (verdict.sub_domain, verdict.responsible_nodes) == ("hardware", ["gpu007"])
    assert verdict.root_symptom.symptom == "gpu_fallen_off_bus"  # within 2 s of the fatal AER, it outranks it
    assert roles(verdict)["pcie_aer_fatal"] == "root"
    corrected = next(e for e in verdict.chain if e.symptom == "pcie_aer_corrected")
    assert corrected.role == "context"
    assert corrected.explained_by.startswith("refine.corrected-error-before-fault-is-context <- ")
    assert corrected.explained_by.endswith("kernel.pcie.aer-uncorrected-fatal@gpu007")


def test_corrected_ecc_before_a_fatal_machine_check_is_its_context_and_the_node_is_blamed(engine):
    lines = [
        *kernel([EDAC_CE, MCE_CORRECTED], "gpu005", 60),
        *kernel([EDAC_UE, MCE_FATAL], "gpu005", 200),
        *survivors_closing(202, peer="gpu005", skip="gpu005"),
    ]
    verdict = verdict_of(engine, lines, [start("6004"), end("6004", 300, "NODE_FAIL")])
    assert (verdict.sub_domain, verdict.responsible_nodes) == ("hardware", ["gpu005"])
    assert roles(verdict)["host_memory_correctable"] == "context"
    assert roles(verdict)["cpu_machine_check_corrected"] == "context"
    assert verdict.root_symptom.symptom in ("host_memory_uncorrectable", "cpu_machine_check_uncorrected")


def test_a_corrected_error_on_the_node_the_survivors_name_does_not_make_it_responsible(engine):
    # the survivors say gpu007 went away; gpu007 itself logged only corrected AER errors
    lines = [*kernel(CORRECTED_AER, "gpu007", 100), *survivors_closing(103)]
    verdict = verdict_of(engine, lines, [start("6005"), end("6005", 300, "FAILED")])
    assert (verdict.sub_domain, verdict.uncertainty_type) == ("ambiguous", "secondary_only")
    assert "gpu007" not in verdict.responsible_nodes
    assert roles(verdict)["pcie_aer_corrected"] == "context"


@pytest.mark.parametrize(
    "xid",
    [
        "NVRM: Xid (PCI:0000:3b:00): 48, pid=1021, name=python, An uncorrectable double bit error (DBE) "
        "has been detected on GPU in the framebuffer at partition 6, subpartition 0.",
        "NVRM: Xid (PCI:0000:9b:00): 94, pid=1234, name=python3, Contained ECC error",
        "NVRM: Xid (PCI:0000:3b:00): 95, pid=1021, name=python, Uncontained ECC error",
    ],
)
def test_an_uncorrectable_ecc_xid_alone_still_blames_its_gpu(engine, xid):
    # the other side of the line: 48, 94 and 95 are errors the GPU could not correct
    verdict = verdict_of(engine, kernel([xid], "gpu002", 100), [start("6006"), end("6006", 300, "FAILED")])
    assert (verdict.sub_domain, verdict.responsible_nodes) == ("hardware", ["gpu002"])
    assert verdict.uncertainty_type is None
