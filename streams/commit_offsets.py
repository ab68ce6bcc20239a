"""Which offset the correlator's consumer may commit: faust's rule, without its duplicate.

faust acks each message it handed to an agent and commits the end of the first run of
consecutive acked offsets. Offsets no reader sees (the commit marker after each extractor
transaction, an aborted batch) are *gaps*: faust records the span from the last offset it read to
the one it reads now, and fills it into the acked list when it commits. That span includes the
offset of the message just read, which is acked as well, so the list holds that offset twice, and
the run of "consecutive" numbers stops at the duplicate (robinhood/faust#625, still in
faust-streaming 0.15.3). Each commit then moved past one extractor transaction only: in a 5-minute
soak at 1,000 records/s the committed offsets fell 39,000 records behind a correlator that had
processed everything, the acked lists grew by ~150 offsets a second (sorted, scanned and searched
on every commit: 19 % of the correlator's time), and a restarted correlator read all of it again.

:func:`committable` is faust's ``Consumer._new_offset`` with the acked offsets and the gaps merged
as a set. Everything else is kept: a hole at the head of more than one offset is still waited for
(a message in flight), and the correlator's own offset markers and gap read-back
(streams/gap_fill.py) still catch a record the stream never delivered.
"""

from __future__ import annotations

from collections.abc import MutableSequence, MutableSet

from intervaltree import IntervalTree

__all__ = ["committable"]


def committable(
    acked: MutableSequence[int], acked_index: MutableSet[int], gaps: IntervalTree, committed: int | None
) -> int | None:
    """The offset to commit (the one after the last message done), or None: nothing new. Consumes
    the acked offsets it commits past from ``acked`` / ``acked_index`` and the gaps it filled."""
    if not acked:
        return None
    done = set(acked)
    highest = max(done)
    if gaps:
        spans = sorted(gaps.overlap(0, highest), key=lambda span: span.begin)
        if spans:
            for span in spans:
                done.update(range(span.begin, span.end))
            gaps.chop(0, max(spans[-1].end - 1, highest + 1))
    # a gap's last offset can outlive the commit past it (faust chops gaps below it): not news
    ordered = sorted(done) if not committed else sorted(o for o in done if o >= committed)
    acked[:] = ordered
    if not ordered:
        return None
    if committed and ordered[0] - committed > 1:
        return None  # a message at the head is still being processed
    run_end = 0
    while run_end + 1 < len(ordered) and ordered[run_end + 1] == ordered[run_end] + 1:
        run_end += 1
    run = ordered[: run_end + 1]
    del acked[: run_end + 1]
    acked_index.difference_update(run)
    return run[-1] + 1
