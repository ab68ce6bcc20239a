"""Node-local storage failures told as timelines on the bundled rules (issue 6: right on real logs).

md software RAID and dm-multipath sit between a job's file I/O and the disks or the SAN. When
an array loses more disks than it can survive, the node's own hardware failed; when every path to
a SAN volume goes at once, the array or the fabric did; one failed path, or one failed mirror
member, is not enough to drain a node while something stronger explains the job's end.
"""

from __future__ import annotations

from streams.records import JobEvent, LogLine
from tests.correlator.conftest import T0
from tests.correlator.conftest import verdict_of as timeline_verdict

NODES = tuple(f"gpu{n:03d}" for n in range(1, 5))

RAID_LOST = (  # the shape of a real RAID5 collapse (1000001101000/Debian_on_Buffalo#161)
    "I/O error, dev sdb, sector 14008336 op 0x1:(WRITE) flags 0x800 phys_seg 1 prio class 2",
    "md: super_written gets error=-5",
    "md/raid:md2: Disk failure on sdb6, disabling device.",
    "md/raid:md2: Cannot continue operation (2/4 failed).",
    "EXT4-fs error (device md2): ext4_journal_check_start:83: comm python: Detected aborted journal",
)
SAN_LOST = (
    "sd 10:0:0:0: rejecting I/O to offline device",
    "device-mapper: multipath: 253:2: Failing path 8:32.",
    "EXT4-fs warning (device dm-2): ext4_end_bio:343: I/O error 10 writing to inode 24117995 "
    "(offset 0 size 0 starting block 96511296)",
)
SAN_DAEMON = (
    "multipathd[4554]: mpatha: sdc - tur checker reports path is down",
    "multipathd[4554]: mpatha: remaining active paths: 0",
)
OOM = (
    "python invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), order=0, oom_score_adj=0",
    "Out of memory: Killed process 4242 (python) total-vm:912345678kB, anon-rss:501234567kB, "
    "file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:990000kB oom_score_adj:0",
)


def lines(texts: tuple[str, ...], host: str, seconds: float, source: str = "dmesg") -> list[LogLine]:
    return [
        LogLine(text, host, T0 + int((seconds + i * 0.01) * 1000), source, f"story:{host}:{seconds}:{i}")
        for i, text in enumerate(texts)
    ]


def verdict_of(engine, story: list[LogLine], job: str):
    events = [
        JobEvent("job_start", job, T0, nodes=NODES, user="alice"),
        JobEvent("job_end", job, T0 + 300_000, nodes=NODES, state="FAILED", start_ms=T0, user="alice"),
    ]
    return timeline_verdict(engine, story, events, tick_s=400)


def test_a_raid_array_that_lost_its_disks_blames_that_node_as_hardware(engine):
    verdict = verdict_of(engine, lines(RAID_LOST, "gpu003", 120), "7101")
    assert (verdict.sub_domain, verdict.responsible_nodes) == ("hardware", ["gpu003"])
    assert verdict.root_symptom.symptom == "md_array_failed"


def test_every_path_to_the_san_volume_lost_is_the_storage_infrastructure_not_the_node(engine):
    story = [*lines(SAN_LOST, "gpu004", 90), *lines(SAN_DAEMON, "gpu004", 91, "syslog")]
    verdict = verdict_of(engine, story, "7102")
    assert verdict.sub_domain == "infrastructure"
    assert verdict.root_symptom.symptom == "multipath_all_paths_lost"


def test_one_failed_path_with_others_left_is_an_echo_that_blames_nobody(engine):
    story = [
        *lines(SAN_LOST[1:2], "gpu002", 90),
        *lines(("multipathd[4554]: mpatha: sdc - tur checker reports path is down",), "gpu002", 91, "syslog"),
        *lines(("multipathd[4554]: mpatha: remaining active paths: 1",), "gpu002", 91.5, "syslog"),
    ]
    verdict = verdict_of(engine, story, "7103")
    # the lines do not say whether the HBA, the cable, the switch or the array port failed
    assert (verdict.sub_domain, verdict.responsible_nodes) == ("ambiguous", [])
    assert all(element.symptom == "multipath_path_failed" for element in verdict.chain)


def test_a_degraded_mirror_does_not_outrank_the_jobs_own_out_of_memory_kill(engine):
    member_failed = ("md/raid1:md0: Disk failure on nvme1n1p1, disabling device.",)
    story = [*lines(member_failed, "gpu001", 60), *lines(OOM, "gpu001", 200)]
    verdict = verdict_of(engine, story, "7104")
    assert verdict.sub_domain == "user"
    assert verdict.root_symptom.symptom != "md_member_failed"


CHECKPOINT_EIO = (
    "ERROR: megatron.core.dist_checkpointing.strategies.filesystem_async: Local process 0 encountered an "
    "error: [Errno 5] Input/output error",
)
MEDIUM_ERROR = ("blk_update_request: critical medium error, dev nvme0n1, sector 1953524992",)


def test_a_checkpoint_eio_alone_is_the_storage_and_blames_no_node(engine):
    verdict = verdict_of(engine, lines(CHECKPOINT_EIO, "gpu002", 200, "applog"), "7105")
    assert (verdict.sub_domain, verdict.responsible_nodes) == ("infrastructure", [])
    assert verdict.uncertainty_type == "weak_evidence"


def test_a_checkpoint_eio_after_the_nodes_own_disk_failed_is_that_disks_echo(engine):
    story = lines(MEDIUM_ERROR, "gpu002", 199) + lines(CHECKPOINT_EIO, "gpu002", 200, "applog")
    verdict = verdict_of(engine, story, "7106")
    assert (verdict.sub_domain, verdict.responsible_nodes) == ("hardware", ["gpu002"])
    [eio] = [step for step in verdict.chain if step.rule_id == "storage.app.io-error"]
    assert eio.role == "downstream" and eio.explained_by.startswith("refine.io-error-after-disk-fault")
