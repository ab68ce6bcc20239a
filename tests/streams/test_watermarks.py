"""The extractor's watermark is the slowest of its input partitions (streams/watermarks.py)."""

from __future__ import annotations

from datetime import UTC, datetime

from aiokafka.structs import ConsumerRecord

from streams.extract_worker import ExtractorWorker
from streams.settings import Settings
from streams.watermarks import InputWatermarks

IDLE_MS = 10_000
DAY1, DAY2, DAY3 = 1_714_557_600_000, 1_714_644_000_000, 1_714_730_400_000
SYSLOG0, SYSLOG1, SCHEDULER0 = ("logs.syslog", 0), ("logs.syslog", 1), ("events.scheduler", 0)


def _reading(*partitions: tuple[str, int], at_ms: int = 0) -> InputWatermarks:
    marks = InputWatermarks(IDLE_MS, instance="x")
    marks.assign(partitions, at_ms)
    return marks


def test_a_fast_partition_does_not_carry_the_watermark_past_a_slow_one():
    marks = _reading(SYSLOG0, SYSLOG1)
    marks.observe(SYSLOG0, DAY3, 100)  # one partition already read into day 3
    marks.observe(SYSLOG1, DAY1, 100)  # the other still on day 1
    assert marks.advance(100) == DAY1


def test_a_partition_that_said_nothing_yet_holds_the_watermark_until_it_is_idle():
    marks = _reading(SYSLOG0, SCHEDULER0, at_ms=0)
    marks.observe(SYSLOG0, DAY2, 1_000)
    assert marks.advance(1_000) == 0  # the scheduler's partition may still bring day 1
    marks.observe(SYSLOG0, DAY2 + 5, 9_999)
    assert marks.advance(9_999) == 0
    assert marks.advance(IDLE_MS) == DAY2 + 5  # silent since it was assigned: it drops out


def test_an_idle_partition_drops_out_and_one_that_speaks_again_never_moves_the_watermark_back():
    marks = _reading(SYSLOG0, SYSLOG1)
    marks.observe(SYSLOG0, DAY1, 0)
    marks.observe(SYSLOG1, DAY2, 0)
    marks.observe(SYSLOG1, DAY3, 8_000)
    assert marks.advance(8_000) == DAY1
    assert marks.advance(IDLE_MS) == DAY3  # syslog 0 has been quiet for the idle time
    marks.observe(SYSLOG0, DAY1 + 1, IDLE_MS + 1)  # a late line: syslog 0 is live again
    assert marks.advance(IDLE_MS + 1) == DAY3


def test_when_every_partition_is_idle_the_latest_time_read_stands_for_all():
    marks = _reading(SYSLOG0, SCHEDULER0)
    marks.observe(SCHEDULER0, DAY1, 0)  # its last job ended on day 1
    marks.observe(SYSLOG0, DAY3, 0)  # the lines went on to day 3, then the replay was over
    assert marks.advance(1) == DAY1
    assert marks.advance(IDLE_MS) == DAY3


def test_a_rebalance_starts_a_new_generation_held_by_the_partitions_it_brought():
    marks = _reading(SYSLOG0)
    marks.observe(SYSLOG0, DAY2, 0)
    assert (marks.advance(0), marks.source) == (DAY2, "x.0")
    marks.assign([SYSLOG0, SYSLOG1], 1_000)  # syslog 1 comes from another worker, maybe behind
    assert (marks.advance(1_000), marks.source) == (0, "x.1")
    marks.observe(SYSLOG0, DAY2 + 1, 1_100)
    marks.observe(SYSLOG1, DAY1, 1_100)
    assert marks.advance(1_100) == DAY1


def test_records_of_a_partition_taken_away_are_not_counted():
    marks = _reading(SYSLOG0, SYSLOG1)
    marks.assign([SYSLOG0], 0)
    marks.observe(SYSLOG1, DAY3, 0)  # fetched before the rebalance: its new owner's to count
    marks.observe(SYSLOG0, DAY1, 0)
    assert marks.advance(0) == DAY1


def test_the_batchs_watermark_record_names_its_extractor_and_the_slowest_partition(bundled_ruleset):
    worker = ExtractorWorker(Settings(), bundled_ruleset)
    worker.inputs.assign([SYSLOG0, SYSLOG1], 0)
    batch = [_syslog_record(SYSLOG0, DAY3), _syslog_record(SYSLOG1, DAY1)]
    mark = worker.process(batch).mark
    assert mark == {"t": "wm", "time_ms": DAY1, "source": worker.inputs.source, "idle_ms": IDLE_MS}
    assert worker.latest_ms == DAY3  # what data records still carry, for older correlators


def _syslog_record(partition: tuple[str, int], time_ms: int) -> ConsumerRecord:
    stamp = datetime.fromtimestamp(time_ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    line = f"<6>1 {stamp} gpu001 kernel - - - eth0: link up".encode()
    return ConsumerRecord(*partition, 0, time_ms, 0, b"gpu001", line, None, 0, 0, [])
