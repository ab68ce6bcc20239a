"""Fluent Bit ``out_kafka`` JSON records (input-formats.md §2) to LogLines."""

from __future__ import annotations

from datetime import UTC, datetime

from streams.normalize import Normalized, normalize_record
from streams.records import DeadLetter, LogLine

XID79 = "NVRM: Xid (PCI:0000:e4:00): 79, pid=1234, name=python, GPU has fallen off the bus."
KAFKA_MS = 1714560005000  # 2024-05-01T10:40:05Z


def utc_ms(text: str) -> int:
    stamp = datetime.fromisoformat(text).replace(tzinfo=UTC)
    return (stamp - datetime(1970, 1, 1, tzinfo=UTC)) // datetime.resolution // 1000


def line(text: str, host: str | None, time_ms: int, source: str, origin: str) -> LogLine:
    return LogLine(text=text, host=host, time_ms=time_ms, source=source, origin=origin)


def test_fluentbit_tail_record_takes_host_from_hostname_field() -> None:
    record = {"@timestamp": 1714560000.123456, "log": XID79, "hostname": "gpu001"}
    result = normalize_record("logs.dmesg", record, None, KAFKA_MS, "logs.dmesg:0:7")
    assert result == Normalized([line(XID79, "gpu001", 1714560000123, "dmesg", "logs.dmesg:0:7")], [], [])


def test_fluentbit_tail_record_without_host_field_takes_host_from_record_key() -> None:
    record = {"@timestamp": 1714560000.5, "log": XID79}
    result = normalize_record("logs.dmesg", record, "gpu002", KAFKA_MS, "logs.dmesg:1:3")
    assert result.lines == [line(XID79, "gpu002", 1714560000500, "dmesg", "logs.dmesg:1:3")]


def test_fluentbit_tail_record_without_any_host_is_a_dead_letter() -> None:
    record = {"@timestamp": 1714560000.5, "log": XID79}
    result = normalize_record("logs.dmesg", record, None, KAFKA_MS, "logs.dmesg:1:4")
    reason = "log record without a host: no host/hostname/_HOSTNAME field, no record key"
    assert result == Normalized([], [], [DeadLetter(reason, "logs.dmesg", "logs.dmesg:1:4", record)])


def test_fluentbit_tail_line_keeps_its_syslog_header_and_its_own_time_and_host_win() -> None:
    text = "Feb 14 05:03:41 000-000-00000-1-gpu-1 kernel: mlx5_core 0000:ab:00.0 mlx5_5: Port: 1"
    # Shipped late by a relay host: the line's header names the node and the moment.
    record = {"@timestamp": utc_ms("2025-02-14T06:00:00") / 1000, "log": text, "host": "relay01"}
    result = normalize_record("logs.syslog", record, None, None, "logs.syslog:0:1")
    assert result.lines == [
        line(text, "000-000-00000-1-gpu-1", utc_ms("2025-02-14T05:03:41"), "syslog", "logs.syslog:0:1")
    ]


def test_fluentbit_systemd_record_reads_MESSAGE_and__HOSTNAME() -> None:
    record = {
        "@timestamp": 1714560000.25,
        "MESSAGE": XID79,
        "_HOSTNAME": "gpu003",
        "SYSLOG_IDENTIFIER": "kernel",
        "PRIORITY": "3",
        "_TRANSPORT": "kernel",
    }
    result = normalize_record("logs.syslog", record, None, KAFKA_MS, "logs.syslog:0:2")
    # _TRANSPORT=kernel is a dmesg line, but the topic decides the source (docs/formats.md).
    assert result.lines == [line(XID79, "gpu003", 1714560000250, "syslog", "logs.syslog:0:2")]


def test_fluentbit_systemd_strip_underscores_spelling_reads_HOSTNAME() -> None:
    record = {"@timestamp": 1714560000.0, "MESSAGE": XID79, "HOSTNAME": "gpu004"}
    result = normalize_record("logs.syslog", record, None, KAFKA_MS, "o")
    assert result.lines == [line(XID79, "gpu004", 1714560000000, "syslog", "o")]


def test_fluentbit_systemd_lowercase_spelling_reads_message_and__hostname() -> None:
    record = {"@timestamp": 1714560000.0, "message": XID79, "_hostname": "gpu005"}
    result = normalize_record("logs.syslog", record, None, KAFKA_MS, "o")
    assert result.lines == [line(XID79, "gpu005", 1714560000000, "syslog", "o")]


def test_fluentbit_kmsg_record_reads_msg_and_never_trusts_sec_since_boot() -> None:
    record = {"@timestamp": 1714560000.75, "priority": 3, "sequence": 812, "sec": 49,
              "usec": 261458, "msg": XID79}  # fmt: skip
    result = normalize_record("logs.dmesg", record, "gpu006", KAFKA_MS, "o")
    assert result.lines == [line(XID79, "gpu006", 1714560000750, "dmesg", "o")]


