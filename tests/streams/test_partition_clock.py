"""A correlator partition's clock follows the slowest extractor it hears from (issue 11)."""

from __future__ import annotations

import orjson

from streams import wire
from streams.partition_state import PLACER_IDLE_MS, SOURCE_FORGET_MS, PartitionClock

IDLE_MS = 10_000
T = 1_714_557_600_000  # event time
W = 1_800_000_000_000  # wall (record) time


def _heard(clock: PartitionClock, source: str, time_ms: int, wall_ms: int) -> None:
    clock.on_watermark(wire.watermark(time_ms, source, IDLE_MS), wall_ms)


def test_the_clock_is_the_slowest_of_the_extractors():
    clock = PartitionClock()
    _heard(clock, "b.0", T, W)  # b reads the ingest partitions that are still on T
    _heard(clock, "a.0", T + 60_000, W + 100)
    assert clock.effective(W + 100) == T
    _heard(clock, "a.0", T + 120_000, W + 200)
    assert clock.effective(W + 200) == T


def test_an_extractor_silent_for_its_idle_time_no_longer_holds_the_clock():
    clock = PartitionClock()
    _heard(clock, "b.0", T, W)
    _heard(clock, "a.0", T + 60_000, W)
    _heard(clock, "a.0", T + 90_000, W + IDLE_MS)  # b said nothing more: its inputs went quiet
    assert clock.effective(W + IDLE_MS) == T + 90_000


def test_data_records_move_the_clock_only_while_no_extractor_has_named_itself():
    clock = PartitionClock()
    clock.observe(T, W)  # an older extractor, or a recording told to the partition directly
    assert clock.effective(W) == T
    _heard(clock, "a.0", T + 1_000, W + 1)
    clock.observe(T + 3_600_000, W + 2)  # a line an hour ahead, from the fastest ingest partition
    assert clock.effective(W + 2) == T + 1_001  # one millisecond of wall time since a spoke


def test_a_watermark_without_a_source_counts_as_it_did_before():
    clock = PartitionClock()
    clock.on_watermark(wire.watermark(T), W)
    clock.on_watermark(wire.watermark(T - 5_000), W + 1)
    assert (clock.event_ms, clock.sources) == (T, {})


def test_a_quiet_cluster_still_reaches_a_jobs_end_plus_grace_by_wall_clock():
    clock = PartitionClock()
    _heard(clock, "a.0", T, W)
    assert clock.effective(W + 30_000) == T + 30_000  # ticks, and no extractor speaks


def test_an_extractor_that_keeps_saying_the_same_time_holds_the_clock():
    clock = PartitionClock()
    for second in range(5):  # batch after batch, one of its input partitions lags
        _heard(clock, "a.0", T, W + second * 1_000)
    assert clock.effective(W + 4_000) == T


def test_extractors_silent_for_an_hour_are_forgotten():
    clock = PartitionClock()
    _heard(clock, "a.0", T, W)
    _heard(clock, "b.0", T + 1_000, W + SOURCE_FORGET_MS + 1)  # a was scaled away an hour ago
    assert list(clock.sources) == ["b.0"]


def test_an_extractor_behind_its_input_holds_the_clock_past_the_idle_time_when_it_falls_silent():
    # b said it had records left to read, then died: its lines will come from whoever takes its
    # partitions, so the clock waits for them instead of following a alone after 10 s
    clock = PartitionClock()
    clock.on_watermark(wire.watermark(T, "b.0", IDLE_MS + 20_000), W)
    _heard(clock, "a.0", T + 90_000, W + IDLE_MS)
    assert clock.effective(W + IDLE_MS) == T
    _heard(clock, "a.0", T + 95_000, W + IDLE_MS + 20_000)
    assert clock.effective(W + IDLE_MS + 20_000) == T + 95_000  # its hold is over


