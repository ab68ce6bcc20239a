"""Real lines people posted (/work/shared/corpus/real-lines.jsonl, copied verbatim by id).

Each is shipped as a raw string with the node as the Kafka key and a Kafka timestamp of
2025-06-01T12:00:00Z: the line keeps its text, and takes its own header's host and wall-clock
time when it has them, else the key and the Kafka timestamp.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from streams.normalize import normalize_record
from streams.records import LogLine

KEY = "node-from-key"
KAFKA = "2025-06-01T12:00:00"


def utc_ms(text: str) -> int:
    stamp = datetime.fromisoformat(text).replace(tzinfo=UTC)
    return (stamp - datetime(1970, 1, 1, tzinfo=UTC)) // datetime.resolution // 1000


# (corpus id, line, expected host, expected time: the line's own, or KAFKA)
REAL = [
    ("nvidia_xid-004", "[   49.261458] NVRM: GPU at 0000:01:00.0 has fallen off the bus.",
     KEY, KAFKA),
    ("infiniband_nic-001", "Feb 14 05:03:41 000-000-00000-1-gpu-1 kernel: mlx5_core "
     "0000:ab:00.0 mlx5_5: Port: 1 Link INIT", "000-000-00000-1-gpu-1", "2025-02-14T05:03:41"),
    ("nvidia_xid-005", "[Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 13, "
     "pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): "
     "Illegal Instruction Parameter", KEY, "2024-08-30T11:43:09"),
    ("kernel-003", "May  7 06:45:12 errol kernel: [21584690.529877] EDAC MC0: 4 CE error on "
     "CPU#0Channel#2_DIMM#0 (channel:2 slot:0 page:0x0 offset:0x0 grain:8 syndrome:0x0)",
     "errol", "2025-05-07T06:45:12"),
    ("kernel-025", "[  +0.000041] pcieport 0000:00:03.0: AER: device recovery failed",
     KEY, KAFKA),
    ("kernel-026", "Sep 19 16:18:02 bubz kernel: [68183.615810] pcieport 0000:00:03.1: PCIe "
     "Bus Error: severity=Correctable, type=Data Link Layer, (Transmitter ID)",
     "bubz", "2024-09-19T16:18:02"),
    ("storage-001", "[Mon Oct 16 09:54:43 2017] LNet: 2431:0:(o2iblnd_cb.c:3174:"
     "kiblnd_check_conns()) Timed out tx for 172.31.126.87@o2ib: 403055 seconds",
     KEY, "2017-10-16T09:54:43"),
    ("infiniband_nic-008", "Mon Apr  6 14:58:07 2020[1,1]<stdout>:[1586174287.331106] "
     "[clx-hercules-015:32494:0]     ib_mlx5_dv.c:217  UCX  ERROR mlx5dv_devx_qp_modify(503) "
     "failed, syndrome 0: Invalid argument", KEY, KAFKA),
    ("nic-006", "May  6 19:47:25 workstation kernel: [   14.122958] igb 0000:09:00.0: "
     "Detected Tx Unit Hang", "workstation", "2025-05-06T19:47:25"),
    ("infiniband_nic-009", "Dec 02 09:56:04 node1 kernel: mlx5_core 0000:d2:00.0: "
     "mlx5_cmd_out_err:838:(pid 1441871): ACCESS_REG(0x805) op_mod(0x1) failed, status bad "
     "operation(0x2), syndrome (0x9a6171), err(-22)", "node1", "2024-12-02T09:56:04"),
    ("nvswitch-001", "kern  :err   : 2025-01-25T10:34:54,859532+00:00 nvidia-nvswitch1: SXid "
     "(PCI:0000:84:00.0): 12028, Data {0x000001c0, 0x00bd5c8a, 0x00000500, 0x00000064, "
     "0x00000000, 0x40008000, 0x5a001100, 0x00000000, 0x00000000}",
     KEY, "2025-01-25T10:34:54.859"),
    ("infiniband_nic-010", "<6>[    2.962781] mlx5_core 0000:41:00.1: Port module event: "
     "module 1, Cable unplugged", KEY, KAFKA),
    ("nvidia_xid-032", "Mar 27 17:40:36 kernel: NVRM: GPU0 _kgspRpcGspEventPmuHalted: "
     "Received signal from GSP that PMU has halted.", KEY, "2025-03-27T17:40:36"),
    ("fabric_manager-005", "[Feb 27 2025 15:10:02] [ERROR] [tid 12727] detected NVSwitch "
     "non-fatal error 12028 on fid 0 on NVSwitch pci bus id 00000000:86:00.0 physical id 3 "
     "port 61", KEY, "2025-02-27T15:10:02"),
    ("nvidia_xid-047", "Dec  2 11:38:27 worker4 kernel: [  199.234935] NVRM: GPU 0000:0a:00.0: "
     "rm_init_adapter failed, device minor number 5", "worker4", "2024-12-02T11:38:27"),
    ("scheduler-017", "Feb 24 09:21:38 nrel-control.novalocal slurmctld[26180]: error: "
     "Duplicated NodeHostName nrel-hpc-0 in the config file",
     "nrel-control.novalocal", "2025-02-24T09:21:38"),
    ("kernel-036", "<0>[ 3098.275469] Kernel panic - not syncing: Test panic triggered by "
     "crash_test module", KEY, KAFKA),
    ("kernel-014", "[Sat Apr  3 05:23:42 2021] watchdog: BUG: soft lockup - CPU#7 stuck for "
     "23s! [pytest:25222]", KEY, "2021-04-03T05:23:42"),
    ("storage-010", "Oct 24 00:11:11 figgy-web-staging1 kernel: nfs: server "
     "td-mf-cl2.princeton.edu not responding, still trying",
     "figgy-web-staging1", "2024-10-24T00:11:11"),
]  # fmt: skip


@pytest.mark.parametrize(("corpus_id", "text", "host", "when"), REAL, ids=[r[0] for r in REAL])
def test_real_line_keeps_its_text_and_takes_its_own_host_and_time_when_it_has_them(
    corpus_id: str, text: str, host: str, when: str
) -> None:
    result = normalize_record("logs.syslog", text, KEY, utc_ms(KAFKA), f"logs.syslog:@{corpus_id}")
    assert result.lines == [LogLine(text, host, utc_ms(when), "syslog", f"logs.syslog:@{corpus_id}")]


def test_real_lines_inside_fluentbit_records_behave_the_same() -> None:
    for corpus_id, text, host, when in REAL:
        record = {"@timestamp": utc_ms(KAFKA) / 1000, "log": text, "host": KEY}
        [parsed] = normalize_record("logs.dmesg", record, None, None, corpus_id).lines
        assert (parsed.text, parsed.host, parsed.time_ms) == (text, host, utc_ms(when)), corpus_id
