"""Topic names and the explicit partitioner every internal producer uses.

Internal topics are keyed by node or by workload and partitioned by :func:`partition_for`, not by
the client's default partitioner, so the correlator always knows which partition — and so which
faust changelog partition — owns a key, whoever produced the record.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from streams.settings import Settings

__all__ = ["RECORDED_TIME_HEADER", "Topics", "partition_for", "record_time_ms"]

#: ``faultstream load`` stamps replayed records with the send time — a broker's time-based
#: retention judges a segment by its newest record timestamp, so records stamped months ago would
#: be deleted at its next check, before anyone read them — and keeps each record's recorded Kafka
#: timestamp (epoch ms, ASCII digits) in this header. The extractor takes it in place of the
#: Kafka timestamp, so a replay is normalized exactly as the recording says.
RECORDED_TIME_HEADER = "faultstream-recorded-ms"
#: Anyone who can produce to an ingest topic writes headers too: a value longer than this (past
#: the year 5138 in ms) is not a time, and past 64 bits it broke encoding the batch's outputs.
RECORDED_TIME_MAX_DIGITS = 14


def partition_for(key: str, partitions: int) -> int:
    return zlib.crc32(key.encode("utf-8")) % partitions


def record_time_ms(timestamp_ms: int, headers: Sequence[tuple[str, bytes]]) -> int:
    """A consumed record's time: its recorded time when it was replayed, else its Kafka timestamp."""
    for name, value in headers:  # empty for what shippers send: costs nothing then
        if name == RECORDED_TIME_HEADER and value.isdigit() and len(value) <= RECORDED_TIME_MAX_DIGITS:
            return int(value)
    return timestamp_ms


@dataclass(frozen=True)
class Topics:
    node_events: str
    workload_events: str
    verdicts: str
    deadletter: str
    ingest: dict[str, str]  # topic → source
    partitions: int

    @classmethod
    def from_settings(cls, settings: Settings) -> Topics:
        return cls(
            node_events=settings.topic("faultstream.node-events"),
            workload_events=settings.topic("faultstream.workload-events"),
            verdicts=settings.topic("faultstream.verdicts"),
            deadletter=settings.topic("faultstream.deadletter"),
            ingest=settings.ingest_topics(),
            partitions=settings.partitions,
        )

    def all_names(self) -> list[str]:
        return [*self.ingest, self.node_events, self.workload_events, self.verdicts, self.deadletter]
