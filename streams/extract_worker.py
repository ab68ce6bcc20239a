"""The extractor stage: the hot path that sees every log line (docs/architecture.md).

A plain aiokafka consumer-group worker, no per-event framework cost: fetch a batch from the
ingest topics, normalize it, scan it with one Hyperscan call, collapse what matched, produce the
results keyed by node or workload, wait for the broker's acknowledgements, and only then commit
the batch's offsets (at-least-once: nothing is lost; a replay after a crash only repeats).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter as Tally
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener
from aiokafka.errors import CommitFailedError
from aiokafka.structs import ConsumerRecord, TopicPartition

from correlator.batching import BatchContribution, collapse_batch
from correlator.claims import ClaimCheck
from correlator.evidence import EvidenceGroup
from extractors.loader import Ruleset
from extractors.matchers import HyperscanMatcher
from streams import metrics, wire
from streams.gc_policy import relax_for_batches
from streams.lag_probe import LagProbe
from streams.normalize import normalize_record
from streams.records import DeadLetter, JobEvent, LogLine
from streams.settings import Settings
from streams.topics import Topics, partition_for, record_time_ms
from streams.watermarks import InputWatermarks

__all__ = ["ExtractorStats", "ExtractorWorker"]

log = logging.getLogger("faultstream.extractor")


@dataclass
class ExtractorStats:
    batches: int = 0
    records: int = 0
    lines: int = 0
    symptoms: int = 0
    dead_letters: int = 0
    seconds_busy: float = 0.0
    dead_reasons: dict[str, int] = field(default_factory=dict)


@dataclass
class _Outputs:
    node: list[tuple[str, dict]] = field(default_factory=list)
    node_groups: list[tuple[int, bytes]] = field(default_factory=list)  # (partition, packed groups)
    node_counts: list[tuple[int, dict]] = field(default_factory=list)  # (partition, line counts)
    workload: list[tuple[str, dict | bytes]] = field(default_factory=list)
    dead: list[DeadLetter] = field(default_factory=list)
    #: The watermark record sent after the batch, made when it was read (streams/watermarks.py).
    mark: dict[str, Any] = field(default_factory=lambda: wire.watermark(0))


class ExtractorWorker:
    def __init__(self, settings: Settings, ruleset: Ruleset, group_id: str | None = None) -> None:
        self.settings = settings
        self.topics = Topics.from_settings(settings)
        self.matcher = HyperscanMatcher(ruleset, settings.matcher_cache_dir)
        self.claims = ClaimCheck(
            settings.scheduler_hosts or (),
            on_ignored=lambda lines: metrics.count_ignored_claims("extractor", lines),
        )
        self.group_id = group_id or f"{settings.namespace}faultstream-extractor"
        self.stats = ExtractorStats()
        #: The latest event time read: data records carry it, for correlators older than watermarks.
        self.latest_ms = 0
        self.inputs = InputWatermarks(int(settings.idle_partition_s * 1000))
        self._stopping = asyncio.Event()

    def stop(self) -> None:
        self._stopping.set()

    async def run(self) -> None:
        options = self.settings.aiokafka_options()
        consumer = AIOKafkaConsumer(
            group_id=self.group_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_partition_fetch_bytes=8 << 20,
            fetch_max_bytes=64 << 20,
            **options,
        )
        producer = AIOKafkaProducer(
            acks="all", linger_ms=5, max_batch_size=1 << 20, compression_type=None, **options
        )
        consumer.subscribe(list(self.topics.ingest), listener=_CountRebalances(self.inputs))
        await producer.start()
        await consumer.start()
        relax_for_batches()
        mine = lambda: [(tp.topic, tp.partition) for tp in consumer.assignment()]  # noqa: E731
        probe = asyncio.ensure_future(LagProbe(options, self.group_id, mine).run())
        try:
            await self._loop(consumer, producer)
        finally:
            probe.cancel()
            await asyncio.gather(probe, return_exceptions=True)
            await consumer.stop()
            await producer.stop()

    async def _loop(self, consumer: AIOKafkaConsumer, producer: AIOKafkaProducer) -> None:
        """One batch in flight: while the broker acknowledges batch N, batch N+1 is fetched and
        processed. Batches are produced and committed strictly in order, each commit naming the
        offsets after its own batch, so a crash replays at most the unacknowledged batches."""
        in_flight: asyncio.Task[None] | None = None
        try:
            while not self._stopping.is_set():
                fetched = await consumer.getmany(
                    timeout_ms=self.settings.batch_timeout_ms, max_records=self.settings.batch_max_records
                )
                records = [r for batch in fetched.values() for r in batch]
                if not records:
                    in_flight = await self._announce_idle_inputs(consumer, producer, in_flight)
                    continue
                started = time.perf_counter()
                outputs = self.process(records)
                self.stats.seconds_busy += time.perf_counter() - started
                offsets = {tp: batch[-1].offset + 1 for tp, batch in fetched.items() if batch}
                if in_flight is not None:
                    await in_flight  # the previous batch is acknowledged and committed first
                in_flight = asyncio.ensure_future(self._deliver(consumer, producer, outputs, offsets))
                self.stats.batches += 1
        finally:
            if in_flight is not None:
                await in_flight

    async def _deliver(
        self,
        consumer: AIOKafkaConsumer,
        producer: AIOKafkaProducer,
        outputs: _Outputs,
        offsets: dict[TopicPartition, int],
    ) -> None:
        await self._produce(producer, outputs)
        # only after the broker has every output of the batch; partitions a rebalance took away
        # meanwhile are replayed by their new owner from its last commit (at-least-once)
        assigned = consumer.assignment()
        mine = {tp: offset for tp, offset in offsets.items() if tp in assigned}
        try:
            if mine:
                await consumer.commit(mine)
        except CommitFailedError as exc:
            log.warning("batch delivered but not committed (the group rebalanced): %s", exc)

    async def _announce_idle_inputs(
        self, consumer: AIOKafkaConsumer, producer: AIOKafkaProducer, in_flight: asyncio.Task[None] | None
    ) -> asyncio.Task[None] | None:
        """No record came: an input partition that has gone idle may have freed the watermark.
        Announced like a batch with nothing in it, after the batch in flight."""
        announced = self.inputs.watermark_ms
        if self.inputs.advance(_wall_ms()) <= announced:
            return in_flight
        if in_flight is not None:
            await in_flight
        return asyncio.ensure_future(self._deliver(consumer, producer, _Outputs(mark=self._mark()), {}))

    def _mark(self) -> dict[str, Any]:
        idle_ms = int(self.settings.idle_partition_s * 1000)
        return wire.watermark(self.inputs.advance(_wall_ms()), self.inputs.source, idle_ms)

    def process(self, records: Sequence[ConsumerRecord]) -> _Outputs:
        """Normalize, extract and collapse one batch (pure CPU; no I/O)."""
        started = time.perf_counter()
        lines: list[LogLine] = []
        events: list[JobEvent] = []
        out = _Outputs()
        lines_by_topic: dict[str, int] = {}
        wall_ms = _wall_ms()
        for record in records:
            normalized = normalize_record(
                record.topic,
                record.value,
                _key(record.key),
                record_time_ms(record.timestamp, record.headers),
                f"{record.topic}:{record.partition}:{record.offset}",
                self.topics.ingest,
            )
            lines += normalized.lines
            lines_by_topic[record.topic] = lines_by_topic.get(record.topic, 0) + len(normalized.lines)
            events += normalized.events
            out.dead += normalized.dead
            self.inputs.observe((record.topic, record.partition), _latest_ms(normalized), wall_ms)
        symptoms = self.claims.keep_own_nodes(self.matcher.extract_batch(lines))
        self._route(collapse_batch(lines, symptoms), events, out)
        self._count(records, lines, symptoms, out)
        out.mark = self._mark()
        metrics.count_extracted_batch(
            dict(Tally(r.topic for r in records)),
            lines_by_topic,
            symptoms,
            (dead.reason for dead in out.dead),
            time.perf_counter() - started,
        )
        return out

    def _route(self, batch: BatchContribution, events: list[JobEvent], out: _Outputs) -> None:
        for event in events:
            if event.workload_id:
                out.workload.append((event.workload_id, wire.job(event)))
                self.latest_ms = max(self.latest_ms, event.time_ms)
        # packed, one record per partition (per workload) and batch: a storm of a thousand nodes
        # is a handful of records, not a thousand the correlator applies and commits one by one
        node_groups: dict[int, list[EvidenceGroup]] = {}
        for group in batch.node_groups:
            node_groups.setdefault(partition_for(group.node or "", self.topics.partitions), []).append(group)
        for partition, groups in sorted(node_groups.items()):
            out.node_groups += [(partition, packed) for packed in wire.packed_groups(groups)]
        direct: dict[str, list[EvidenceGroup]] = {}
        for group in batch.direct_groups:
            direct.setdefault(group.first.workload_id or "", []).append(group)
        for workload_id, groups in direct.items():
            out.workload += [(workload_id, packed) for packed in wire.packed_groups(groups)]
        by_partition: dict[int, list[tuple[str, int, int, int]]] = {}
        for (node, slot_ms), (count, max_ms) in batch.node_lines.items():
            by_partition.setdefault(partition_for(node, self.topics.partitions), []).append(
                (node, slot_ms, count, max_ms)
            )
            self.latest_ms = max(self.latest_ms, max_ms)
        for partition, counts in sorted(by_partition.items()):  # one record per partition, not per node
            out.node_counts.append((partition, wire.node_lines(counts)))
        for workload_id, count in batch.workload_lines.items():
            out.workload.append((workload_id, wire.workload_lines(workload_id, count, self.latest_ms)))
        for symptom in batch.unplaced:
            out.dead.append(
                DeadLetter(
                    "symptom with neither a node nor a workload",
                    symptom.source,
                    symptom.origin,
                    symptom.to_dict(),
                )
            )

    def _count(
        self, records: Sequence[ConsumerRecord], lines: list[LogLine], symptoms: list, out: _Outputs
    ) -> None:
        self.stats.records += len(records)
        self.stats.lines += len(lines)
        self.stats.symptoms += len(symptoms)
        self.stats.dead_letters += len(out.dead)
        for dead in out.dead:
            self.stats.dead_reasons[dead.reason] = self.stats.dead_reasons.get(dead.reason, 0) + 1

    async def _produce(self, producer: AIOKafkaProducer, out: _Outputs) -> None:
        parts = self.topics.partitions
        futures = []
        for topic, keyed in ((self.topics.node_events, out.node), (self.topics.workload_events, out.workload)):
            for key, record in keyed:
                value = record if isinstance(record, bytes) else wire.encode(record)
                futures.append(
                    await producer.send(topic, value, key=key.encode(), partition=partition_for(key, parts))
                )
            if topic == self.topics.node_events:
                for partition, packed in out.node_groups:
                    futures.append(await producer.send(topic, packed, key=b"__groups__", partition=partition))
                for partition, record in out.node_counts:
                    futures.append(
                        await producer.send(topic, wire.encode(record), key=b"__lines__", partition=partition)
                    )
            mark = wire.encode(out.mark)
            for partition in range(parts):  # every partition learns how far event time has come
                futures.append(await producer.send(topic, mark, key=b"__wm__", partition=partition))
        for dead in out.dead:
            futures.append(
                await producer.send(self.topics.deadletter, _dead_value(dead), key=dead.origin.encode())
            )
        if futures:
            await asyncio.gather(*futures)  # the broker has them all: now the offsets may be committed


class _CountRebalances(ConsumerRebalanceListener):
    """Counts each assignment the group hands this worker (its first join included), and hands it
    to the input watermarks: every partition is read again from its committed offset."""

    def __init__(self, inputs: InputWatermarks) -> None:
        self.inputs = inputs

    def on_partitions_revoked(self, revoked: Any) -> None:
        pass

    def on_partitions_assigned(self, assigned: Any) -> None:
        metrics.count_rebalance("extractor")
        self.inputs.assign(assigned, _wall_ms())


def _wall_ms() -> int:
    return int(time.monotonic() * 1000)  # only ever compared with itself: idle input partitions


def _latest_ms(normalized: Any) -> int | None:
    """The latest event time a record carried, None for one that carried no line or job event."""
    times = [line.time_ms for line in normalized.lines] + [event.time_ms for event in normalized.events]
    return max(times) if times else None


def _key(raw: bytes | None) -> str | None:
    return raw.decode("utf-8", "replace") if raw is not None else None


def _dead_value(dead: DeadLetter) -> bytes:
    value: Any = dead.value
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return wire.encode(
        {
            "reason": dead.reason,
            "topic": dead.topic,
            "origin": dead.origin,
            "value": value,
            "stage": "extractor",
        }
    )
