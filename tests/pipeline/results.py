"""Reading what the live pipeline produced, and what the backtest says it should be."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer

from correlator.settings import CorrelatorSettings
from extractors.loader import load_ruleset
from sinks.redis_reader import recent_verdicts
from streams.backtest import backtest, latest_revisions
from tests.conftest import REPO
from tests.golden.stories import RECORDINGS


def _first_record_ms(path: Path) -> int:
    return orjson.loads(path.open("rb").readline())["timestamp"]


#: The golden recordings in the order their days come, as a live cluster's logs arrive. By name,
#: the first half ended on the last day and every job of the second half was days late: its job end
#: was decided as soon as it came, racing the job's last lines (the `lines_seen` shortfall the
#: rebalance tests saw, 283 for 289; docs/reliability.md), which the backtest, one file at a time,
#: never does.
ALL_RECORDINGS = sorted(RECORDINGS.glob("*.jsonl"), key=_first_record_ms)


def expected_verdicts(recordings: list[Path], grace_s: float) -> dict[str, dict]:
    """The backtest's last revision per workload, with the pipeline's windows."""
    ruleset = load_ruleset(REPO / "rules")
    settings = CorrelatorSettings(grace_s=grace_s, tail_s=grace_s)
    out = {}
    for path in recordings:
        for verdict in latest_revisions(backtest(path, ruleset, settings).verdicts):
            out[verdict.workload_id] = verdict.model_dump(mode="json")
    return out


def comparable(verdict: dict[str, Any]) -> dict[str, Any]:
    """A verdict without what depends on the transport: provenance (topic/partition/offset of
    the proof line, which a recording and a topic number differently) and the revision count."""
    body = orjson.loads(orjson.dumps(verdict))
    body.pop("revision", None)
    if body.get("root_symptom"):
        body["root_symptom"].pop("origin", None)
    if body["verdict"].get("root_symptom"):
        body["verdict"]["root_symptom"]["source"].pop("observation_id", None)
        body["verdict"]["root_symptom"]["source"].pop("pos", None)
    for entries in body.get("symptoms", {}).values():
        for entry in entries:
            entry["source"].pop("observation_id", None)
            entry["source"].pop("pos", None)
    return body


def wait_for_verdicts(
    redis_url: str, prefix: str, expected: dict[str, dict], timeout_s: float = 120.0, settle_s: float = 3.0
) -> dict[str, dict]:
    """Poll Redis until every expected workload has a verdict equal to the expected one (or the
    time runs out); returns what Redis holds, latest revision per workload."""
    deadline = time.monotonic() + timeout_s
    got: dict[str, dict] = {}
    while time.monotonic() < deadline:
        got = {v["workload_id"]: v for v in asyncio.run(recent_verdicts(redis_url, prefix, 1000))}
        done = all(w in got and _same_but_counts(got[w], e) for w, e in expected.items())
        if done:
            time.sleep(settle_s)  # nothing more should come
            return {v["workload_id"]: v for v in asyncio.run(recent_verdicts(redis_url, prefix, 1000))}
        time.sleep(0.5)
    return got


def _same_but_counts(a: dict, b: dict) -> bool:
    mine, theirs = comparable(a), comparable(b)
    mine.pop("lines_seen"), theirs.pop("lines_seen")
    return mine == theirs


def read_topic(bootstrap: str, topic: str, idle_s: float = 3.0) -> list[tuple[bytes | None, Any]]:
    """Every record of a topic from the beginning, until it stays idle for ``idle_s``."""

    async def consume() -> list[tuple[bytes | None, Any]]:
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            group_id=None,
            isolation_level="read_committed",  # as the correlator reads: no aborted extractor batch
        )
        await consumer.start()
        records = []
        try:
            while True:
                batch = await consumer.getmany(timeout_ms=int(idle_s * 1000))
                if not batch:
                    return records
                for rows in batch.values():
                    records += [(r.key, orjson.loads(r.value)) for r in rows]
        finally:
            await consumer.stop()

    return asyncio.run(consume())
