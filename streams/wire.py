"""Records on the internal topics: a small JSON envelope ``{"t": kind, ...}`` encoded with orjson.

node-events (key = node)          workload-events (key = workload id)
  groups collapsed symptoms of a    job       a scheduler JobEvent
         partition's nodes, packed  groups    symptoms whose lines name the workload,
         per batch                            packed per workload and batch
  lines  line counts per node and   lines     lines that name the workload
         minute, one record per     evidences the nodes' reports for a run, packed
         partition and batch                  per workload
  places runs placed on nodes,      wm, tick  as on node-events
         packed per partition
  placed how far a workload partition
         has sent its placements (every
         node partition hears each one)
  wm     an extractor's event-time watermark
         (the slowest of its input partitions)
  tick   a correlator's wall clock

Packed records (``pack``) hold up to 256 KiB of items each. The single forms ``group``, ``place``
and ``evidence`` are still applied.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from correlator.evidence import EvidenceGroup
from correlator.node_side import NodeEvidence
from correlator.workload_side import RunPlacement
from streams.records import JobEvent

__all__ = [
    "MAX_RECORD_BYTES",
    "decode",
    "encode",
    "evidence",
    "group",
    "job",
    "node_lines",
    "pack",
    "packed_evidence",
    "packed_groups",
    "packed_places",
    "place",
    "placed",
    "reported",
    "tick",
    "watermark",
    "workload_lines",
]


#: The size every record the correlator writes stays under — internal events, node reports,
#: table (changelog) values, verdicts — for jobs up to 12,500 nodes: half the broker's and the
#: producer's 1 MiB default, which Faultstream never raises (docs/architecture.md, "Record sizes").
MAX_RECORD_BYTES = 512 * 1024


def encode(record: dict[str, Any]) -> bytes:
    return orjson.dumps(record)


def decode(raw: bytes) -> dict[str, Any]:
    return orjson.loads(raw)


def group(g: EvidenceGroup) -> dict[str, Any]:
    return {"t": "group", "g": g.to_dict()}


#: A storm makes thousands of groups, placements and node reports at once: they travel packed,
#: one record per partition (or workload) up to this size, not one record each — every record
#: is an event the correlator applies, writes back and commits on its own.
PACKED_RECORD_BYTES = 256 * 1024


def pack(kind: str, items: Iterable[dict[str, Any]], limit: int = PACKED_RECORD_BYTES) -> list[bytes]:
    """Encoded ``{"t": kind, "items": [...]}`` records holding ``items``, as few as fit under
    ``limit`` bytes each (an item is never split; one alone over the limit travels alone)."""
    records: list[bytes] = []
    chunk: list[bytes] = []
    size = 0
    for item in items:
        encoded = orjson.dumps(item)
        if chunk and size + len(encoded) + 1 > limit:
            records.append(_packed_record(kind, chunk))
            chunk, size = [], 0
        chunk.append(encoded)
        size += len(encoded) + 1
    if chunk:
        records.append(_packed_record(kind, chunk))
    return records


def _packed_record(kind: str, encoded: list[bytes]) -> bytes:
    return b'{"t":"' + kind.encode() + b'","items":[' + b",".join(encoded) + b"]}"


def packed_groups(groups: Iterable[EvidenceGroup]) -> list[bytes]:
    return pack("groups", (g.to_dict() for g in groups))


def packed_places(placements: Iterable[RunPlacement]) -> list[bytes]:
    return pack("places", (p.to_dict() for p in placements))


def packed_evidence(reports: Iterable[NodeEvidence]) -> list[bytes]:
    return pack("evidences", (e.to_dict() for e in reports))


def node_lines(counts: list[tuple[str, int, int, int]]) -> dict[str, Any]:
    """Line counts of many nodes of one partition: ``(node, slot start ms, count, latest ms)``."""
    return {"t": "lines", "counts": counts}


def workload_lines(workload_id: str, count: int, max_ms: int) -> dict[str, Any]:
    return {"t": "lines", "workload_id": workload_id, "count": count, "max_ms": max_ms}


def place(p: RunPlacement) -> dict[str, Any]:
    return {"t": "place", **p.to_dict()}


def job(event: JobEvent) -> dict[str, Any]:
    return {"t": "job", "e": event.to_dict()}


def evidence(e: NodeEvidence) -> dict[str, Any]:
    return {"t": "evidence", "e": e.to_dict()}


def watermark(time_ms: int, source: str | None = None, idle_ms: int | None = None) -> dict[str, Any]:
    """An extractor's event time: every input partition it reads has reached ``time_ms``.
    ``source`` names the extractor (its generation); the correlator forgets a source it has not
    heard from for ``idle_ms``. Without a source: the older form, the maximum event time seen."""
    if source is None:
        return {"t": "wm", "time_ms": time_ms}
    return {"t": "wm", "time_ms": time_ms, "source": source, "idle_ms": idle_ms}


def placed(source: str, time_ms: int) -> dict[str, Any]:
    """A workload partition (``source``) has sent the placements of every job event up to
    ``time_ms`` (its event-time clock), to every node partition, after those placements."""
    return {"t": "placed", "source": source, "time_ms": time_ms}


def reported(source: str, time_ms: int) -> dict[str, Any]:
    """A node partition (``source``) has sent, to every workload partition, the report of every run
    it holds that ended by ``time_ms``, before this record."""
    return {"t": "reported", "source": source, "time_ms": time_ms}


def tick() -> dict[str, Any]:
    return {"t": "tick"}
