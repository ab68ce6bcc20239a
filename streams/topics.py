"""Topic names and the explicit partitioner every internal producer uses.

Internal topics are keyed by node or by workload and partitioned by :func:`partition_for`, not by
the client's default partitioner, so the correlator always knows which partition — and so which
faust changelog partition — owns a key, whoever produced the record.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from streams.settings import Settings

__all__ = ["Topics", "partition_for"]


def partition_for(key: str, partitions: int) -> int:
    return zlib.crc32(key.encode("utf-8")) % partitions


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
