"""The soak's mixed load: the golden failure stories again and again with fresh job ids, a storm
job of hundreds of nodes now and then, healthy noise from a fleet of idle nodes in between.

Reuses the generators, not new ones: ``tests/golden/stories.py`` builds each story at any start
time, ``scripts/bench/workload.py`` makes the storm job and the noise lines. The load comes in
*segments*: segment ``n`` is day ``n`` of event time (stories never share a day, so one story's
nodes never leak into another's window, as in the golden recordings); the storm job, when a
segment carries one, runs on the same day on nodes of its own, and the noise spans the day's
story. Records are in the order they are to be sent; a story keeps its own order (one story
sends lines late on purpose).
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

import orjson

from scripts.bench.workload import lines, shipper_record, storm_records, symptom_lines
from tests.golden.stories import BASE_MS, DAY_MS, STORIES, Story

__all__ = ["Segment", "segments"]

#: Job ids the golden stories use (41xx) and the names of the two that are not Slurm jobs.
_SLURM_ID = re.compile(rb"(?<![0-9])41(0[1-9]|1[0-9])(?![0-9])")
_NAMED_WORKLOADS = (b"gpt-sft-7", b"bert-ft")
#: Noise hosts (gpu0000…) are neither story hosts (gpu001…, dgx-a100-…) nor storm hosts (gpu00000…).
NOISE_NODES = 256
STORM_JOB_BASE = 700_000
SYMPTOM_EVERY = 2000


@dataclass(frozen=True)
class Segment:
    """One day of event time: what it sends, and what it is (for the report)."""

    index: int
    story: str
    storm_nodes: int
    records: list[dict[str, Any]]


def _fresh_ids(record: dict[str, Any], index: int) -> dict[str, Any]:
    """The story's job ids made unique to this segment (in values, keys and texts alike)."""
    raw = orjson.dumps(record)
    raw = _SLURM_ID.sub(lambda m: b"%d" % (100_000 + index * 100 + int(m.group(1))), raw)
    for name in _NAMED_WORKLOADS:
        raw = raw.replace(name, name + b"-s%d" % index)
    return orjson.loads(raw)


def _story_records(
    index: int, t0: int, rotation: list[Callable[[int], Story]]
) -> tuple[str, list[dict[str, Any]]]:
    story = rotation[index % len(rotation)](t0)
    ordered = sorted(story.records, key=lambda r: r["timestamp"])  # as the recordings are written
    return story.name, [_fresh_ids(r, index) for r in ordered]


def _storm(index: int, nodes: int, lines_: int, t0: int) -> list[dict[str, Any]]:
    records = list(storm_records(nodes, lines_, t0_ms=t0, seed=index))
    end = records[-1]  # the job's end: a fresh job id too
    end["value"]["jobid"] = STORM_JOB_BASE + index
    end["key"] = str(STORM_JOB_BASE + index)
    return records


@cache
def _symptom_lines() -> list[tuple[str, str]]:
    return symptom_lines()  # loads the rules: once, not per segment


def _noise(count: int, index: int, t0: int, t1: int) -> list[dict[str, Any]]:
    """Lines of idle nodes over [t0, t1]; one in ``SYMPTOM_EVERY`` is a symptom (a node's error
    outside any job: evidence that must stay out of every verdict)."""
    step = max(1.0, (t1 - t0) / max(1, count))
    symptoms = _symptom_lines()
    out = []
    for i, (text, source, host) in enumerate(
        lines(count, seed=10_000 + index, symptom_rate=0, nodes=NOISE_NODES)
    ):
        if i % SYMPTOM_EVERY == SYMPTOM_EVERY - 1:
            text, source = symptoms[(index * 7 + i) % len(symptoms)]
        out.append(shipper_record(text, source, host, t0 + int(i * step)))
    return out


def _merge(*streams: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Interleave by record time; each stream keeps its own order (heapq.merge never reorders)."""
    return list(heapq.merge(*streams, key=lambda r: r["timestamp"]))


def segments(
    records_per_segment: int,
    storm_every: int,
    storm_nodes: int,
    storm_lines: int,
    stories: list[str] | None = None,
) -> Iterator[Segment]:
    """Endless segments, the stories named (all by default) in turn; every ``storm_every``-th
    segment carries a storm job."""
    rotation = [make for make in STORIES if not stories or make.__name__ in stories]
    if not rotation:
        raise ValueError(f"no story named {stories}; known: {', '.join(m.__name__ for m in STORIES)}")
    index = 0
    while True:
        t0 = BASE_MS + index * DAY_MS
        name, story = _story_records(index, t0, rotation)
        storm = storm_every and index % storm_every == storm_every - 1
        storm_part = _storm(index, storm_nodes, storm_lines, t0) if storm else []
        t1 = max(story[-1]["timestamp"], storm_part[-1]["timestamp"] if storm_part else 0) + 60_000
        noise = _noise(max(0, records_per_segment - len(story)), index, t0, t1)
        yield Segment(index, name, storm_nodes if storm else 0, _merge(story, storm_part, noise))
        index += 1
