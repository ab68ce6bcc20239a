"""An attributor's evidence as a recording, and its attribution by ``faultstream backtest``'s code.

The recording is exactly what ``faultstream load`` would publish for the same evidence: one
canonical scheduler record for the job's start and one for its end (docs/formats.md, canonical
form), and one log record per observation line on ``logs.<source>``. Each line's record carries
``partition`` = the observation id and ``offset`` = the line's 1-based position in it, so the
root symptom's provenance (``topic:partition:offset``) names the observation and ``pos``.
"""

from __future__ import annotations

import tempfile
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any

import orjson

from correlator.verdict import Verdict
from extractors.loader import Ruleset
from streams.api.models import Workload
from streams.api.store import StoredObservation
from streams.backtest import backtest, latest_revisions
from streams.settings import DEFAULT_MATCHER_CACHE_DIR

__all__ = [
    "AttributorEvidence",
    "NotAttributable",
    "attribute",
    "line_time_ms",
    "recording_jsonl",
    "recording_records",
]

#: Sources whose lines name the workload themselves: an application log is the job's own output.
WORKLOAD_SOURCES = frozenset({"applog"})
TERMINAL_STATES = frozenset(
    {
        "COMPLETED",
        "FAILED",
        "NODE_FAIL",
        "TIMEOUT",
        "CANCELLED",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "BOOT_FAIL",
        "DEADLINE",
    }
)

# backtest() keeps one matcher per process in a module global: one attribution at a time.
_BACKTEST_LOCK = threading.Lock()


class NotAttributable(Exception):
    """The workload has no end yet (or no terminal state): there is nothing to decide."""


@dataclass(frozen=True)
class AttributorEvidence:
    workload: Workload
    observations: list[StoredObservation]


def _ms(moment: datetime | str | None, zone: tzinfo = UTC) -> int | None:
    """Epoch ms; a time without a zone is in the workload's ``timezone`` (UTC unless told)."""
    if moment is None:
        return None
    if isinstance(moment, str):
        moment = datetime.fromisoformat(moment)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=zone)
    return int(moment.timestamp() * 1000)


def line_time_ms(line: dict[str, Any], observation: StoredObservation, workload: Workload) -> int:
    """A line's own time; else the observation's interval end, kept inside the job's run (an
    operator fetches a job's logs up to "now", long after it ended); else the job's end."""
    zone = workload.zone
    own = _ms(line.get("time"), zone)
    if own is not None:
        return own
    start, end = _ms(workload.job_start_time, zone), _ms(workload.job_end_time, zone)
    moment = _ms(observation.interval_end, zone) or end or observation.accepted_ms
    if end is not None:
        moment = min(moment, end)
    if start is not None:
        moment = max(moment, start)
    return moment


def _scheduler_records(workload: Workload) -> tuple[list[dict], list[dict]]:
    """(records before the lines, records after them): the job's start and end."""
    common = {
        "workload_id": workload.workload_id,
        "nodes": list(workload.nodes),
        "scheduler": workload.type,
        **({"user": workload.username} if workload.username else {}),
        **({"name": workload.name} if workload.name else {}),
    }
    start_ms, end_ms = _ms(workload.job_start_time, workload.zone), _ms(workload.job_end_time, workload.zone)
    before, after = [], []
    if start_ms is not None:
        value = {"type": "job_start", "time": start_ms / 1000, **common}
        before.append({"topic": "events.scheduler", "value": value, "key": None, "timestamp": start_ms})
    if end_ms is not None and workload.status in TERMINAL_STATES:
        value = {"type": "job_end", "time": end_ms / 1000, "state": workload.status, **common}
        if start_ms is not None:
            value["start_time"] = start_ms / 1000
        after.append({"topic": "events.scheduler", "value": value, "key": None, "timestamp": end_ms})
    return before, after


def _line_record(line: dict[str, Any], pos: int, observation: StoredObservation, workload: Workload) -> dict:
    time_ms = line_time_ms(line, observation, workload)
    source = observation.source
    if source == "scheduler":
        try:
            value = orjson.loads(line["body"])
        except orjson.JSONDecodeError:
            value = None
        if isinstance(value, dict):  # a scheduler record as its scheduler wrote it
            return {
                "topic": "events.scheduler",
                "value": value,
                "key": line.get("hostname"),
                "timestamp": time_ms,
                "partition": observation.observation_id,
                "offset": pos,
            }
        source = "syslog"  # a scheduler's log line (slurmctld, slurmstepd) reads like syslog
    value = {"log": line["body"], "@timestamp": time_ms / 1000}
    if line.get("hostname"):
        value["hostname"] = line["hostname"]
    if source in WORKLOAD_SOURCES or not line.get("hostname"):
        value["workload_id"] = workload.workload_id
    return {
        "topic": f"logs.{source}",
        "value": value,
        "key": None,
        "timestamp": time_ms,
        "partition": observation.observation_id,
        "offset": pos,
    }


def recording_records(evidence: AttributorEvidence) -> list[dict]:
    """The recording for ``faultstream backtest``: start, the lines in event time, end."""
    before, after = _scheduler_records(evidence.workload)
    lines = [
        _line_record(line, pos, observation, evidence.workload)
        for observation in evidence.observations
        for pos, line in enumerate(observation.lines, start=1)
    ]
    lines.sort(key=lambda record: record["timestamp"])  # stable: equal times keep arrival order
    return before + lines + after


def recording_jsonl(evidence: AttributorEvidence) -> bytes:
    return b"".join(orjson.dumps(record) + b"\n" for record in recording_records(evidence))


def attribute(
    evidence: AttributorEvidence, ruleset: Ruleset, matcher_cache_dir: Path | None = DEFAULT_MATCHER_CACHE_DIR
) -> Verdict:
    """The verdict ``faultstream backtest`` gives on this evidence (its last revision)."""
    if evidence.workload.job_end_time is None or evidence.workload.status not in TERMINAL_STATES:
        raise NotAttributable("the workload has not ended: set job_end_time and a terminal status")
    with tempfile.TemporaryDirectory(prefix="faultstream-api-") as scratch:
        path = Path(scratch) / "evidence.jsonl"
        path.write_bytes(recording_jsonl(evidence))
        with _BACKTEST_LOCK:
            verdicts = latest_revisions(backtest(path, ruleset, matcher_cache_dir=matcher_cache_dir).verdicts)
    mine = [v for v in verdicts if v.workload_id == evidence.workload.workload_id]
    if not mine:
        raise NotAttributable("the engine found no run of this workload in its evidence")
    return mine[-1]
