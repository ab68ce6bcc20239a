"""The correlator's clock records on a big node partition: the partition view's index against the
full-table listing it replaced (the baseline, kept here), alternated in one process.

    python -m scripts.bench.bench_partition_scan [--nodes 12500] [--ticks 300] [--rounds 3]

One node partition (of 4) holds the line counts of ``--nodes`` nodes, flushed to its table as the
live correlator would; a fresh partition built on that table (a restart, a rebalance) then reads
``--ticks`` ticks. Prints the milliseconds per round for each listing.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterator
from typing import Any

from correlator.settings import CorrelatorSettings
from streams import wire
from streams.partition_state import PartitionView
from streams.partitions import NodePartition

SETTINGS = CorrelatorSettings(grace_s=30, tail_s=5)
T0 = 1_714_557_600_000


def _full_table_listing(self: PartitionView[Any]) -> Iterator[str]:
    """The listing before the index (commit 878396e): every key of the table, each time."""
    seen = set(self.cache) | self.deleted
    yield from list(self.cache)
    yield from [k for k in list(self.table.keys()) if k not in seen and self._mine(k)]


def _table(nodes: int) -> dict[str, Any]:
    table: dict[str, Any] = {}
    part = NodePartition(SETTINGS, table, 0, 4)
    counts = [(f"gpu{i:05d}", T0, 10, T0 + 1_000) for i in range(nodes)]
    part.handle(wire.watermark(T0, "bench.0", 10_000), 1_000, 0)
    for i in range(0, nodes, 500):
        part.handle(wire.node_lines(counts[i : i + 500]), 1_000, 1 + i)
    part.persist(everything=True)
    return table


def _ticks(table: dict[str, Any], ticks: int, listing: Callable[..., Iterator[str]]) -> float:
    original = PartitionView.__iter__
    PartitionView.__iter__ = listing  # type: ignore[method-assign]
    try:
        part = NodePartition(SETTINGS, table, 0, 4)
        started = time.perf_counter()
        for k in range(ticks):
            part.handle(wire.tick(), 2_000 + k * 500, 100_000 + k)
        return time.perf_counter() - started
    finally:
        PartitionView.__iter__ = original  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=12_500)
    parser.add_argument("--ticks", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    table = _table(args.nodes)
    index = PartitionView.__iter__
    print(f"{args.nodes} nodes, {len(table)} table keys, {args.ticks} ticks per round")
    for round_ in range(args.rounds):
        before = _ticks(table, args.ticks, _full_table_listing)
        after = _ticks(table, args.ticks, index)
        print(f"round {round_ + 1}: full-table listing {before * 1000:.0f} ms, index {after * 1000:.0f} ms")


if __name__ == "__main__":
    main()
