"""Prometheus metrics of every worker process (docs/observability.md lists them).

The metrics live in prometheus-client's default registry, so they are counted whether or not
anyone scrapes them (an increment costs well under a microsecond; the extractor aggregates per
batch first). ``serve(port)`` exposes them over HTTP; ``--metrics-port`` / ``metrics_port``
turns that on per worker. Stage code calls the small functions below rather than touching the
metric objects, so that label names and bounded label values are decided in one place.
"""

from __future__ import annotations

import os
import re
import time
from collections import Counter as Tally
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from prometheus_client import Counter, Gauge, Histogram, disable_created_metrics, start_http_server

__all__ = [
    "count_ahead_of_record",
    "count_dead_letter",
    "count_extracted_batch",
    "count_rebalance",
    "count_sink_write",
    "count_stall_restart_before_exec",
    "count_verdict",
    "reason_class",
    "serve",
]

disable_created_metrics()  # the *_created series double the output and no panel or rule reads them

RECORDS = Counter("faultstream_records", "Ingest records the extractor fetched", ["topic"])
LINES = Counter("faultstream_lines", "Log lines the extractor normalized and scanned", ["topic"])
SYMPTOMS = Counter(
    "faultstream_symptoms", "Symptoms the extractor matched (one per line and rule)", ["rule", "domain"]
)
DEAD_LETTERS = Counter(
    "faultstream_dead_letters", "Records dead-lettered, by stage and reason", ["stage", "reason"]
)
BATCH_SECONDS = Histogram(
    "faultstream_extractor_batch_seconds",
    "CPU time to normalize, scan and collapse one fetched batch",
    buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
)
VERDICTS = Counter(
    "faultstream_verdicts", "Verdicts emitted: the first revision of each workload run", ["domain", "state"]
)
REVISIONS = Counter(
    "faultstream_verdict_revisions",
    "Later revisions of a verdict (late evidence changed it)",
    ["domain", "state"],
)
NODE_VERDICTS = Counter(
    "faultstream_node_verdicts",
    "Bad verdicts (first revision) blaming a node, by node and domain: the fleet view as metrics",
    ["node", "domain"],
)
ROOT_SYMPTOMS = Counter(
    "faultstream_root_symptoms", "Verdicts (first revision) by root symptom", ["symptom", "domain"]
)
VERDICT_LATENCY = Histogram(
    "faultstream_verdict_latency_seconds",
    "Wall time from the job's end (event time) to its first verdict being emitted",
    buckets=(1, 2, 5, 10, 20, 30, 45, 60, 90, 120, 180, 300, 600, 1800, 3600),
)
CONSUMER_LAG = Gauge(
    "faultstream_consumer_lag",
    "Records in a partition after its consumer group's committed offset",
    ["group", "topic", "partition"],
)
IGNORED_CLAIMS = Counter(
    "faultstream_ignored_claims",
    "Log lines that named a job or a node not theirs, ignored (correlator/claims.py)",
    ["stage"],
)
AHEAD_OF_RECORD = Counter(
    "faultstream_ahead_of_record",
    "Lines and job events dated more than 26 h ahead of their record's time: event time took the "
    "record's time instead (streams/future_lines.py)",
    ["stage", "topic"],
)
REBALANCES = Counter("faultstream_rebalances", "Partition assignments this process received", ["stage"])
EXTRACTOR_RESTARTS = Counter(
    "faultstream_extractor_restarts",
    "Times the extractor lost the broker and started again in place (streams/extract_worker.py)",
)
STALL_RESTARTS = Counter(
    "faultstream_stall_restarts", "Times the stall watch replaced this correlator process in place"
)
SINK_VERDICTS = Counter(
    "faultstream_sink_verdicts", "Verdict revisions the Redis sink wrote, or skipped as stale", ["result"]
)
SINK_FLUSH_SECONDS = Histogram(
    "faultstream_sink_flush_seconds",
    "Duration of one Redis sink flush, retries included",
    buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 15.0, 60.0),
)
SINK_RETRIES = Counter("faultstream_sink_retries", "Redis writes the sink retried after a transient error")
SINK_FAILURES = Counter("faultstream_sink_failures", "Redis sink flushes that gave up (SinkError)")

#: execv keeps the environment, so a stall restart carries its count into the new process image.
STALL_RESTART_ENV = "FAULTSTREAM_STALL_RESTARTS_SO_FAR"
STALL_RESTARTS.inc(int(os.environ.get(STALL_RESTART_ENV, "0") or 0))

