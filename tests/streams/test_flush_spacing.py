"""A flush rewrites every key its interval touched; its spacing keeps the changelog's write rate
bounded however many nodes a partition holds (streams/partitions.py, flush_interval_ms)."""

from __future__ import annotations

from correlator.settings import CorrelatorSettings
from streams import wire
from streams.partitions import (
    FLUSH_EVERY_MS,
    FLUSH_KEYS_PER_S,
    FLUSH_MAX_MS,
    NodePartition,
    flush_interval_ms,
    line_counts_key,
)

T0 = 1_714_557_600_000
SETTINGS = CorrelatorSettings(grace_s=30, tail_s=5)


class CountingTable(dict):
    """A table that counts the changelog writes its keys would cost."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.writes = 0

    def __setitem__(self, key, value) -> None:
        self.writes += 1
        super().__setitem__(key, value)


def cluster_second(nodes: int, second: int) -> dict:
    """One batch's line counts: every node of the cluster logged 3 lines in that second."""
    ms = T0 + second * 1_000
    return wire.node_lines([(f"gpu{n:05d}", ms, 3, ms) for n in range(nodes)])


def run(nodes: int, seconds: int, table: CountingTable | None = None) -> tuple[NodePartition, CountingTable]:
    table = table if table is not None else CountingTable()
    part = NodePartition(SETTINGS, table, 0, 1)
    for second in range(seconds):
        part.handle(cluster_second(nodes, second), T0 + second * 1_000, second)
        part.persist()
    return part, table


def test_the_interval_grows_with_the_flush_and_stops_at_its_bound():
    assert flush_interval_ms(0) == FLUSH_EVERY_MS
    assert flush_interval_ms(FLUSH_KEYS_PER_S) == FLUSH_EVERY_MS
    assert flush_interval_ms(3 * FLUSH_KEYS_PER_S) == 3_000
    assert flush_interval_ms(100 * FLUSH_KEYS_PER_S) == FLUSH_MAX_MS


def test_a_small_cluster_still_flushes_every_second():
    part, table = run(nodes=20, seconds=10)

    assert part.clock.offset == 9
    # each second 20 nodes' counts, the intent and the clock; the first flush their states too
    assert table.writes == 10 * (20 + 2) + 20
    assert part.torn_flush is None


def test_a_3000_node_partition_writes_at_a_bounded_rate_not_every_node_every_second():
    seconds = 60
    _, table = run(nodes=3_000, seconds=seconds)

    every_second = seconds * 3_000  # what a fixed one-second flush wrote
    bound = FLUSH_KEYS_PER_S * seconds + 3_000 + 2 * seconds  # the rate, the first flush, markers
    assert table.writes <= bound < every_second / 4


def test_a_partition_recovered_from_a_spaced_flush_counts_every_line_once_after_the_replay():
    nodes, seconds = 3_000, 25
    whole, _ = run(nodes, seconds)
    _, table = run(nodes, seconds)  # the same input; then a crash: only the table is left

    recovered = NodePartition(SETTINGS, table, 0, 1)
    marker = recovered.clock.offset
    assert marker < seconds - 1, "the last flush is seconds behind the input: there is a replay"
    for second in range(marker + 1, seconds):  # gap_fill reads the records after the marker again
        assert recovered.fresh(second)
        recovered.handle(cluster_second(nodes, second), T0 + second * 1_000, second)

    for node in ("gpu00000", "gpu01234", "gpu02999"):
        assert recovered.view.get(node).window.line_slots == whole.view.get(node).window.line_slots
        assert line_counts_key(node) in table
