"""Collectors read what the log lines say, and say "NA" where the lines are silent."""

from __future__ import annotations

from streams.api.collectors import EvidenceLine, collect
from streams.api.xid_resolution import resolution_for


def test_silent_logs_give_na_everywhere():
    collected = collect([EvidenceLine("[rank 0] iteration 5 | loss 2.1", "gpu001", 0)], None)
    assert set(collected.values()) == {"NA"}


def test_a_peer_closing_the_connection_by_host_name_is_a_pair_once():
    lines = [
        EvidenceLine("gpu002:1:2 [0] NCCL WARN Connection closed by remote peer gpu007<50066>", "gpu002", 1),
        EvidenceLine("gpu002:1:2 [0] NCCL WARN Connection closed by remote peer gpu007<50066>", "gpu002", 2),
        EvidenceLine("gpu003:1:2 [0] NCCL WARN Connection closed by remote peer gpu007<50070>", "gpu003", 3),
    ]
    assert collect(lines, None)["bad_pairs"] == [
        {"node": "gpu002", "peer": "gpu007"},
        {"node": "gpu003", "peer": "gpu007"},
    ]


def test_the_watchdog_time_is_its_first_line_and_cuda_comes_from_nvidia_smi():
    lines = [
        EvidenceLine(
            "Watchdog caught collective operation timeout: ... ran for 1800000 milliseconds", "a", 2000
        ),
        EvidenceLine(
            "Watchdog caught collective operation timeout: ... ran for 1800000 milliseconds", "b", 1000
        ),
        EvidenceLine("| NVIDIA-SMI 550.54.15   Driver Version: 550.54.15   CUDA Version: 12.4 |", "a", 0),
    ]
    collected = collect(lines, None)
    assert (collected["watchdog_error_time"], collected["watchdog_timeout_seconds"]) == (
        "1970-01-01T00:00:01.000Z",
        1800.0,
    )
    assert collected["cuda_version"] == "12.4"


def test_the_xid_catalog_bucket_splits_repairs_from_investigations():
    assert resolution_for("XID-79") == (["RESTART_BM"], "NA")
    assert resolution_for("XID-48") == ("NA", ["WORKFLOW_XID_48"])
    assert resolution_for("XID-13") == (["RESTART_APP"], "NA")
    assert resolution_for("XID-9999") == ("NA", "NA")  # not in the catalog: no guess
    assert resolution_for("SXID-11012") == ("NA", "NA")
