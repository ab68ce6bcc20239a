"""The correlator's consumer commits past the extractor's transaction markers (streams/commit_offsets.py).

Every extractor transaction ends in a commit marker the correlator never reads. faust records the
hole it sees before the next record as a gap that includes that record's own offset, which is
acked too; its own commit rule then stopped at the duplicate, one transaction per commit.
"""

from __future__ import annotations

from faust.types import TP
from intervaltree import IntervalTree

from streams.commit_offsets import committable
from streams.read_committed import _ReadCommittedConsumer


def read_transactions(batches: int, records: int, first: int = 0) -> tuple[list[int], IntervalTree]:
    """What faust's fetch loop leaves after reading ``batches`` extractor transactions of
    ``records`` records each, every one followed by its commit marker: the acked offsets, and
    the gaps as faust's ``_add_gap`` records them (from the offset after the last one read up to
    and including the one just read)."""
    acked: list[int] = []
    gaps = IntervalTree()
    last_read = None
    offset = first
    for _ in range(batches):
        for _ in range(records):
            if last_read is not None and offset - last_read > 1:
                gaps.addi(last_read + 1, offset + 1)
                gaps.merge_overlaps()
            acked.append(offset)
            last_read = offset
            offset += 1
        offset += 1  # the commit marker
    return acked, gaps


def test_one_commit_passes_every_transaction_marker_read_so_far():
    acked, gaps = read_transactions(batches=50, records=3)
    index = set(acked)
    # 50 transactions of 3 records and a marker: offsets 0..199, the last marker (199) unread
    assert committable(acked, index, gaps, committed=None) == 199
    assert acked == [] and index == set()


def test_a_later_commit_continues_from_the_last_one():
    acked, gaps = read_transactions(batches=10, records=2)  # offsets 0..29, markers at 2, 5, ...
    assert committable(acked, set(acked), gaps, committed=None) == 29
    more, more_gaps = read_transactions(batches=5, records=2, first=30)
    more_gaps.addi(29, 31)  # the hole of marker 29 before record 30, as faust records it
    assert committable(more, set(more), more_gaps, committed=29) == 44


def test_a_message_still_in_flight_at_the_head_holds_the_commit_back():
    # committed 100; 101 is being processed, 102..110 are done: nothing may be committed yet
    acked = list(range(102, 111))
    assert committable(acked, set(acked), IntervalTree(), committed=100) is None
    assert acked == list(range(102, 111))  # kept for the next commit
    acked.insert(0, 101)
    assert committable(acked, set(acked), IntervalTree(), committed=100) == 111


def test_a_hole_in_the_middle_stops_the_commit_there():
    acked = [10, 11, 12, 14, 15]  # 13 not acked and no gap recorded: a message not done
    assert committable(acked, set(acked), IntervalTree(), committed=10) == 13
    assert acked == [14, 15]


def test_the_correlators_consumer_uses_it():
    consumer = _ReadCommittedConsumer.__new__(_ReadCommittedConsumer)  # no app: only the bookkeeping
    tp = TP("node-events", 0)
    acked, gaps = read_transactions(batches=20, records=4)
    consumer._acked, consumer._acked_index = {tp: acked}, {tp: set(acked)}
    consumer._gap, consumer._committed_offset = {tp: gaps}, {tp: None}
    assert consumer._new_offset(tp) == 99