_QUOTED = re.compile(r"""'[^']*'?|"[^"]*"?""")
_NUMBER = re.compile(r"\d+")
_MAX_REASON = 80


def serve(port: int, host: str = "0.0.0.0") -> None:
    """Expose /metrics on ``host:port`` from a daemon thread (it dies with the process)."""
    start_http_server(port, addr=host)


def reason_class(reason: str) -> str:
    """A dead-letter reason as a bounded label: quoted values and numbers masked, cut short.

    Reasons carry the offending value (``'jobid' must be an integer, got 'x7'``); as a label that
    would make one series per bad record. The masked text still says what went wrong."""
    text = reason.split(", got ", 1)[0]
    text = _NUMBER.sub("N", _QUOTED.sub("'…'", text))
    return text[:_MAX_REASON]


def count_extracted_batch(
    records_by_topic: dict[str, int],
    lines_by_topic: dict[str, int],
    symptoms: Iterable[Any],
    dead_reasons: Iterable[str],
    seconds: float,
) -> None:
    """One extractor batch: what it read, matched and dead-lettered (aggregated, then counted)."""
    for topic, count in records_by_topic.items():
        RECORDS.labels(topic).inc(count)
    for topic, count in lines_by_topic.items():
        LINES.labels(topic).inc(count)
    for (rule, domain), count in Tally((s.rule_id, s.domain) for s in symptoms).items():
        SYMPTOMS.labels(rule, domain).inc(count)
    for reason, count in Tally(reason_class(r) for r in dead_reasons).items():
        DEAD_LETTERS.labels("extractor", reason).inc(count)
    BATCH_SECONDS.observe(seconds)


def count_dead_letter(stage: str, reason: str) -> None:
    DEAD_LETTERS.labels(stage, reason_class(reason)).inc()


def count_verdict(verdict: dict[str, Any], now: float | None = None) -> None:
    """A verdict revision the correlator emitted (``Verdict.model_dump(mode="json")``)."""
    domain = verdict.get("sub_domain") or "none"
    state = verdict.get("terminal_state") or "unknown"
    if int(verdict.get("revision") or 1) > 1:
        REVISIONS.labels(domain, state).inc()
        return
    VERDICTS.labels(domain, state).inc()
    root = verdict.get("root_symptom") or {}
    if root.get("symptom"):
        ROOT_SYMPTOMS.labels(root["symptom"], domain).inc()
    if state != "success":
        for node in dict.fromkeys(verdict.get("responsible_nodes") or []):
            NODE_VERDICTS.labels(str(node), domain).inc()
    end = _epoch_s((verdict.get("job") or {}).get("end"))
    if end is not None:
        VERDICT_LATENCY.observe(max(0.0, (now or time.time()) - end))


def count_ignored_claims(stage: str, lines: int) -> None:
    IGNORED_CLAIMS.labels(stage).inc(lines)


def count_ahead_of_record(stage: str, by_topic: dict[str, int]) -> None:
    for topic, count in by_topic.items():
        AHEAD_OF_RECORD.labels(stage, topic).inc(count)


def count_extractor_restart() -> None:
    EXTRACTOR_RESTARTS.inc()


def count_rebalance(stage: str) -> None:
    REBALANCES.labels(stage).inc()


def count_stall_restart_before_exec() -> None:
    """Called right before the process replaces itself: the new image starts from this count."""
    STALL_RESTARTS.inc()
    os.environ[STALL_RESTART_ENV] = str(int(os.environ.get(STALL_RESTART_ENV, "0") or 0) + 1)


def count_sink_write(applied: int, stale: int) -> None:
    SINK_VERDICTS.labels("applied").inc(applied)
    SINK_VERDICTS.labels("stale").inc(stale)


def set_lag(group: str, lag: dict[tuple[str, int], int]) -> None:
    """This process's partitions of ``group`` and their lag; series of partitions it no longer
    owns are removed, so that two workers never report the same partition for long."""
    for labels in _lag_series(group) - {(group, t, str(p)) for t, p in lag}:
        CONSUMER_LAG.remove(*labels)
    for (topic, partition), behind in lag.items():
        CONSUMER_LAG.labels(group, topic, str(partition)).set(behind)


def _lag_series(group: str) -> set[tuple[str, str, str]]:
    found = set()
    for metric in CONSUMER_LAG.collect():
        for sample in metric.samples:
            if sample.labels.get("group") == group:
                found.add((group, sample.labels["topic"], sample.labels["partition"]))
    return found


def _epoch_s(text: str | None) -> float | None:
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()
