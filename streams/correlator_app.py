"""The correlator stage: one faust app, two agents, two tables (docs/architecture.md).

* ``node-correlator`` consumes node-events (keyed by node): collapsed symptoms, line counts, run
  placements; it keeps per-node state in the ``node-state`` table and reports each run's
  evidence to workload-events.
* ``workload-correlator`` consumes workload-events (keyed by workload): job events (fanned out to
  the nodes as placements), direct symptoms, node reports; it keeps per-workload state in the
  ``workload-state`` table and emits verdicts to the verdicts topic and Redis.

Tables have changelog topics, so a restarted worker recovers its partitions' state; a per-
partition offset marker in the same changelog skips records it had already applied. A timer
sends ticks to every partition so that idle partitions still reach a job's end plus grace.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

import faust
import orjson

from correlator.verdict import Verdict
from extractors.loader import Ruleset
from sinks.base import Sink, SinkError
from streams import metrics, wire
from streams.gap_fill import GapReader, ReadBack
from streams.partitions import NodePartition, WorkloadPartition
from streams.read_committed import ReadCommittedApp
from streams.settings import Settings
from streams.stall_watch import StallWatch
from streams.topics import Topics, partition_for

__all__ = ["build_correlator_app"]

log = logging.getLogger("faultstream.correlator")

SINK_RETRY_PAUSE_S = 5.0
WATERMARK_KEY = b"__wm__"  # the key of the extractor's watermark records (streams/extract_worker.py)
STALL_CHECK_S = 5.0


def _credentials(settings: Settings) -> Any:
    if settings.kafka_security_protocol.startswith("SASL"):
        password = settings.kafka_sasl_password.get_secret_value() if settings.kafka_sasl_password else None
        return faust.SASLCredentials(
            username=settings.kafka_sasl_username,
            password=password,
            mechanism=settings.kafka_sasl_mechanism,
            ssl_context=settings.ssl_context(),
        )
    context = settings.ssl_context()
    return faust.SSLCredentials(context) if context else None


def _app(settings: Settings) -> faust.App:
    # reads only committed records: the extractor's batches are transactions (streams/read_committed.py)
    return ReadCommittedApp(
        f"{settings.namespace}faultstream-correlator",
        broker=f"kafka://{settings.kafka_bootstrap_servers}",
        broker_credentials=_credentials(settings),
        store="memory://",
        topic_partitions=settings.partitions,
        topic_replication_factor=1,
        consumer_auto_offset_reset="earliest",
        web_enabled=False,
        producer_acks=-1,
        broker_commit_every=100,
        broker_session_timeout=settings.session_timeout_s,
        broker_heartbeat_interval=min(3.0, settings.session_timeout_s / 3),
        broker_commit_interval=1.0,
    )


class _Stage:
    """Holds the partition processors of one worker; rebuilt after every rebalance."""

    def __init__(self, app: faust.App, settings: Settings, ruleset: Ruleset, sinks: list[Sink]) -> None:
        self.settings, self.ruleset, self.sinks = settings, ruleset, sinks
        self.correlator_settings = settings.correlator_settings()
        self.topics = Topics.from_settings(settings)
        parts = settings.partitions
        self.node_topic = app.topic(
            self.topics.node_events, partitions=parts, key_serializer="raw", value_serializer="raw"
        )
        self.workload_topic = app.topic(
            self.topics.workload_events, partitions=parts, key_serializer="raw", value_type=bytes
        )
        self.verdict_topic = app.topic(
            self.topics.verdicts, partitions=parts, key_serializer="raw", value_serializer="raw"
        )
        self.deadletter_topic = app.topic(
            self.topics.deadletter, partitions=parts, key_serializer="raw", value_serializer="raw"
        )
        self.node_table = app.Table("node-state", partitions=parts, key_type=bytes, value_type=bytes)
        self.workload_table = app.Table("workload-state", partitions=parts, key_type=bytes, value_type=bytes)
        self.node_parts: dict[int, NodePartition] = {}
        self.workload_parts: dict[int, WorkloadPartition] = {}
        self.stall_watch = StallWatch(settings.stall_restart_s)
        self.gaps = GapReader(settings.aiokafka_options())
        #: (topic, partition) → offset of the last extractor watermark applied: the last record of
        #: an extractor transaction there, so the offset after it is the transaction's commit marker
        self.batch_ends: dict[tuple[str, int], int] = {}

    def forget(self) -> None:
        self.node_parts.clear()
        self.workload_parts.clear()

    async def hand_over(self, app: faust.App) -> None:
        """Before a rebalance moves partitions away: write the line counts still held back (see
        NodePartition.persist) and wait until the changelog has them, so that the next owner
        recovers every count this worker applied. Then drop the processors."""
        for part in self.node_parts.values():
            part.persist(everything=True)
        await app.producer.flush()
        self.forget()

    def node_part(self, partition: int) -> NodePartition:
        if partition not in self.node_parts:
            self.node_parts[partition] = NodePartition(
                self.correlator_settings,
                _StrTable(self.node_table, partition),
                partition,
                self.settings.partitions,
            )
            _note_torn_flush("node", self.node_parts[partition])
        return self.node_parts[partition]

    def workload_part(self, partition: int) -> WorkloadPartition:
        if partition not in self.workload_parts:
            self.workload_parts[partition] = WorkloadPartition(
                self.ruleset,
                self.correlator_settings,
                _StrTable(self.workload_table, partition),
                partition,
                self.settings.partitions,
            )
            # lines naming a job they may not name (correlator/claims.py): a metric (issue 11)
            claims = self.workload_parts[partition].workloads.claims
            claims.on_ignored = lambda lines: metrics.count_ignored_claims("correlator", lines)
            _note_torn_flush("workload", self.workload_parts[partition])
        return self.workload_parts[partition]

    async def on_node_event(self, message: Any) -> None:
        part = self.node_part(message.partition)
        for missing in await self._read_back_gap(part, message):
            await self._apply_node_event(part, missing)
        await self._apply_node_event(part, message)
        self._note_batch_end(message)

    async def on_workload_event(self, message: Any) -> None:
        part = self.workload_part(message.partition)
        for missing in await self._read_back_gap(part, message):
            await self._apply_workload_event(part, missing)
        await self._apply_workload_event(part, message)
        self._note_batch_end(message)

    def _note_batch_end(self, message: Any) -> None:
        if message.key == WATERMARK_KEY:  # the extractor sends it last, per partition and batch
            self.batch_ends[(message.topic, message.partition)] = message.offset

    async def _read_back_gap(self, part: NodePartition | WorkloadPartition, message: Any) -> list[ReadBack]:
        """The records between the partition's offset marker and this one, if the stream skipped
        some (streams/gap_fill.py); none in the normal case. Offsets no reader sees are normal too:
        the commit marker after each extractor transaction, and after a crash an aborted batch and
        its abort marker; only a read-back tells those from records the stream dropped."""
        marker = part.clock.offset
        if marker < 0 or message.offset <= marker + 1:
            return []
        if message.offset == marker + 2 and self.batch_ends.get((message.topic, message.partition)) == marker:
            return []  # the one offset skipped is the commit marker of the batch that ended at the marker
        missing = await self.gaps.read(message.topic, message.partition, marker + 1, message.offset)
        if missing:
            log.warning(
                "%s[%d]: the stream skipped offsets %d..%d; read %d records back",
                message.topic,
                message.partition,
                marker + 1,
                message.offset - 1,
                len(missing),
            )
        return missing

    async def _apply_node_event(self, part: NodePartition, message: Any) -> None:
        if not part.fresh(message.offset):
            log.debug("node-events %d:%d already applied, skipped", message.partition, message.offset)
            return
        try:
            reports = part.handle(wire.decode(message.value), int(message.timestamp * 1000), message.offset)
        except Exception as exc:  # one bad record must not stop the stage: dead-letter it
            part.passed(message.offset)
            await self.dead_letter(message, exc)
            return
        for report in reports:
            log.debug("node %s reports run %s (%d groups)", report.node, report.workload_id, len(report.groups))
        by_workload: dict[str, list] = {}
        for report in reports:  # a node partition reports hundreds of nodes of one job at once
            by_workload.setdefault(report.workload_id, []).append(report)
        packed = [(w, record) for w, rs in by_workload.items() for record in wire.packed_evidence(rs)]
        if (reported := part.announce()) is not None:  # after the reports it vouches for (same producer)
            packed += [(n, wire.encode(reported)) for n in range(self.settings.partitions)]
        await self.send_all(self.workload_topic, packed)
        part.persist()  # after the outputs: a crash in between replays the record, never loses it

    async def _apply_workload_event(self, part: WorkloadPartition, message: Any) -> None:
        if not part.fresh(message.offset):
            log.debug("workload-events %d:%d already applied, skipped", message.partition, message.offset)
            return
        try:
            placements, verdicts = part.handle(
                wire.decode(message.value), int(message.timestamp * 1000), message.offset
            )
        except Exception as exc:  # one bad record must not stop the stage: dead-letter it
            part.passed(message.offset)
            await self.dead_letter(message, exc)
            return
        for p in placements:
            log.debug("run %s placed on node %s", p.workload_id, p.node)
        by_partition: dict[int, list] = {}
        for p in placements:  # a 12,500-node job's end: a few records, not one per node
            by_partition.setdefault(partition_for(p.node, self.settings.partitions), []).append(p)
        packed = [(n, record) for n, ps in sorted(by_partition.items()) for record in wire.packed_places(ps)]
        if (placed := part.announce()) is not None:  # after the placements it vouches for (same producer)
            packed += [(n, wire.encode(placed)) for n in range(self.settings.partitions)]
        await self.send_all(self.node_topic, packed)
        await self.emit(verdicts)
        part.persist()  # after the outputs: a crash in between replays the record, never loses it

    @contextlib.contextmanager
    def watching(self, message: Any) -> Iterator[None]:
        self.stall_watch.begin(message.topic, message.partition, time.monotonic())
        try:
            yield
        finally:
            self.stall_watch.end(message.topic, time.monotonic())

    def stalled(self, app: faust.App) -> str | None:
        """Why this worker looks stuck, or None (see streams/stall_watch.py)."""
        now = time.monotonic()
        if app.rebalancing or app.in_recovery:
            if self.stall_watch.settling(now):
                return "rebalance or table recovery still not finished"
            return None
        mine = {self.node_topic.get_topic_name(), self.workload_topic.get_topic_name()}
        assigned = [(tp.topic, tp.partition) for tp in app.consumer.assignment() if tp.topic in mine]
        silent = self.stall_watch.stalled(assigned, now)
        if not silent:
            return None
        return "no event on assigned partitions " + ", ".join(f"{t}[{p}]" for t, p in silent)

    async def send_all(self, topic: faust.TopicT, keyed: list[tuple[str | int, bytes]]) -> None:
        """Send, then wait until the broker has them all: one round trip, not one per record.
        Each record goes with its key (a workload, to its partition) or to a partition."""
        futures = []
        for key, value in keyed:
            if isinstance(key, int):
                partition, raw_key = key, b"__packed__"
            else:
                partition, raw_key = partition_for(key, self.settings.partitions), key.encode()
            futures.append(await topic.send(key=raw_key, value=value, partition=partition, force=True))
        if futures:
            await asyncio.gather(*futures)

    async def dead_letter(self, message: Any, exc: Exception) -> None:
        log.exception("record %s:%d:%d dead-lettered", message.topic, message.partition, message.offset)
        value = message.value.decode("utf-8", "replace") if isinstance(message.value, bytes) else message.value
        body = {
            "reason": f"correlator: {type(exc).__name__}: {exc}",
            "topic": message.topic,
            "origin": f"{message.topic}:{message.partition}:{message.offset}",
            "value": value,
            "stage": "correlator",
        }
        fut = await self.deadletter_topic.send(
            key=body["origin"].encode(), value=orjson.dumps(body), force=True
        )
        await fut
        metrics.count_dead_letter("correlator", type(exc).__name__)  # metrics (observability)

    async def emit(self, verdicts: list[Verdict]) -> None:
        for verdict in verdicts:
            body = verdict.model_dump(mode="json")
            fut = await self.verdict_topic.send(
                key=verdict.workload_id.encode(),
                value=orjson.dumps(body),
                partition=partition_for(verdict.workload_id, self.settings.partitions),
                force=True,
            )
            await fut
            metrics.count_verdict(body)  # metrics (observability)
            for sink in self.sinks:
                await sink.add(body)
        for sink in self.sinks if verdicts else []:
            await _flush_until_done(sink)
        for verdict in verdicts:
            log.info(
                "verdict %s rev %d: %s",
                verdict.workload_id,
                verdict.revision,
                verdict.verdict.attribution_outcome,
            )


def _note_torn_flush(side: str, part: NodePartition | WorkloadPartition) -> None:
    """Say so when the partition's last flush was cut short (a crash): the records up to the
    flush's marker are read again and skipped where they are already in (streams/partitions.py)."""
    if (torn := part.torn_flush) is not None:
        marker, flush = torn
        log.warning(
            "%s partition %d: its last flush was cut short (marker %d, the flush's %d)",
            side,
            part.partition,
            marker,
            flush,
        )


