"""A correlator killed with -9 in the middle of a flush (issue 11). A node partition's flush is many
changelog records — each changed node's state and line counts, then the clock with its offset
marker — so a kill can leave the changelog holding part of one: some nodes already at the new
state, the marker still at the old one. The replacement applies the records after that marker
again, and the nodes whose records made it count them twice.

The flush writes an intent (the marker it will end with) first and stamps every node state and
line-count record with it; the replacement skips, per key, the records a stamp says it holds."""

from __future__ import annotations

from correlator.settings import CorrelatorSettings
from streams.partitions import NodePartition

NODES = [f"gpu{n:05d}" for n in range(8)]
SLOT_MS = 1_714_557_600_000
#: six line-count records, 400 ms of record time apart: the partition flushes about once a second
RECORDS = [{"t": "lines", "counts": [[node, SLOT_MS, 10, SLOT_MS + 1_000] for node in NODES]} for _ in range(6)]


class ChangelogTable(dict):
    """A table that remembers its writes in order, as its changelog would."""

    def __init__(self) -> None:
        super().__init__()
        self.changelog: list[tuple[str, bytes | None]] = []

    def __setitem__(self, key: str, value: bytes) -> None:
        super().__setitem__(key, value)
        self.changelog.append((key, value))

    def __delitem__(self, key: str) -> None:
        super().__delitem__(key)
        self.changelog.append((key, None))


def recovered_from(changelog: list[tuple[str, bytes | None]]) -> dict[str, bytes]:
    table: dict[str, bytes] = {}
    for key, value in changelog:
        if value is None:
            table.pop(key, None)
        else:
            table[key] = value
    return table


def line_counts(part: NodePartition) -> dict[str, int]:
    return {node: sum(part.nodes.state(node).window.line_slots.values()) for node in NODES}


def test_a_kill_in_the_middle_of_a_flush_counts_no_line_twice():
    settings = CorrelatorSettings(grace_s=2, tail_s=2)
    table = ChangelogTable()
    uninterrupted = NodePartition(settings, table, 0, 1)
    for offset, record in enumerate(RECORDS):
        uninterrupted.handle(record, 1_000 + offset * 400, offset)
        uninterrupted.persist()
    clock_writes = [i for i, (key, _) in enumerate(table.changelog) if key.startswith("__clock__")]
    assert len(clock_writes) >= 2, "the partition flushed at least twice"

    # Killed while the last flush was on its way: its last three records never reached the broker.
    replacement = NodePartition(settings, recovered_from(table.changelog[: clock_writes[-1] - 3]), 0, 1)
    for offset, record in enumerate(RECORDS):
        if replacement.fresh(offset):  # the records after the recovered marker, read again
            replacement.handle(record, 1_000 + offset * 400, offset)

    assert line_counts(replacement) == line_counts(uninterrupted) == {node: 60 for node in NODES}
