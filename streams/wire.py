"""Records on the internal topics: a small JSON envelope ``{"t": kind, ...}`` encoded with orjson.

node-events (key = node)          workload-events (key = workload id)
  group  collapsed symptoms         job       a scheduler JobEvent
  lines  line counts per node and   group     symptoms whose lines name the workload
         minute, one record per
         partition and batch
  place  a run placed on the node   lines     lines that name the workload
  wm     an extractor's event time  evidence  a node's report for a run
  tick   a correlator's wall clock  wm, tick  as on node-events
"""

from __future__ import annotations

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
    "place",
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


def watermark(time_ms: int) -> dict[str, Any]:
    return {"t": "wm", "time_ms": time_ms}


def tick() -> dict[str, Any]:
    return {"t": "tick"}
