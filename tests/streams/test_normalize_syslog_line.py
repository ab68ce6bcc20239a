"""Raw string records: syslog (RFC 3164 / 5424), journalctl short-iso and dmesg lines."""

from __future__ import annotations

from datetime import UTC, datetime

from streams.normalize import normalize_record
from streams.normalize.log_record import NO_TIME
from streams.records import DeadLetter, LogLine


def utc_ms(text: str) -> int:
    stamp = datetime.fromisoformat(text)
    stamp = stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)
    return (stamp - datetime(1970, 1, 1, tzinfo=UTC)) // datetime.resolution // 1000


def normalize(text: str, key: str | None = "node-key", kafka: str | None = None) -> list[LogLine]:
    kafka_ms = utc_ms(kafka) if kafka else None
    result = normalize_record("logs.syslog", text, key, kafka_ms, "logs.syslog:@17")
    assert result.dead == []
    return result.lines


def test_rfc3164_line_takes_host_and_time_from_its_header_and_year_from_record_time() -> None:
    text = "Feb 14 05:03:41 000-000-00000-1-gpu-1 kernel: mlx5_core 0000:ab:00.0 mlx5_5: Link INIT"
    assert normalize(text, kafka="2025-02-14T05:03:42") == [
        LogLine(text, "000-000-00000-1-gpu-1", utc_ms("2025-02-14T05:03:41"), "syslog",
                "logs.syslog:@17")
    ]  # fmt: skip


def test_rfc3164_line_with_pri_and_space_padded_day() -> None:
    text = "<4>May  7 06:45:12 errol kernel: [21584690.529877] EDAC MC0: 4 CE error on CPU#0"
    [parsed] = normalize(text, kafka="2024-05-07T06:45:13")
    assert (parsed.host, parsed.time_ms) == ("errol", utc_ms("2024-05-07T06:45:12"))


def test_rfc3164_line_from_december_read_in_january_belongs_to_the_previous_year() -> None:
    [parsed] = normalize("Dec 31 23:59:50 gpu001 kernel: x", kafka="2025-01-01T00:00:05")
    assert parsed.time_ms == utc_ms("2024-12-31T23:59:50")


def test_rfc3164_line_slightly_ahead_of_the_record_time_keeps_the_records_year() -> None:
    # Clock skew of hours, not a year: within one day ahead is still this year.
    [parsed] = normalize("May  1 20:00:00 gpu001 kernel: x", kafka="2024-05-01T10:00:00")
    assert parsed.time_ms == utc_ms("2024-05-01T20:00:00")


def test_rfc3164_feb_29_in_a_non_leap_year_goes_to_the_latest_leap_year() -> None:
    [parsed] = normalize("Feb 29 12:00:00 gpu001 kernel: x", kafka="2025-03-01T00:00:00")
    assert parsed.time_ms == utc_ms("2024-02-29T12:00:00")


def test_rfc3164_line_without_any_record_time_takes_the_year_of_the_callers_reference() -> None:
    # a backtest of a recording made in January 2025, run in 2026, still dates its lines in 2024
    text = "Dec 31 23:59:58 gpu001 kernel: NVRM: GPU0 PMU has halted."
    reference = utc_ms("2025-01-02T00:00:00")
    result = normalize_record("logs.syslog", text, "node-key", None, "logs.syslog:@17", reference_ms=reference)
    assert [line.time_ms for line in result.lines] == [utc_ms("2024-12-31T23:59:58")]


def test_the_record_time_not_the_callers_reference_dates_a_line_without_a_year() -> None:
    text = "Mar 27 17:40:36 gpu001 kernel: NVRM: GPU0 PMU has halted."
    kafka, reference = utc_ms("2023-03-28T00:00:00"), utc_ms("2026-07-01T00:00:00")
    result = normalize_record("logs.syslog", text, "node-key", kafka, "logs.syslog:@17", reference_ms=reference)
    assert [line.time_ms for line in result.lines] == [utc_ms("2023-03-27T17:40:36")]


def test_rfc3164_line_with_no_record_time_and_no_reference_is_dead_not_dated_by_the_clock() -> None:
    result = normalize_record("logs.syslog", "Mar 27 17:40:36 gpu001 kernel: x", None, None, "logs.syslog:@17")
    assert result.lines == []
    assert [dead.reason for dead in result.dead] == [NO_TIME]


def test_rfc3164_line_without_host_in_header_takes_host_from_record_key() -> None:
    text = "Mar 27 17:40:36 kernel: NVRM: GPU0 _kgspRpcGspEventPmuHalted: PMU has halted."
    [parsed] = normalize(text, key="gpu042", kafka="2025-03-27T17:40:37")
    assert (parsed.host, parsed.time_ms) == ("gpu042", utc_ms("2025-03-27T17:40:36"))


def test_rfc5424_line_takes_time_and_host_from_header() -> None:
    text = "<34>1 2024-05-01T10:00:00.123Z gpu001 kernel - - [meta seq=1] NVRM: Xid 79"
    assert normalize(text, kafka="2024-05-01T11:00:00") == [
        LogLine(text, "gpu001", utc_ms("2024-05-01T10:00:00.123"), "syslog", "logs.syslog:@17")
    ]


def test_rfc5424_nil_hostname_falls_back_to_record_key() -> None:
    [parsed] = normalize("<34>1 2024-05-01T10:00:00Z - app 12 - - msg", key="gpu005")
    assert (parsed.host, parsed.time_ms) == ("gpu005", utc_ms("2024-05-01T10:00:00"))


