"""The extractor stage: the hot path that sees every log line (docs/architecture.md).

A plain aiokafka consumer-group worker, no per-event framework cost: fetch a batch from the
ingest topics, normalize it, scan it with one Hyperscan call, collapse what matched, and produce
the results keyed by node or workload in one Kafka transaction with the batch's input offsets
(exactly once for read-committed readers: a crash mid-batch aborts the batch's outputs, and the
restarted extractor makes them again from the last committed input offsets).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections import Counter as Tally
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener, errors
from aiokafka.errors import IllegalStateError, KafkaError
from aiokafka.structs import ConsumerRecord, TopicPartition

from correlator.batching import BatchContribution, collapse_batch
from correlator.claims import ClaimCheck
from correlator.evidence import EvidenceGroup
from extractors.loader import Ruleset
from extractors.matchers import HyperscanMatcher
from streams import metrics, wire
from streams.gc_policy import relax_for_batches
from streams.lag_probe import LagProbe
from streams.prefilter import pick_batch
from streams.records import DeadLetter, JobEvent
from streams.resume_points import ResumePoints
from streams.settings import Settings
from streams.topics import Topics, partition_for
from streams.watermarks import InputWatermarks

__all__ = ["ExtractorStats", "ExtractorWorker", "run_until_stopped"]

log = logging.getLogger("faultstream.extractor")

#: The broker aborts a transaction left open this long: how long read-committed readers can be
#: held up by an extractor that died and never came back (one that restarts aborts it at once).
TRANSACTION_TIMEOUT_MS = 30_000
#: How long a rebalance waits for the offsets of the batch just committed to become visible.
SETTLE_TIMEOUT_S = 10.0
#: The ingest topics are read as written (their producers are not transactional): a partition's end
#: is then its high watermark; read_committed would make it the last stable offset.
ISOLATION_LEVEL = "read_uncommitted"
#: A partition's end learned from a fetch response at most this old still stands (the fetcher
#: long-polls every assigned partition about every fetch_max_wait_ms, 500 ms); an older one may
#: miss records written since, so the end is asked of the broker instead (ListOffsets).
FRESH_END_MS = 1_000
#: aiokafka's default group session timeout, which the extractor keeps: how soon the partitions of
#: an extractor that died move to another.
SESSION_TIMEOUT_MS = 10_000
#: After losing the broker, the extractor starts again after this long, doubling up to the cap.
RESTART_BACKOFF_S = (1.0, 30.0)
#: Errors no restart can mend: the extractor exits (non-zero) and says why.
_FATAL_KAFKA_ERRORS = (
    errors.TopicAuthorizationFailedError,
    errors.GroupAuthorizationFailedError,
    errors.TransactionalIdAuthorizationFailed,
    errors.ClusterAuthorizationFailedError,
)


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
    #: The same source's watermark as it stood before the batch, sent first: a correlator partition
    #: then knows a watermarking extractor speaks before any of the batch's lines could move its
    #: clock (without it, the first batch of a fresh pipeline moved the clock to its latest line).
    opening: dict[str, Any] | None = None
    #: Per input partition, the latest event time the batch carried (None: none): in once delivered.
    latest: dict[tuple[str, int], int | None] = field(default_factory=dict)


async def run_until_stopped(
    make_worker: Callable[[], ExtractorWorker],
    stopping: asyncio.Event,
    backoff_s: tuple[float, float] = RESTART_BACKOFF_S,
) -> ExtractorStats:
    """Run an extractor until ``stopping`` is set, starting a fresh one whenever the broker is lost.

    aiokafka gives up on some broker losses (a connection closed during a transaction's
    coordinator lookup kills the producer's sender), and a worker left without its producer
    would stop the pipeline until someone restarted the process. A fresh worker resumes exactly
    as a restarted process does: its producer fences and settles the open transaction, its
    consumer reads the committed offsets."""
    first, cap = backoff_s
    delay = first
    while True:
        worker = make_worker()
        started = time.monotonic()
        stop = asyncio.ensure_future(stopping.wait())
        stop.add_done_callback(lambda _, stopped=worker: stopped.stop())
        try:
            await worker.run()
            return worker.stats
        except KafkaError as exc:
            if isinstance(exc, _FATAL_KAFKA_ERRORS) or isinstance(exc.__cause__, _FATAL_KAFKA_ERRORS):
                raise
            if stopping.is_set():
                return worker.stats
            if time.monotonic() - started > cap:
                delay = first  # it ran a good while: a new loss, not the same one again
            log.warning("extractor lost the broker (%r): starting again in %.0f s", exc, delay)
            metrics.count_extractor_restart()
        finally:
            stop.cancel()
        try:
            await asyncio.wait_for(stopping.wait(), delay)
            return worker.stats
        except TimeoutError:
            delay = min(delay * 2, cap)


async def _close(client: AIOKafkaConsumer | AIOKafkaProducer) -> None:
    """Stop a Kafka client without letting its shutdown hide why the worker is stopping: with the
    broker gone, aiokafka's stop can raise its own tasks' cancellation or a connection error."""
    try:
        await client.stop()
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise  # this worker itself is being cancelled
        log.warning("%s stopped with its tasks cancelled", type(client).__name__)
    except Exception as exc:
        log.warning("%s did not stop cleanly: %r", type(client).__name__, exc)


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
        self._in_flight: asyncio.Task[None] | None = None  # the batch being delivered
        self._delivered: dict[TopicPartition, int] = {}  # the input offsets its transaction committed
        self.resume: ResumePoints[TopicPartition] = ResumePoints()  # how far own commits took each input
        self.assignments = 0  # partition assignments so far: a batch fetched before one is stale
        #: the last fetch left records to read: the watermark asks correlators to wait longer
        self.behind = False

    def stop(self) -> None:
        self._stopping.set()

    async def run(self) -> None:
        options = self.settings.aiokafka_options()
        consumer = AIOKafkaConsumer(
            group_id=self.group_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            isolation_level=ISOLATION_LEVEL,
            max_partition_fetch_bytes=8 << 20,
            fetch_max_bytes=64 << 20,
            **options,
        )
        producer = AIOKafkaProducer(
            acks="all",
            linger_ms=5,
            max_batch_size=1 << 20,
            compression_type=None,
            transactional_id=self.transactional_id,
            transaction_timeout_ms=TRANSACTION_TIMEOUT_MS,
            **options,
        )
        consumer.subscribe(list(self.topics.ingest), listener=_Rebalances(self, consumer))
        # the producer first: its start fences a predecessor of the same id and settles the batch it
        # left (committed or aborted), so the consumer then reads settled committed offsets
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
            await _close(consumer)
            await _close(producer)

    @property
    def transactional_id(self) -> str:
        return f"{self.group_id}-{self.settings.extractor_id or socket.gethostname()}"

    async def _loop(self, consumer: AIOKafkaConsumer, producer: AIOKafkaProducer) -> None:
        """One batch in flight: while the broker takes batch N's transaction, batch N+1 is fetched
        and processed. Transactions commit strictly in order, each with the input offsets after
        its own batch, so a crash makes the restarted extractor redo exactly the uncommitted ones."""
        try:
            while not self._stopping.is_set():
                assignments = self.assignments
                fetched = await consumer.getmany(
                    timeout_ms=self.settings.batch_timeout_ms, max_records=self.settings.batch_max_records
                )
                fetched = self._unseen(consumer, fetched)
                records = [r for batch in fetched.values() for r in batch]
                self.behind = more_to_read(consumer, fetched, self.settings.batch_max_records)
                await self._read_up_to_ends(consumer)  # before the watermark may move
                if not records:
                    await self._announce_idle_inputs(producer)
                    continue
                started = time.perf_counter()
                outputs = self.process(records)
                self.stats.seconds_busy += time.perf_counter() - started
                offsets = {tp: batch[-1].offset + 1 for tp, batch in fetched.items() if batch}
                if self._in_flight is not None:
                    await self._in_flight  # the previous batch's transaction commits first
                if self.assignments != assignments:
                    # a rebalance came in between: every assigned partition restarts from its
                    # committed offset, this batch included, so delivering it would count it twice
                    log.info("batch of %d records fetched across a rebalance dropped", len(records))
                    _rewind(consumer, fetched, self.resume)
                    self.inputs.assign(consumer.assignment(), _wall_ms())  # it saw what is read again
                    continue
                self._in_flight = asyncio.ensure_future(self._deliver(producer, outputs, offsets))
                self.stats.batches += 1
        finally:
            if self._in_flight is not None:
                await self._in_flight

    async def _deliver(
        self, producer: AIOKafkaProducer, outputs: _Outputs, offsets: dict[TopicPartition, int]
    ) -> None:
        """The batch's outputs and its input offsets in one transaction: read-committed readers see
        all of them or, after a crash, none (the restarted extractor aborts the open transaction
        and makes the batch again from the committed offsets)."""
        async with producer.transaction():
            await self._produce(producer, outputs)
            if self.settings.extractor_commit_delay_ms:
                await asyncio.sleep(self.settings.extractor_commit_delay_ms / 1000)
            if offsets:  # none when only a watermark is announced
                await producer.send_offsets_to_transaction(offsets, self.group_id)
        self._delivered = offsets
        self.resume.committed(offsets)
        self.inputs.deliver(outputs.latest)

    def _unseen(
        self, consumer: AIOKafkaConsumer, fetched: dict[TopicPartition, list[ConsumerRecord]]
    ) -> dict[TopicPartition, list[ConsumerRecord]]:
        """The fetched records not yet sent in a committed transaction (streams/resume_points.py):
        after a rejoin the group can answer with offsets from before the last one, or none."""
        kept = self.resume.unseen(fetched)
        dropped = sum(map(len, fetched.values())) - sum(map(len, kept.values()))
        if dropped:
            skips = self.resume.skip_to(fetched)
            for tp, offset in skips.items():  # its buffered records go too (aiokafka's seek)
                consumer.seek(tp, offset)
            log.warning(
                "%d records already sent in a committed transaction dropped (read from a stale group "
                "offset); %d partitions skip ahead to this extractor's commit",
                dropped,
                len(skips),
            )
        return kept

    async def _read_up_to_ends(self, consumer: AIOKafkaConsumer) -> None:
        """Tell the watermark how far the consumer has read each partition silent for the idle time:
        only one read to its end may count as idle (a fetch that lags is silent too)."""
        silent = [TopicPartition(*tp) for tp in self.inputs.silent(_wall_ms())]
        assigned = consumer.assignment()
        ends = {tp: _known_end(consumer, tp) for tp in silent if tp in assigned}
        unknown = [tp for tp, end in ends.items() if end is None]
        if unknown:
            try:
                ends.update(await consumer.end_offsets(unknown))
            except KafkaError as error:  # not known: those partitions go on holding the watermark
                log.warning("end offsets of %d silent partitions not known: %r", len(unknown), error)
        for tp, end in ends.items():
            try:
                position = await consumer.position(tp)
            except IllegalStateError:  # a rebalance took it away meanwhile
                continue
            self.inputs.read_up_to((tp.topic, tp.partition), position, end)

    async def _announce_idle_inputs(self, producer: AIOKafkaProducer) -> None:
        """No record came: an input partition that has gone idle may have freed the watermark.
        Announced like a batch with nothing in it, after the batch in flight."""
        announced = self.inputs.watermark_ms
        if self.inputs.advance(_wall_ms()) <= announced:
            return
        if self._in_flight is not None:
            await self._in_flight
        self._in_flight = asyncio.ensure_future(self._deliver(producer, _Outputs(mark=self._mark()), {}))

    def _mark(self) -> dict[str, Any]:
        return wire.watermark(self.inputs.advance(_wall_ms()), self.inputs.source, self.source_idle_ms())

    def source_idle_ms(self) -> int:
        """How long a correlator counts this extractor as live after its watermark. Caught up: the
        idle time, so a stopped one soon stops holding event time back. Behind its input: until
        its partitions would have moved to another member and been read there (two session
        timeouts: the group notices, then rebalances), or event time passes the lines it has not
        read yet when it dies or restarts (docs/architecture.md, "Event time")."""
        idle_ms = int(self.settings.idle_partition_s * 1000)
        return idle_ms + 2 * SESSION_TIMEOUT_MS if self.behind else idle_ms

    async def settle(self, consumer: AIOKafkaConsumer) -> None:
        """Wait for the batch being delivered, then until the group shows its offsets: a transaction's
        offsets become visible once the broker has written its markers, after the commit returns,
        and the next owner of a partition must not start from the offsets before them."""
        if self._in_flight is None:
            return
        await asyncio.gather(self._in_flight, return_exceptions=True)  # its error is the loop's
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        for tp, offset in self._delivered.items():
            while await consumer.committed(tp) != offset and time.monotonic() < deadline:
                await asyncio.sleep(0.02)

    def process(self, records: Sequence[ConsumerRecord]) -> _Outputs:
        """Normalize, extract and collapse one batch (pure CPU; no I/O)."""
        started = time.perf_counter()
        out = _Outputs()
        out.opening = wire.watermark(self.inputs.watermark_ms, self.inputs.source, self.source_idle_ms())
        # LogLines only for the lines a rule may match; every line counted (streams/prefilter.py)
        picked = pick_batch(records, self.topics.ingest, self.matcher)
        out.dead += picked.dead
        wall_ms = _wall_ms()
        for partition, latest_ms in picked.latest.items():
            self.inputs.observe(partition, latest_ms, wall_ms)
        out.latest = dict(picked.latest)
        if picked.ahead:  # a line's own time too far ahead of its record did not move event time
            metrics.count_ahead_of_record("extractor", picked.ahead)
        found = self.matcher.match_hits(picked.lines, picked.hits)  # the pick's scan, not a second one
        symptoms = self.claims.keep_own_nodes([symptom for _, symptom in found])
        batch = collapse_batch(picked.lines, symptoms)
        batch.node_lines, batch.workload_lines = picked.node_lines, picked.workload_lines  # of every line
        self._route(batch, picked.events, out)
        self._count(records, picked.line_count, symptoms, out)
        out.mark = self._mark()
        metrics.count_extracted_batch(
            dict(Tally(r.topic for r in records)),
            picked.lines_by_topic,
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

    def _count(self, records: Sequence[ConsumerRecord], lines: int, symptoms: list, out: _Outputs) -> None:
        self.stats.records += len(records)
        self.stats.lines += lines
        self.stats.symptoms += len(symptoms)
        self.stats.dead_letters += len(out.dead)
        for dead in out.dead:
            self.stats.dead_reasons[dead.reason] = self.stats.dead_reasons.get(dead.reason, 0) + 1

    async def _produce(self, producer: AIOKafkaProducer, out: _Outputs) -> None:
        parts = self.topics.partitions
        futures = []
        for topic, keyed in ((self.topics.node_events, out.node), (self.topics.workload_events, out.workload)):
            if out.opening is not None:
                opening = wire.encode(out.opening)
                for partition in range(parts):
                    futures.append(await producer.send(topic, opening, key=b"__wm__", partition=partition))
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


class _Rebalances(ConsumerRebalanceListener):
    """Lets the batch in flight commit before partitions move (its offsets then reach the next
    owner, which does not redo it); counts each assignment (the first join included)."""

    def __init__(self, worker: ExtractorWorker, consumer: AIOKafkaConsumer) -> None:
        self.worker, self.consumer = worker, consumer

    async def on_partitions_revoked(self, revoked: Any) -> None:
        await self.worker.settle(self.consumer)

    def on_partitions_assigned(self, assigned: Any) -> None:
        self.worker.assignments += 1
        self.worker.inputs.assign(assigned, _wall_ms())
        metrics.count_rebalance("extractor")


def _wall_ms() -> int:
    return int(time.monotonic() * 1000)  # only ever compared with itself: idle input partitions


def more_to_read(
    consumer: AIOKafkaConsumer, fetched: Mapping[TopicPartition, Sequence[ConsumerRecord]], max_records: int
) -> bool:
    """Whether the fetch left records unread: it was cut at ``max_records``, or a partition's end as
    the fetch response gave it lies beyond the last record fetched from it."""
    if sum(len(batch) for batch in fetched.values()) >= max_records:
        return True
    for tp, batch in fetched.items():
        end = _known_end(consumer, tp)
        if batch and end is not None and end > batch[-1].offset + 1:
            return True
    return False


def _known_end(consumer: AIOKafkaConsumer, tp: TopicPartition) -> int | None:
    """The partition's end as the last fetch response gave it, if that is fresh (None: ask the
    broker). It is only known once the partition has been fetched."""
    polled_ms = consumer.last_poll_timestamp(tp)
    if polled_ms is None or time.time() * 1000 - polled_ms > FRESH_END_MS:  # the fetcher's clock
        return None
    end = consumer.last_stable_offset(tp) if ISOLATION_LEVEL == "read_committed" else consumer.highwater(tp)
    return end if end is not None and end >= 0 else None


def _rewind(
    consumer: AIOKafkaConsumer,
    fetched: dict[TopicPartition, list[ConsumerRecord]],
    resume: ResumePoints[TopicPartition],
) -> None:
    """Read a dropped batch again: its partitions still assigned go back to its first offsets (a
    rebalance has set them there already, unless the batch was fetched after it)."""
    assigned = consumer.assignment()
    for tp, batch in fetched.items():
        if batch and tp in assigned:
            consumer.seek(tp, max(batch[0].offset, resume.own(tp) or 0))  # never below its own commit


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