def test_a_held_extractor_frees_the_clock_when_its_hold_ends_even_if_no_one_speaks_again():
    # b died behind its input; a took its partitions, read everything and fell silent before b's
    # hold ended: the clock must not stay at b's mark until another watermark comes
    clock = PartitionClock()
    clock.on_watermark(wire.watermark(T, "b.0", IDLE_MS + 20_000), W)
    _heard(clock, "a.0", T + 90_000, W + 5_000)  # a's last word: everything read
    assert clock.effective(W + 10_000) == T + 5_000  # b holds it: only the wall time since a spoke
    assert clock.effective(W + IDLE_MS + 20_000) == T + 90_000 + IDLE_MS + 15_000  # a's mark, a's silence


def test_a_new_generation_of_an_extractor_retires_its_older_one_at_once():
    # a restarted (or rebalanced) extractor reads its partitions again from the committed
    # offsets: its new generation speaks for all it holds, the silent old one no longer counts
    clock = PartitionClock()
    clock.on_watermark(wire.watermark(T, "a.3", IDLE_MS + 20_000), W)  # behind when it lost the broker
    _heard(clock, "b.0", T + 90_000, W + 1_000)
    _heard(clock, "a.4", T + 60_000, W + 2_000)
    assert list(clock.sources) == ["b.0", "a.4"]
    assert clock.effective(W + 2_000) == T + 60_000


def test_an_older_generation_heard_after_a_newer_one_changes_nothing():
    clock = PartitionClock()
    _heard(clock, "a.4", T + 60_000, W)
    _heard(clock, "a.3", T, W + 1)
    assert list(clock.sources) == ["a.4"]
    assert clock.effective(W + 1) == T + 60_001


def test_a_clock_saved_before_per_extractor_watermarks_loads_and_goes_on():
    saved = {"event_ms": T, "wall_ms": W, "effective_ms": T, "offset": 41, "history": [[W, T]]}
    clock = PartitionClock.load({"clock": orjson.dumps(saved)}, "clock")
    assert (clock.event_ms, clock.offset, clock.sources) == (T, 41, {})
    _heard(clock, "a.0", T + 5_000, W + 1_000)
    assert clock.effective(W + 1_000) == T + 5_000


def test_a_clock_with_its_sources_survives_the_changelog():
    clock = PartitionClock()
    _heard(clock, "b.0", T, W)
    _heard(clock, "a.0", T + 60_000, W)
    table: dict = {}
    clock.save(table, "clock")
    recovered = PartitionClock.load(table, "clock")
    _heard(recovered, "a.0", T + 120_000, W + 1)
    assert recovered.effective(W + 1) == T  # b still holds it, after the restart as before


def test_the_placement_clock_is_the_slowest_workload_partition_and_none_before_any_spoke():
    clock = PartitionClock()
    assert clock.placed(W) is None, "no word: the node's own watermark alone, as before"
    clock.observe_placed("workload:0", T + 60_000, W)
    clock.observe_placed("workload:1", T, W + 100)
    clock.observe_placed("workload:0", T + 30_000, W + 200)  # an older word changes nothing
    assert clock.placed(W + 200) == T
    later = W + 100 + PLACER_IDLE_MS
    clock.observe_placed("workload:0", T + 90_000, later)
    assert clock.placed(later) == T + 90_000, "workload:1 silent an hour while 0 spoke: gone"
    assert clock.placed(W + 3 * PLACER_IDLE_MS) == T, "all silent (a correlator reading its backlog): all count"


def test_after_an_outage_longer_than_that_the_first_workload_partition_back_does_not_drop_the_others():
    clock = PartitionClock()
    clock.observe_placed("workload:0", T + 60_000, W)
    clock.observe_placed("workload:1", T, W)
    back = W + 2 * PLACER_IDLE_MS  # a correlator down two hours; workload:0's first word after it
    clock.observe_placed("workload:0", T + 3 * 86_400_000, back)

    assert clock.placed(back + 1_000) == T, "workload:1's first word is a moment behind: it still counts"
    for minute in range(1, 61):  # workload:0 speaks on
        clock.observe_placed("workload:0", T + 3 * 86_400_000 + minute, back + minute * 60_000)
    assert clock.placed(back + PLACER_IDLE_MS) == T + 3 * 86_400_000 + 60, "workload:1 never came back: gone"
