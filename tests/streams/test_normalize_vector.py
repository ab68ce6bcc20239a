"""Vector ``kafka`` sink JSON events (input-formats.md §3) to LogLines."""

from __future__ import annotations

from datetime import UTC, datetime

from streams.normalize import normalize_record
from streams.records import DeadLetter, LogLine

NCCL = "ng30903:3063028:3066152 [3] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'"


def utc_ms(text: str) -> int:
    stamp = datetime.fromisoformat(text)
    stamp = stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)
    return (stamp - datetime(1970, 1, 1, tzinfo=UTC)) // datetime.resolution // 1000


def test_vector_file_event_reads_message_host_and_rfc3339_timestamp() -> None:
    event = {"file": "/var/log/app/rank0.log", "host": "gpu001", "message": NCCL,
             "source_type": "file", "timestamp": "2020-03-13T20:45:38.119Z"}  # fmt: skip
    result = normalize_record("logs.applog", event, None, 1, "logs.applog:0:1")
    assert result.lines == [
        LogLine(NCCL, "gpu001", utc_ms("2020-03-13T20:45:38.119Z"), "applog", "logs.applog:0:1")
    ]


def test_vector_journald_event_keeps_every_journal_field_at_the_root() -> None:
    text = "NVRM: Xid (PCI:0000:b9:00): 74, pid=<unknown>, name=<unknown>, NVLink: fatal error"
    event = {"host": "gpu002", "message": text, "source_type": "journald",
             "timestamp": "2024-05-01T10:00:00.654321Z", "_HOSTNAME": "gpu002",
             "_TRANSPORT": "kernel", "SYSLOG_IDENTIFIER": "kernel", "PRIORITY": "4",
             "_BOOT_ID": "8f7e"}  # fmt: skip
    result = normalize_record("logs.dmesg", event, None, None, "o")
    assert result.lines == [LogLine(text, "gpu002", utc_ms("2024-05-01T10:00:00.654"), "dmesg", "o")]


def test_vector_syslog_event_prefers_the_senders_hostname_over_host() -> None:
    text = "mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link INIT"
    event = {"appname": "kernel", "facility": "kern", "host": "10.0.0.7", "hostname": "gpu003",
             "message": text, "msgid": "-", "procid": None, "severity": "info",
             "source_ip": "10.0.0.7", "source_type": "syslog",
             "timestamp": "2024-05-01T10:00:01Z", "version": 1}  # fmt: skip
    result = normalize_record("logs.syslog", event, None, None, "o")
    assert result.lines == [LogLine(text, "gpu003", utc_ms("2024-05-01T10:00:01Z"), "syslog", "o")]


def test_vector_zoneless_timestamp_is_utc_and_any_fraction_digits_are_accepted() -> None:
    event = {"host": "gpu001", "message": NCCL, "source_type": "file",
             "timestamp": "2024-05-01T10:00:00.123456789"}  # fmt: skip
    result = normalize_record("logs.applog", event, None, None, "o")
    assert result.lines[0].time_ms == utc_ms("2024-05-01T10:00:00.123")


def test_vector_timestamp_with_offset_is_converted_to_utc() -> None:
    event = {"host": "gpu001", "message": NCCL, "source_type": "file",
             "timestamp": "2024-05-01T12:00:00.5+02:00"}  # fmt: skip
    result = normalize_record("logs.applog", event, None, None, "o")
    assert result.lines[0].time_ms == utc_ms("2024-05-01T10:00:00.5")


def test_vector_unparsable_syslog_line_lands_whole_in_message_and_keeps_its_header() -> None:
    text = "<13>Feb 14 05:03:41 gpu009 kernel: NETDEV WATCHDOG: eth0 (ethoc): transmit queue 0"
    event = {"host": "10.0.0.9", "message": text, "source_type": "syslog",
             "timestamp": "2025-02-14T05:03:42Z"}  # fmt: skip
    result = normalize_record("logs.syslog", event, None, None, "o")
    assert result.lines == [LogLine(text, "gpu009", utc_ms("2025-02-14T05:03:41"), "syslog", "o")]


def test_vector_invalid_timestamp_is_a_dead_letter_naming_the_field() -> None:
    event = {"host": "gpu001", "message": NCCL, "source_type": "file", "timestamp": "13/03/2020"}
    result = normalize_record("logs.applog", event, None, 1, "o")
    reason = "log record field 'timestamp' is not a time: '13/03/2020'"
    assert result.dead == [DeadLetter(reason, "logs.applog", "o", event)]