def test_fluentbit_kubernetes_filter_record_takes_host_and_workload_from_kubernetes_map() -> None:
    text = "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.06 GiB."
    record = {
        "@timestamp": 1714560000.0,
        "time": "2024-05-01T10:40:00.000123456Z",
        "stream": "stderr",
        "log": text + "\n",
        "kubernetes": {
            "pod_name": "train-worker-0-3-x7k2p",
            "namespace_name": "ml",
            "host": "gpu-node-7",
            "container_name": "trainer",
            "labels": {
                "batch.kubernetes.io/job-name": "train-worker-0",
                "jobset.sigs.k8s.io/jobset-name": "train",
            },
        },
    }
    result = normalize_record("logs.applog", record, None, KAFKA_MS, "logs.applog:2:9")
    assert result.lines == [
        LogLine(text, "gpu-node-7", 1714560000000, "applog", "logs.applog:2:9", "k8s:ml/train")
    ]


def test_fluentbit_iso8601_timestamp_format_is_read_as_utc() -> None:
    record = {"@timestamp": "2024-05-01T10:00:00.123456Z", "log": XID79, "host": "gpu001"}
    result = normalize_record("logs.dmesg", record, None, None, "o")
    assert result.lines[0].time_ms == utc_ms("2024-05-01T10:00:00.123")


def test_fluentbit_syslog_input_record_uses_host_and_keeps_message_as_shipped() -> None:
    record = {"@timestamp": 1714557600.5, "pri": "4", "time": "2024-05-01T10:00:00.123Z",
              "host": "gpu007", "ident": "kernel", "pid": "-", "msgid": "-",
              "extradata": "-", "message": XID79}  # fmt: skip
    result = normalize_record("logs.syslog", record, None, KAFKA_MS, "o")
    assert result.lines == [line(XID79, "gpu007", 1714557600500, "syslog", "o")]


def test_fluentbit_record_without_time_field_falls_back_to_kafka_timestamp() -> None:
    record = {"log": XID79, "host": "gpu001"}
    result = normalize_record("logs.dmesg", record, None, KAFKA_MS, "o")
    assert result.lines == [line(XID79, "gpu001", KAFKA_MS, "dmesg", "o")]


def test_fluentbit_multiline_log_yields_one_line_per_row_with_numbered_origins() -> None:
    text = 'Traceback (most recent call last):\n  File "train.py", line 3\n\nRuntimeError: x\n'
    record = {"@timestamp": 1714560000.0, "log": text, "host": "gpu001"}
    result = normalize_record("logs.applog", record, None, None, "logs.applog:0:5")
    assert result.lines == [
        line("Traceback (most recent call last):", "gpu001", 1714560000000, "applog",
             "logs.applog:0:5#0"),
        line('  File "train.py", line 3', "gpu001", 1714560000000, "applog", "logs.applog:0:5#1"),
        line("RuntimeError: x", "gpu001", 1714560000000, "applog", "logs.applog:0:5#2"),
    ]  # fmt: skip


def test_fluentbit_invalid_timestamp_is_a_dead_letter_naming_the_field() -> None:
    record = {"@timestamp": "yesterday", "log": XID79, "host": "gpu001"}
    result = normalize_record("logs.dmesg", record, None, KAFKA_MS, "o")
    reason = "log record field '@timestamp' is not a time: 'yesterday'"
    assert result.dead == [DeadLetter(reason, "logs.dmesg", "o", record)]
    assert result.lines == []


def test_fluentbit_record_without_text_field_is_a_dead_letter() -> None:
    record = {"@timestamp": 1714560000.0, "host": "gpu001", "stream": "stdout"}
    result = normalize_record("logs.dmesg", record, None, KAFKA_MS, "o")
    reason = "log record without text: no log/message/MESSAGE/msg field"
    assert result.dead == [DeadLetter(reason, "logs.dmesg", "o", record)]


def test_fluentbit_record_with_non_string_text_is_a_dead_letter() -> None:
    record = {"@timestamp": 1714560000.0, "host": "gpu001", "log": {"nested": 1}}
    result = normalize_record("logs.dmesg", record, None, KAFKA_MS, "o")
    reason = "log record field 'log' is a dict, not a string"
    assert result.dead == [DeadLetter(reason, "logs.dmesg", "o", record)]


def test_fluentbit_record_with_blank_log_is_an_empty_log_line_dead_letter() -> None:
    record = {"@timestamp": 1714560000.0, "host": "gpu001", "log": " \n"}
    result = normalize_record("logs.dmesg", record, None, KAFKA_MS, "o")
    assert result.dead == [DeadLetter("empty log line", "logs.dmesg", "o", record)]


def test_fluentbit_record_with_no_time_anywhere_is_a_no_event_time_dead_letter() -> None:
    record = {"log": XID79, "host": "gpu001"}
    result = normalize_record("logs.dmesg", record, None, None, "o")
    reason = "no event time: no time in the line, no record time field, no Kafka timestamp"
    assert result.dead == [DeadLetter(reason, "logs.dmesg", "o", record)]
