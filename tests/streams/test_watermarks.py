"""The extractor's watermark is the slowest of its input partitions (streams/watermarks.py)."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

from aiokafka.structs import ConsumerRecord, TopicPartition

from streams.extract_worker import SESSION_TIMEOUT_MS, ExtractorWorker, more_to_read
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
    assert marks.silent(IDLE_MS) == [SCHEDULER0]
    marks.read_up_to(SCHEDULER0, 40, 40)  # the consumer stands at its end: nothing to read
    assert marks.advance(IDLE_MS) == DAY2 + 5  # silent since it was assigned: it drops out


def test_an_idle_partition_drops_out_and_one_that_speaks_again_never_moves_the_watermark_back():
    marks = _reading(SYSLOG0, SYSLOG1)
    marks.observe(SYSLOG0, DAY1, 0)
    marks.observe(SYSLOG1, DAY2, 0)
    marks.observe(SYSLOG1, DAY3, 8_000)
    assert marks.advance(8_000) == DAY1
    marks.read_up_to(SYSLOG0, 7, 7)
    assert marks.advance(IDLE_MS) == DAY3  # syslog 0 has been quiet for the idle time, read to its end
    marks.observe(SYSLOG0, DAY1 + 1, IDLE_MS + 1)  # a late line: syslog 0 is live again
    assert marks.advance(IDLE_MS + 1) == DAY3


def test_when_every_partition_is_idle_the_latest_time_read_stands_for_all():
    marks = _reading(SYSLOG0, SCHEDULER0)
    marks.observe(SCHEDULER0, DAY1, 0)  # its last job ended on day 1
    marks.observe(SYSLOG0, DAY3, 0)  # the lines went on to day 3, then the replay was over
    assert marks.advance(1) == DAY1
    marks.read_up_to(SCHEDULER0, 3, 3)
    marks.read_up_to(SYSLOG0, 900, 900)
    assert marks.advance(IDLE_MS) == DAY3


def test_a_silent_partition_with_records_still_unread_holds_the_watermark():
    marks = _reading(SYSLOG0, SYSLOG1)
    marks.observe(SYSLOG0, DAY1, 0)
    marks.observe(SYSLOG1, DAY3, 0)
    marks.observe(SYSLOG1, DAY3 + 1, IDLE_MS * 3)  # syslog 1 flows on; syslog 0's fetches lag
    marks.read_up_to(SYSLOG0, 120, 4_120)  # silent three idle times, with 4,000 records unread
    assert marks.advance(IDLE_MS * 3) == DAY1
    marks.read_up_to(SYSLOG0, 120, None)  # its end not known: it may still hold lines
    assert marks.advance(IDLE_MS * 3) == DAY1


def test_a_partition_read_to_its_end_drops_out_only_after_the_idle_time():
    marks = _reading(SYSLOG0, SYSLOG1)
    marks.observe(SYSLOG0, DAY1, 0)
    marks.observe(SYSLOG1, DAY2, IDLE_MS - 1)
    marks.read_up_to(SYSLOG0, 50, 50)
    assert marks.advance(IDLE_MS - 1) == DAY1  # at its end, but it may speak yet
    assert marks.advance(IDLE_MS) == DAY2


def test_an_idle_partition_that_speaks_again_rejoins_and_must_be_read_to_its_end_again():
    marks = _reading(SYSLOG0, SYSLOG1)
    marks.observe(SYSLOG0, DAY1, 0)
    marks.observe(SYSLOG1, DAY2, 0)
    marks.read_up_to(SYSLOG0, 50, 50)
    marks.observe(SYSLOG1, DAY2 + 10, IDLE_MS)
    assert marks.advance(IDLE_MS) == DAY2 + 10
    marks.observe(SYSLOG0, DAY3, IDLE_MS + 1)  # it speaks again (its word "at the end" is void)
    marks.observe(SYSLOG1, DAY3 + 20, IDLE_MS * 2 + 1)
    assert marks.advance(IDLE_MS * 2 + 1) == DAY3  # the slowest again
    assert marks.advance(IDLE_MS * 3) == DAY3  # silent long enough, but not known to be at its end
    marks.read_up_to(SYSLOG0, 51, 51)
    assert marks.advance(IDLE_MS * 3) == DAY3 + 20


def test_a_rebalance_starts_a_new_generation_held_by_the_partitions_it_brought():
    marks = _reading(SYSLOG0)
    marks.observe(SYSLOG0, DAY2, 0)
    assert (marks.advance(0), marks.source) == (DAY2, "x.0")
    marks.assign([SYSLOG0, SYSLOG1], 1_000)  # syslog 1 comes from another worker, maybe behind
    assert (marks.advance(1_000), marks.source) == (0, "x.1")
    marks.observe(SYSLOG0, DAY2 + 1, 1_100)
    marks.observe(SYSLOG1, DAY1, 1_100)
    assert marks.advance(1_100) == DAY1


def test_a_partition_kept_through_a_rebalance_keeps_the_event_time_its_delivered_batches_reached():
    marks = _reading(SYSLOG0, SYSLOG1, SCHEDULER0)
    for partition, event_ms in ((SYSLOG0, DAY2), (SYSLOG1, DAY3), (SCHEDULER0, DAY1)):
        marks.observe(partition, event_ms, 0)
    marks.deliver({SYSLOG0: DAY2, SYSLOG1: DAY3 - 5, SCHEDULER0: None})  # DAY3 itself not yet in
    marks.assign([SYSLOG1, SCHEDULER0], 1_000)  # every record had been read: nothing more comes
    assert marks.advance(1_000) == 0  # a new generation, held until its partitions are idle
    marks.read_up_to(SYSLOG1, 30, 30)
    marks.read_up_to(SCHEDULER0, 4, 4)
    assert marks.advance(1_000 + IDLE_MS) == DAY3 - 5  # what was delivered, not what was read


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


class _Consumer:
    """What the worker asks aiokafka about its partitions: the last fetch's end and when it came,
    the broker's end (ListOffsets), and its own position."""

    def __init__(self, positions: dict, fetched: dict, on_broker: dict) -> None:
        self.positions, self.fetched, self.on_broker = positions, fetched, on_broker
        self.asked: list = []

    def assignment(self) -> set:
        return set(self.positions)

    def last_poll_timestamp(self, tp: TopicPartition) -> int | None:
        return self.fetched[tp][1] if tp in self.fetched else None

    def highwater(self, tp: TopicPartition) -> int | None:
        return self.fetched[tp][0] if tp in self.fetched else None

    async def end_offsets(self, partitions: list) -> dict:
        self.asked += partitions
        return {tp: self.on_broker[tp] for tp in partitions}

    async def position(self, tp: TopicPartition) -> int:
        return self.positions[tp]


