"""A line's own time may move event time only so far past its record's Kafka timestamp (issue 11).

A syslog or dmesg line carries the time its node wrote in its header, and that time is trusted:
it dates the line's symptoms and counts. But whoever writes a line (root on one node, anyone who
may produce to an ingest topic) writes its header too, and one line dated ten years ahead carried
the extractor's watermark (streams/watermarks.py) and the backtest's with it: every run was decided
before its grace and idle evidence expired. The record's Kafka timestamp is the broker's word when
the ingest topics use ``message.timestamp.type=LogAppendTime`` (docs/operations.md, Topics), and a
line cannot honestly be much ahead of it: the broker appends a record after its line was written.

So a line (or job event) more than ``AHEAD_LIMIT_MS`` ahead of its record's time moves event time
only to the record's time; the line itself keeps its own time (its symptoms, its counts). The limit
is 26 hours: syslog headers and ``dmesg -T`` times are the node's local time and read as UTC
(docs/formats.md, Times), so a node whose clock runs in a zone ahead of UTC writes lines up to 14
hours ahead of the broker (UTC+14, Kiribati), and those must still move event time as they always
have; 12 hours more leave room for clocks that are off, and keep the limit above the one day a
header without a year may already sit ahead of its record (the year rule of docs/formats.md).

The reference is the record's Kafka timestamp, or the recorded time of a replayed record
(``streams.topics.RECORDED_TIME_HEADER``) when that is earlier: the header is the producer's word
and may only lower the reference, so a replay of a recording is bounded by its recorded times, as
the backtest bounds it, and a forged header cannot raise it. A record with no timestamp (a
recording without them, Kafka's -1) has no bound.
"""

from __future__ import annotations

from collections.abc import Sequence

from streams.topics import record_time_ms

__all__ = ["AHEAD_LIMIT_MS", "UNBOUNDED", "ceiling_ms", "mark_ms", "reference_ms"]

HOUR_MS = 3_600_000
#: How far a line's own time may run ahead of its record's time and still move event time.
AHEAD_LIMIT_MS = 26 * HOUR_MS
#: The ceiling of a record that has no time to bound its lines by.
UNBOUNDED = 1 << 62


def reference_ms(timestamp: int | None, headers: Sequence[tuple[str, bytes]] = ()) -> int | None:
    """The time a record's lines are bounded against (None: none). ``timestamp``: the Kafka
    timestamp (-1 or None: none); ``headers``: the record's, for a replay's recorded time."""
    stamp = timestamp if timestamp is not None and timestamp >= 0 else None
    if headers:
        recorded = record_time_ms(-1, headers)
        if recorded >= 0 and (stamp is None or recorded < stamp):
            stamp = recorded
    return stamp


def ceiling_ms(reference: int | None) -> int:
    """The latest line time that still moves event time, for a record of time ``reference``."""
    return UNBOUNDED if reference is None else reference + AHEAD_LIMIT_MS


def mark_ms(event_ms: int, reference: int | None) -> int:
    """How far a line or job event of ``event_ms`` moves event time: its own time, or its record's
    time when it is more than the limit ahead of it."""
    if reference is None or event_ms <= reference + AHEAD_LIMIT_MS:
        return event_ms
    return reference