async def _flush_until_done(sink: Sink) -> None:
    """The event is acknowledged (its offset committable) only after this returns: when a sink
    gives up after its own retry window, keep trying — back-pressure, never a lost verdict."""
    while True:
        try:
            await sink.flush()
            return
        except SinkError as exc:
            log.error("verdict sink still failing, retrying in %.0f s: %s", SINK_RETRY_PAUSE_S, exc)
            await asyncio.sleep(SINK_RETRY_PAUSE_S)


def _restart_stuck_worker(reason: str, limit_s: float) -> None:
    """Replace this process with a fresh one (same pid, same arguments): a faust worker stuck
    after a rebalance does not recover by itself, while a restart recovers its partitions' state
    from the changelogs and resumes from the committed offsets, so nothing is lost."""
    log.error("stuck for %.0f s (%s): restarting", limit_s, reason)
    metrics.count_stall_restart_before_exec()  # metrics (observability)
    logging.shutdown()
    os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])


class _StrTable:
    """One partition's window on a faust table whose raw keys come back as bytes: str keys here.

    Inside an event, writes go through the table, to the changelog partition of the event being
    processed (faust's rule). Outside one — the flush before a rebalance hands the partition
    over — they go to this partition's changelog directly, which the table API would refuse.
    """

    def __init__(self, table: Any, partition: int) -> None:
        self.table = table
        self.partition = partition

    def __getitem__(self, key: str) -> Any:
        return self.table[key.encode()]

    def __setitem__(self, key: str, value: Any) -> None:
        if faust.current_event() is not None:
            self.table[key.encode()] = value
        else:
            self.table.data[key.encode()] = value
            self.table.send_changelog(self.partition, key.encode(), value)

    def __delitem__(self, key: str) -> None:
        if faust.current_event() is not None:
            del self.table[key.encode()]
        else:  # a tombstone, as faust itself writes one for a deleted key
            self.table.data.pop(key.encode(), None)
            self.table.send_changelog(self.partition, key.encode(), None, value_serializer="raw")

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key.encode() in self.table

    def get(self, key: str, default: Any = None) -> Any:
        return self.table.get(key.encode(), default)

    def keys(self) -> list[str]:
        return [k.decode() if isinstance(k, bytes) else k for k in list(self.table)]