def test_the_worker_trusts_a_fresh_fetch_for_a_partitions_end_and_asks_the_broker_when_it_is_stale(
    bundled_ruleset,
):
    worker = ExtractorWorker(Settings(), bundled_ruleset)
    worker.inputs.assign([SYSLOG0, SYSLOG1, SCHEDULER0], -IDLE_MS)  # all three silent since
    worker.inputs.observe(SYSLOG0, DAY2, -IDLE_MS)
    worker.inputs.observe(SYSLOG1, DAY1, -IDLE_MS)
    now_ms = time.time() * 1000
    syslog0, syslog1, scheduler0 = (TopicPartition(*tp) for tp in (SYSLOG0, SYSLOG1, SCHEDULER0))
    consumer = _Consumer(
        positions={syslog0: 10, syslog1: 500, scheduler0: 7},
        # syslog 0 at its end by a fresh fetch; syslog 1 too by a fetch 5 s old (the loop lagged);
        # the scheduler's partition not fetched yet
        fetched={syslog0: (10, now_ms - 100), syslog1: (500, now_ms - 5_000)},
        on_broker={syslog1: 900, scheduler0: 7},  # 400 syslog records written since that fetch
    )
    asyncio.run(worker._read_up_to_ends(consumer))
    assert sorted(consumer.asked) == [scheduler0, syslog1]
    assert worker.inputs.advance(0) == DAY1  # syslog 1 holds its unread records back
    consumer.positions[syslog1] = 900  # read them
    asyncio.run(worker._read_up_to_ends(consumer))
    assert worker.inputs.advance(0) == DAY2  # all read to their ends: the latest time read


def test_an_extractor_behind_its_input_asks_correlators_to_wait_for_it_longer(bundled_ruleset):
    # its last fetch stopped short of the partition's end: if it dies now, its unread lines come
    # from the member that takes its partitions, one or two session timeouts later
    worker = ExtractorWorker(Settings(), bundled_ruleset)
    worker.inputs.assign([SYSLOG0], 0)
    syslog0 = TopicPartition(*SYSLOG0)
    batch = [_syslog_record(SYSLOG0, DAY1)]  # offset 0
    consumer = _Consumer(positions={syslog0: 1}, fetched={syslog0: (800, time.time() * 1000)}, on_broker={})
    worker.behind = more_to_read(consumer, {syslog0: batch}, max_records=5_000)
    assert worker.process(batch).mark["idle_ms"] == IDLE_MS + 2 * SESSION_TIMEOUT_MS
    consumer.fetched[syslog0] = (1, time.time() * 1000)  # read to its end
    worker.behind = more_to_read(consumer, {syslog0: batch}, max_records=5_000)
    assert worker.process(batch).mark["idle_ms"] == IDLE_MS


def test_a_fetch_cut_at_its_record_limit_means_more_to_read():
    syslog0 = TopicPartition(*SYSLOG0)
    batch = [_syslog_record(SYSLOG0, DAY1)] * 3
    consumer = _Consumer(positions={syslog0: 3}, fetched={}, on_broker={})  # no end known
    assert more_to_read(consumer, {syslog0: batch}, max_records=3)
    assert not more_to_read(consumer, {syslog0: batch}, max_records=4)
