"""The partition view lists its keys from an index it keeps, not from the whole table each time."""

from __future__ import annotations

import random

from streams.partition_state import META, PartitionView
from streams.topics import partition_for

PARTITIONS = 4


def _view(table: dict) -> PartitionView[str]:
    return PartitionView(table, 1, PARTITIONS, lambda key, raw: raw.decode(), lambda value: value.encode())


def _listed_from_the_table(view: PartitionView[str]) -> set[str]:
    """What the view used to compute on every iteration: its cache, plus its partition's keys in
    the table that it has not deleted."""
    stored = {k for k in view.table if not k.startswith(META) and partition_for(k, PARTITIONS) == 1}
    return set(view.cache) | (stored - view.deleted)


def test_after_any_writes_deletes_and_flushes_the_view_lists_what_the_table_and_cache_hold():
    rng = random.Random(7)
    table: dict[str, bytes] = {f"{META}clock": b"x"}
    for n in range(200):  # a recovered partition: keys of every partition, bookkeeping keys too
        table[f"gpu{n:04d}"] = b"old"
    view = _view(table)
    keys = [k for k in (f"gpu{n:04d}" for n in range(300)) if partition_for(k, PARTITIONS) == 1]  # its nodes
    for step in range(2_000):
        key = rng.choice(keys)
        action = rng.random()
        if action < 0.45:
            view[key] = f"v{step}"
        elif action < 0.8 and key in view:
            del view[key]
        elif action < 0.9:
            view.persist(set(view.cache))
        else:
            view.cache.pop(key, None)  # evicted from the cache, still in the table
        if step % 50 == 0:
            assert set(view) == _listed_from_the_table(view), step
            assert len(view) == len(_listed_from_the_table(view)), step
    view.persist(set(view.cache))
    again = _view(table)  # a rebalance builds a new view on the same table
    assert set(again) == set(view) == _listed_from_the_table(again)