def build_correlator_app(settings: Settings, ruleset: Ruleset, sinks: list[Sink]) -> faust.App:
    app = _app(settings)
    stage = _Stage(app, settings, ruleset, sinks)

    @app.on_partitions_revoked.connect
    async def _revoked(sender: Any, revoked: Any, **kwargs: Any) -> None:
        await stage.hand_over(app)

    @app.on_partitions_assigned.connect
    async def _assigned(sender: Any, assigned: Any, **kwargs: Any) -> None:
        stage.forget()

    @app.agent(stage.node_topic, name="node-correlator")
    async def node_correlator(stream: faust.StreamT) -> None:
        async for event in stream.events():
            with stage.watching(event.message):
                await stage.on_node_event(event.message)

    @app.agent(stage.workload_topic, name="workload-correlator")
    async def workload_correlator(stream: faust.StreamT) -> None:
        async for event in stream.events():
            with stage.watching(event.message):
                await stage.on_workload_event(event.message)

    if settings.stall_restart_s > 0:

        @app.timer(interval=STALL_CHECK_S)
        async def stall_check() -> None:
            reason = stage.stalled(app)
            if reason:
                _restart_stuck_worker(reason, settings.stall_restart_s)

    @app.timer(interval=settings.tick_interval_s)
    async def tick() -> None:
        for topic in (stage.node_topic, stage.workload_topic):
            for partition in range(settings.partitions):
                await topic.send(
                    key=b"__tick__", value=wire.encode(wire.tick()), partition=partition, force=True
                )

    return app