def test_journalctl_short_iso_line_takes_time_and_host_from_header() -> None:
    text = "2024-05-01T10:00:00+0000 gpu001 kernel: NVRM: Xid (PCI:0000:e4:00): 79"
    [parsed] = normalize(text, key=None)
    assert (parsed.text, parsed.host, parsed.time_ms) == (
        text, "gpu001", utc_ms("2024-05-01T10:00:00")
    )  # fmt: skip


def test_dmesg_bracket_time_is_not_wall_clock() -> None:
    text = "[   49.261458] NVRM: GPU at 0000:01:00.0 has fallen off the bus."
    assert normalize(text, key="gpu001", kafka="2024-05-01T10:00:00.5") == [
        LogLine(text, "gpu001", utc_ms("2024-05-01T10:00:00.5"), "syslog", "logs.syslog:@17")
    ]


def test_dmesg_raw_priority_prefix_and_delta_brackets_are_not_wall_clock_either() -> None:
    kafka = "2024-05-01T10:00:00"
    for text in ("<6>[    2.962781] mlx5_core 0000:41:00.1: Port module event: Cable unplugged",
                 "[  +0.000041] pcieport 0000:00:03.0: AER: device recovery failed"):  # fmt: skip
        [parsed] = normalize(text, key="gpu001", kafka=kafka)
        assert (parsed.text, parsed.host, parsed.time_ms) == (text, "gpu001", utc_ms(kafka))


def test_dmesg_human_time_is_wall_clock_read_as_utc() -> None:
    text = "[Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>'"
    [parsed] = normalize(text, key="gpu001", kafka="2024-08-30T12:00:00")
    assert (parsed.host, parsed.time_ms) == ("gpu001", utc_ms("2024-08-30T11:43:09"))


def test_dmesg_human_time_with_space_padded_day() -> None:
    text = "[Sat Apr  3 05:23:42 2021] watchdog: BUG: soft lockup - CPU#7 stuck for 23s!"
    [parsed] = normalize(text, kafka="2024-01-01T00:00:00")
    assert parsed.time_ms == utc_ms("2021-04-03T05:23:42")


def test_dmesg_decoded_iso_time_format_is_wall_clock() -> None:
    text = "kern  :warn  : 2025-01-21T04:41:44,283575+00:00 NVRM: Xid (PCI:0000:38:00): 43"
    [parsed] = normalize(text, key="gpu001", kafka="2025-01-21T05:00:00")
    assert parsed.time_ms == utc_ms("2025-01-21T04:41:44.283")


def test_fabric_manager_bracket_time_is_wall_clock() -> None:
    text = "[Feb 27 2025 15:10:02] [ERROR] [tid 12727] detected NVSwitch non-fatal error 12028"
    [parsed] = normalize(text, kafka="2025-03-01T00:00:00")
    assert parsed.time_ms == utc_ms("2025-02-27T15:10:02")


def test_line_without_header_takes_host_from_key_and_time_from_kafka() -> None:
    text = "slurmstepd: error: *** STEP 32233190.0 ON nid01934 CANCELLED AT 2020-07-03T02:59:56"
    assert normalize(text, key="nid01934", kafka="2020-07-03T03:00:00") == [
        LogLine(text, "nid01934", utc_ms("2020-07-03T03:00:00"), "syslog", "logs.syslog:@17")
    ]


def test_text_that_merely_starts_like_a_header_is_not_one() -> None:
    for text in ("May I have your attention", "2024 was a leap year", "[E ProcessGroupNCCL.cpp]"):
        [parsed] = normalize(text, key="gpu001", kafka="2024-05-01T00:00:00")
        assert (parsed.host, parsed.time_ms) == ("gpu001", utc_ms("2024-05-01T00:00:00"))


def test_rsyslog_012_escape_splits_into_lines() -> None:
    text = "Feb 14 05:03:41 gpu001 python[77]: Traceback:#012  File x.py#012RuntimeError: boom"
    lines = normalize(text, kafka="2025-02-14T05:03:42")
    stamp = utc_ms("2025-02-14T05:03:41")
    assert lines == [
        LogLine("Feb 14 05:03:41 gpu001 python[77]: Traceback:", "gpu001", stamp, "syslog",
                "logs.syslog:@17#0"),
        LogLine("  File x.py", "gpu001", stamp, "syslog", "logs.syslog:@17#1"),
        LogLine("RuntimeError: boom", "gpu001", stamp, "syslog", "logs.syslog:@17#2"),
    ]  # fmt: skip


def test_trailing_newline_and_carriage_return_are_stripped() -> None:
    [parsed] = normalize("NVRM: Xid 79\r\n", kafka="2024-05-01T00:00:00")
    assert parsed.text == "NVRM: Xid 79"


def test_dmesg_line_without_record_key_is_a_dead_letter() -> None:
    text = "[   49.261458] NVRM: GPU at 0000:01:00.0 has fallen off the bus."
    result = normalize_record("logs.dmesg", text, None, 1714560000000, "logs.dmesg:@3")
    reason = "log line without a host: no host in the line header, no record key"
    assert result.dead == [DeadLetter(reason, "logs.dmesg", "logs.dmesg:@3", text)]
    assert result.lines == []


def test_line_without_time_and_without_kafka_timestamp_is_a_dead_letter() -> None:
    text = "[   49.261458] NVRM: GPU at 0000:01:00.0 has fallen off the bus."
    result = normalize_record("logs.dmesg", text, "gpu001", None, "o")
    reason = "no event time: no time in the line, no record time field, no Kafka timestamp"
    assert result.dead == [DeadLetter(reason, "logs.dmesg", "o", text)]


def test_blank_string_is_an_empty_log_line_dead_letter() -> None:
    result = normalize_record("logs.syslog", "#012\n \n", "gpu001", 1, "o")
    assert result.dead == [DeadLetter("empty log line", "logs.syslog", "o", "#012\n \n")]
