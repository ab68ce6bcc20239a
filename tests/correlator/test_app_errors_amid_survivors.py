"""A rank's own CUDA error, then its peers' transport errors (issue 6: right on real logs).

When one rank's kernel faults (a misaligned address, a cuBLAS failure, a GPU that reports an
uncorrectable ECC error to CUDA), that process dies and every other rank's NCCL connection to it
fails. The application error is weak evidence (the line alone does not prove whose bug or part it
is), but it is the only thing any node said about itself: the survivors' completion errors are its
echo, not a fabric failure.
"""

from __future__ import annotations

from streams.records import JobEvent, LogLine
from tests.correlator.conftest import T0, line
from tests.correlator.conftest import verdict_of as timeline_verdict

NODES = tuple(f"gpu{n:03d}" for n in range(1, 9))
IB_ERROR_12 = (
    "NET/IB : Got completion from peer 10.0.0.3<50066> with error 12, opcode 0, len 0, vendor err 129 (Send)"
)


def verdict_of(engine, lines: list[LogLine]):
    """The job runs on NODES from T0 and fails at 300 s; the lines come in time order."""
    start = JobEvent("job_start", "7001", T0, nodes=NODES, user="alice")
    end = JobEvent("job_end", "7001", T0 + 300_000, nodes=NODES, state="FAILED", start_ms=T0, user="alice")
    return timeline_verdict(engine, lines, [start, end], tick_s=1_000)


def survivors_complaining(seconds: float, dead: str = "gpu003") -> list[LogLine]:
    nccl = "{host}:2211:2290 [3] transport/net_ib.cc:1695 NCCL WARN " + IB_ERROR_12
    return [line(nccl.format(host=n), n, seconds + i * 0.2) for i, n in enumerate(NODES) if n != dead]


def test_a_misaligned_address_on_one_rank_is_the_users_and_the_peers_ib_errors_its_echo(engine):
    crash = "RuntimeError: CUDA error: misaligned address"
    verdict = verdict_of(engine, [line(crash, "gpu003", 100), *survivors_complaining(101)])
    assert (verdict.sub_domain, verdict.responsible_nodes) == ("user", [])
    assert verdict.root_symptom.symptom == "cuda_misaligned_address"
    ib = next(e for e in verdict.chain if e.symptom == "nccl_ib_completion_error")
    assert ib.role == "downstream"
    assert ib.explained_by.startswith("refine.transport-after-weak-fault <- ")


def test_cuda_reporting_an_uncorrectable_ecc_error_on_one_rank_points_at_that_node_not_the_fabric(engine):
    crash = "RuntimeError: CUDA error: uncorrectable ECC error encountered"
    verdict = verdict_of(engine, [line(crash, "gpu003", 100), *survivors_complaining(101)])
    assert (verdict.sub_domain, verdict.responsible_nodes) == ("hardware", ["gpu003"])
    assert verdict.uncertainty_type == "weak_evidence"  # no Xid seen: nothing a remediation acts on


def test_the_peers_ib_errors_long_after_a_ranks_cuda_error_are_not_its_echo(engine):
    # four minutes apart: the crash did not take the peers down, the fabric failed on its own
    crash = "RuntimeError: CUDA error: misaligned address"
    verdict = verdict_of(engine, [line(crash, "gpu003", 10), *survivors_complaining(250)])
    assert verdict.sub_domain != "user"
    ib = next(e for e in verdict.chain if e.symptom == "nccl_ib_completion_error")
    assert ib.role == "root"


def test_a_firmware_error_record_on_one_node_is_its_weak_fault_and_the_peers_ib_errors_its_echo(engine):
    # a GHES record that does not say whether the error was corrected is a weak hardware cause
    # (priority 20): it is still the only thing any node said about itself
    ghes = "kernel: {1}[Hardware Error]: Hardware error from APEI Generic Hardware Error Source: 4"
    verdict = verdict_of(engine, [line(ghes, "gpu003", 100, "dmesg"), *survivors_complaining(101)])
    assert (verdict.sub_domain, verdict.responsible_nodes) == ("hardware", ["gpu003"])
    assert verdict.uncertainty_type == "weak_evidence"
    ib = next(e for e in verdict.chain if e.symptom == "nccl_ib_completion_error")
    assert ib.explained_by.startswith("refine.transport-after-weak-fault <- kernel.apei.ghes-section")
