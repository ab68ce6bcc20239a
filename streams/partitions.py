"""The correlator's two partition processors: wire records in, engine calls, outputs back.

They hold no Kafka or faust objects, so tests drive them with dicts; the faust app
(``streams/correlator_app.py``) only feeds them events and sends what they return.
"""

from __future__ import annotations

import time
from collections.abc import Callable, MutableMapping
from typing import Any

from correlator import state_codec
from correlator.evidence import EvidenceGroup
from correlator.node_side import NodeCorrelator, NodeEvidence, NodeState
from correlator.settings import CorrelatorSettings
from correlator.verdict import Verdict
from correlator.workload_side import RunPlacement, WorkloadCorrelator, WorkloadState
from extractors.loader import Ruleset
from streams import wire
from streams.partition_state import META, PartitionClock, PartitionView
from streams.records import JobEvent
from streams.topics import partition_for

__all__ = ["NodePartition", "WorkloadPartition", "line_counts_key", "node_record_key"]

EXPIRE_EVERY_MS = 10_000
#: State is expired by the watermark of this long ago (wall time): see PartitionClock.lagged.
EXPIRE_DELAY_MS = 60_000
OVERDUE_MIN_S = 120.0
#: State changes and the offset marker go to the changelog together, at most this often (record
#: time): see _Partition.persist and flush_interval_ms.
FLUSH_EVERY_MS = 1_000
#: The longest a flush waits (record time): a recovered partition reads at most this much input again.
FLUSH_MAX_MS = 10_000
#: Changelog keys a partition writes per second of record time, on average, before its flushes
#: space out: a flush rewrites every node the interval touched, and a 12,500-node cluster touches
#: all of them every second.
FLUSH_KEYS_PER_S = 500
#: Records after which the partition looks for runs that became due: the extractor's watermark
#: (after every batch), the correlator's ticks (every 0.5 s) and placements/job events.
CLOCK_KINDS = frozenset({"wm", "tick", "place", "places", "job", "reported"})
#: After a workload partition is built (a start, a restart, a rebalance), how long (real time) a run
#: waits for a node partition that has not spoken since, before the overdue fallback decides it
#: without that partition's nodes: the node side's table recovery can take minutes (six in the soak
#: of 2026-12-01, whose restarted workload side then decided 40 runs without their nodes at once).
RECOVERY_WAIT_MS = 600_000
#: A workload partition tells the node partitions how far its placements have gone, and a node
#: partition tells the workload partitions how far its reports have gone, at most this often
#: (record time): see WorkloadPartition.announce and NodePartition.announce.
ANNOUNCE_EVERY_MS = 1_000


def flush_interval_ms(keys_written: int) -> int:
    """The record time until the next flush, from the number of keys the last one wrote.

    Every flush rewrites each key the interval touched, so with a fixed interval the changelog's
    write rate grows with the cluster: at 12,500 nodes, every node's line counts (and in a storm its
    symptoms) once a second, ~200 MB of changelog for a 1 M-line storm, and a correlator that
    spent its time producing them fell a minute behind its input (docs/performance.md, "Flushes
    spaced by their size"). Spacing flushes by their size bounds the rate at ``FLUSH_KEYS_PER_S``
    per partition, up to ``FLUSH_MAX_MS``; a small cluster still flushes every second. A longer
    interval costs only replay after a crash: the records after the marker are read and applied
    again (streams/gap_fill.py)."""
    return min(FLUSH_MAX_MS, max(FLUSH_EVERY_MS, keys_written * 1000 // FLUSH_KEYS_PER_S))


def line_counts_key(node: str) -> str:
    """Table key of a node's line counts per minute, stored apart from its state: they change
    with nearly every batch, and the state (every symptom group of the node) rarely — rewriting
    whole states once a second for 12,500 nodes was 100+ MB/s of changelog."""
    return f"{META}lines\t{node}"


def node_record_key(workload_id: str, node: str) -> str:
    """Table key of one node's part of a workload's state (bookkeeping prefix: the partition's
    view does not list it as a workload)."""
    return f"{META}node\t{workload_id}\t{node}"


class _Partition:
    view: PartitionView[Any]

    def __init__(self, table: MutableMapping[Any, Any], partition: int, clock_key: str) -> None:
        self.table = table
        self.partition = partition
        self.clock_key = f"__clock__:{clock_key}:{partition}"
        self.clock = PartitionClock.load(table, self.clock_key)
        #: Written before a flush's state records, with the marker the flush ends with: if a crash
        #: cut the flush short, records up to that marker may already be in some keys (see
        #: _already_in).
        self.intent_key = f"__flushing__:{clock_key}:{partition}"
        intent = table.get(self.intent_key)
        self._torn_until = state_codec.read("intent", self.intent_key, intent)["at"] if intent else -1
        self._newer: dict[str, int] = {}  # keys a cut-short flush wrote, with that flush's marker
        self._stamp = self.clock.offset
        self._last_expire = 0
        self._clock_record = False
        self._wall_ms = 0
        self._flushed_ms = 0
        self._flush_every_ms = FLUSH_EVERY_MS

    @property
    def torn_flush(self) -> tuple[int, int] | None:
        """(offset marker, the marker of the flush a crash cut short) while records up to the
        latter may be in some keys already; None otherwise."""
        return (self.clock.offset, self._torn_until) if self._torn_until > self.clock.offset else None

    def fresh(self, offset: int) -> bool:
        """False for a record this partition already applied (a replay after a restart)."""
        return offset > self.clock.offset

    def passed(self, offset: int) -> None:
        """A record that could not be applied (dead-lettered) is behind the marker all the same."""
        self.clock.offset = max(self.clock.offset, offset)

    def _note_stamp(self, key: str, raw: bytes) -> None:
        if self._torn_until > self.clock.offset and (at := state_codec.flush_stamp(raw)) > self.clock.offset:
            self._newer[key] = at

    def _already_in(self, key: str, owner: str, offset: int) -> bool:
        """True when the record at ``offset`` is already in ``key`` (a record of the state of
        ``owner``, a node or a workload): a crash cut the last flush short after that key was
        written and before the clock, so the recovered marker is older than the key. Applying the
        record again would count it twice. Only records up to that flush's marker are checked."""
        if offset > self._torn_until:
            return False
        if owner not in self.view.cache:
            self.view.get(owner)  # loading the state notes its keys' flush stamps
        return self._newer.get(key, -1) >= offset

    def _advance(self, wall_ms: int, offset: int) -> int:
        self.clock.offset = max(self.clock.offset, offset)
        self._wall_ms = max(self._wall_ms, wall_ms)
        return self.clock.effective(wall_ms)

    def persist(self, everything: bool = False) -> None:
        """Write what changed since the last flush to the table (its changelog), then the clock
        with its offset marker: at most once a second of record time (longer after a large flush:
        flush_interval_ms), and always with ``everything``
        (before a rebalance hands the partition over).

        State and marker go together, so a recovered partition is a snapshot of one moment: the
        records after its marker are read again (streams/gap_fill.py) and applied again, none
        twice and none lost, line counts included. Outputs sent since the snapshot are sent again
        with the same content, which their consumers take as the same report or revision. Writing
        once a second, not once a record, is also what keeps a 1,250-node job's storm from being
        a changelog produce per node per batch (docs/architecture.md)."""
        if not everything and self._wall_ms - self._flushed_ms < self._flush_every_ms:
            return
        self._flushed_ms = self._wall_ms
        self._stamp = self.clock.offset
        self.table[self.intent_key] = state_codec.write({"at": self._stamp})
        self._flush_every_ms = flush_interval_ms(self._write_changes())
        self.clock.save(self.table, self.clock_key)

    def _write_changes(self) -> int:
        """Write what changed since the last flush; the number of keys written or deleted."""
        raise NotImplementedError

    def _expire_at(self, wall_ms: int) -> int | None:
        """The watermark to expire state by, at most every ten seconds of wall time."""
        if wall_ms - self._last_expire < EXPIRE_EVERY_MS:
            return None
        self._last_expire = wall_ms
        lagged = self.clock.lagged(wall_ms, EXPIRE_DELAY_MS)
        return lagged or None


class NodePartition(_Partition):
    def __init__(
        self, settings: CorrelatorSettings, table: MutableMapping[Any, Any], partition: int, partitions: int
    ) -> None:
        super().__init__(table, partition, "node")
        self.view: PartitionView[NodeState] = PartitionView(
            table, partition, partitions, self._load_state, self._encode_state
        )
        self.nodes = NodeCorrelator(settings, self.view)  # type: ignore[arg-type]
        self.source = f"node:{partition}"
        self._due_ms: int | None = None  # the watermark every ended run has been reported by
        self._announced: tuple[int, int] | None = None  # (time vouched for, record time) last said

    def announce(self) -> dict[str, Any] | None:
        """The ``reported`` record to send to every workload partition after the reports of the
        record just handled, or None when there is nothing new to say: every run this partition
        holds that ended by the time it names has been reported. That is its watermark less grace,
        but no later than the placements it has been told of (a run whose job-end placement is
        still on its way is not held yet). A workload partition waits for a run's missing reports
        while their node partition keeps saying how far it has come (WorkloadPartition._coming).
        Said at most once a second of record time, and only when it moved."""
        if self._due_ms is None:
            return None
        through = self._due_ms - self.nodes.settings.grace_ms
        if (placed := self.clock.placed(self._wall_ms)) is not None:
            through = min(through, placed)
        last = self._announced
        if last is not None and (through <= last[0] or self._wall_ms - last[1] < ANNOUNCE_EVERY_MS):
            return None
        self._announced = (through, self._wall_ms)
        return wire.reported(self.source, through)

    def _load_state(self, node: str, raw: bytes) -> NodeState:
        state = state_codec.decode_node_state(node, raw)
        self._note_stamp(node, raw)
        counts_key = line_counts_key(node)
        if counts := self.table.get(counts_key):
            state.window.line_slots = state_codec.decode_line_counts(counts_key, counts)
            self._note_stamp(counts_key, counts)
        return state

    def _encode_state(self, state: NodeState) -> bytes:
        return state_codec.encode_node_state(state, self._stamp)

    def handle(self, record: dict[str, Any], wall_ms: int, offset: int) -> list[NodeEvidence]:
        kind, out = record["t"], []
        if kind == "groups":
            for raw in record["items"]:
                out += self._group(EvidenceGroup.from_dict(raw), wall_ms, offset)
        elif kind == "group":
            out += self._group(EvidenceGroup.from_dict(record["g"]), wall_ms, offset)
        elif kind == "lines":
            for node, slot_ms, count, max_ms in record["counts"]:
                if not self._already_in(line_counts_key(node), node, offset):
                    self.nodes.on_lines(node, slot_ms, count)
                self.clock.observe(max_ms, wall_ms)
        elif kind in ("places", "place"):
            for place in record["items"] if kind == "places" else [record]:
                if not self._already_in(place["node"], place["node"], offset):
                    self.nodes.on_run(place["node"], place["workload_id"], place["start_ms"], place["end_ms"])
        elif kind == "wm":
            self.clock.on_watermark(record, wall_ms)
        elif kind == "placed":
            self.clock.observe_placed(record["source"], record["time_ms"], wall_ms)
        watermark = self._advance(wall_ms, offset)
        self._clock_record = kind in CLOCK_KINDS
        if self._clock_record:  # not on every record: due() looks at every node of the partition
            out += self.nodes.due(watermark)
            self._due_ms = watermark
        if (expire_at := self._expire_at(wall_ms)) is not None:
            # not past the placements either: they come through the workload side, which may lag
            self.nodes.expire(expire_at, self.clock.placed(self._wall_ms))
        return out

    def _group(self, group: EvidenceGroup, wall_ms: int, offset: int) -> list[NodeEvidence]:
        self.clock.observe(group.last_ms, wall_ms)
        node = group.node or ""
        return [] if self._already_in(node, node, offset) else self.nodes.on_group(group)

    def _write_changes(self) -> int:
        """A node's symptoms and runs are one record and its line counts another: counts change
        with nearly every batch, the rest rarely."""
        changed = self.nodes.take_touched(with_counts=False)
        counted = changed | self.nodes.take_touched(with_counts=True)  # an expiry forgets counts too
        written = self.view.persist(changed)
        for node in self.nodes.take_dropped():
            if self.view.cache.get(node) is None and line_counts_key(node) in self.table:
                del self.table[line_counts_key(node)]
                written += 1
        for node in counted:
            state = self.view.cache.get(node)
            if state is not None:
                counts = state_codec.encode_line_counts(state.window.line_slots, self._stamp)
                self.table[line_counts_key(node)] = counts
                written += 1
        return written


class WorkloadPartition(_Partition):
    def __init__(
        self,
        ruleset: Ruleset,
        settings: CorrelatorSettings,
        table: MutableMapping[Any, Any],
        partition: int,
        partitions: int,
        now_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        super().__init__(table, partition, "workload")
        self.view: PartitionView[WorkloadState] = PartitionView(
            table, partition, partitions, self._load_state, self._encode_run
        )
        self.workloads = WorkloadCorrelator(ruleset, settings, self.view)  # type: ignore[arg-type]
        #: A run still waiting for node reports this long (wall time) after its end record is
        #: decided on what came: a node partition that stays silent cannot hold a verdict forever.
        #: Longer than a consumer-group session timeout plus table recovery, so that a worker's
        #: crash delays its nodes' reports instead of producing a verdict without them.
        self.overdue_ms = int(max(3 * settings.grace_s, OVERDUE_MIN_S) * 1000)
        self.source = f"workload:{partition}"
        self.partitions = partitions
        self._now_ms = now_ms  # real time, for RECOVERY_WAIT_MS only (record times elsewhere)
        self._built_ms = now_ms()
        self._announced: tuple[int, int] | None = None  # (clock, record time) last announced

    def announce(self) -> dict[str, Any] | None:
        """The ``placed`` record to send to every node partition after the placements of the
        record just handled, or None when there is nothing new to say. The partition's clock has
        passed every job event up to it (the extractors send their watermarks after their data),
        so every placement up to it is sent: a node partition expires no evidence before this
        clock (of every workload partition) has passed it too. Said once the partition is built
        (a restarted one at once: what it says stands in its changelog), then at most once a
        second of record time, and only when the clock moved."""
        clock = self.clock.effective_ms
        last = self._announced
        if last is not None and (clock <= last[0] or self._wall_ms - last[1] < ANNOUNCE_EVERY_MS):
            return None
        self._announced = (clock, self._wall_ms)
        return wire.placed(self.source, clock)

    def handle(
        self, record: dict[str, Any], wall_ms: int, offset: int
    ) -> tuple[list[RunPlacement], list[Verdict]]:
        kind = record["t"]
        placements: list[RunPlacement] = []
        verdicts: list[Verdict] = []
        if kind == "job":
            event = JobEvent.from_dict(record["e"])
            if not self._restoring(event.workload_id, offset):
                placements = self.workloads.on_job_event(event, wall_ms)
            self.clock.observe(event.time_ms, wall_ms)
        elif kind in ("groups", "group"):
            for raw in record["items"] if kind == "groups" else [record["g"]]:
                verdicts += self._direct(EvidenceGroup.from_dict(raw), offset)
        elif kind == "lines":
            if not self._restoring(record["workload_id"], offset):
                self.workloads.on_direct_lines(record["workload_id"], record["count"], record["max_ms"])
            self.clock.observe(record["max_ms"], wall_ms)
        elif kind in ("evidences", "evidence"):
            for raw in record["items"] if kind == "evidences" else [record["e"]]:
                verdicts += self._evidence(NodeEvidence.from_dict(raw), offset)
        elif kind == "wm":
            self.clock.on_watermark(record, wall_ms)
        elif kind == "reported":
            self.clock.observe_reported(record["source"], record["time_ms"], wall_ms)
        watermark = self._advance(wall_ms, offset)
        if kind in CLOCK_KINDS:  # not on every record: these look at every workload of the partition
            verdicts += self.workloads.due(watermark)
            verdicts += self.workloads.overdue(wall_ms, self.overdue_ms, watermark, self._coming)
        if (expire_at := self._expire_at(wall_ms)) is not None:
            self.workloads.expire(expire_at)
        return placements, verdicts

    def _coming(self, state: WorkloadState) -> bool:
        """True while a report the run still lacks is on its way: the node partition of a missing
        node has not yet passed the run's end, and keeps saying how far it has come. A correlator
        that lags (a rebalance, a backlog) then delays the verdict rather than deciding it
        without that node's evidence, which the revision horizon may drop before it arrives."""
        end_ms, asked = state.run.end_ms or 0, set()
        for node in state.missing_nodes():  # the first node partition still coming ends the search
            source = f"node:{partition_for(node, self.partitions)}"
            if source not in asked:
                asked.add(source)
                if self.clock.reporting(source, end_ms, self._wall_ms, self.overdue_ms):
                    return True
                if self._recovering(source, end_ms):
                    return True
                if len(asked) == self.partitions:
                    break  # every node partition answered: a 12,500-node run hashes a few dozen
        return False

    def _recovering(self, source: str, end_ms: int) -> bool:
        """True while a node partition that has not passed the run has not spoken since this
        partition was built, for up to RECOVERY_WAIT_MS of real time: after a restart or a
        rebalance the node side may still be recovering its table, and the record time read
        meanwhile (the backlog of the outage) says nothing about whether it is alive."""
        known = self.clock.reporters.get(source)
        if known is not None and known[0] >= end_ms:
            return False  # it has passed the run: its report, if any, came before its word
        spoke_since = known is not None and known[1] >= self._built_ms
        return not spoke_since and self._now_ms() - self._built_ms < RECOVERY_WAIT_MS

    def _restoring(self, workload_id: str | None, offset: int) -> bool:
        """True when the run's own record already holds the record at ``offset``: a crash cut the
        last flush short after writing it (_write_changes), so whatever the record decided is
        decided and sent, and only the run's node records may still lack what it brought."""
        return workload_id is not None and self._already_in(workload_id, workload_id, offset)

    def _direct(self, group: EvidenceGroup, offset: int) -> list[Verdict]:
        workload_id, node = group.first.workload_id or "", group.node or ""
        if not self._restoring(workload_id, offset):
            return self.workloads.on_direct_group(group)
        if not self._already_in(node_record_key(workload_id, node), workload_id, offset):
            self.workloads.restore_direct(group)
        return []

    def _evidence(self, report: NodeEvidence, offset: int) -> list[Verdict]:
        if not self._restoring(report.workload_id, offset):
            return self.workloads.on_node_evidence(report, self.clock.effective_ms)
        if not self._already_in(node_record_key(report.workload_id, report.node), report.workload_id, offset):
            self.workloads.restore_evidence(report)
        return []

    def _load_state(self, workload_id: str, raw: bytes) -> WorkloadState:
        self._note_stamp(workload_id, raw)

        def read_node(node: str) -> tuple[str, bytes] | None:
            key = node_record_key(workload_id, node)
            stored = self.table.get(key)
            if stored:
                self._note_stamp(key, stored)
            return (key, stored) if stored else None

        return state_codec.decode_workload_state(workload_id, raw, read_node)

    def _encode_run(self, state: WorkloadState) -> bytes:
        return state_codec.encode_workload_run(state, self._stamp)

    def _write_changes(self) -> int:
        """The changed run records, then each changed (workload, node) record: a node's report
        and direct symptoms are a record of their own, so no record grows with the number of
        nodes (docs/architecture.md, "Record sizes").

        The order is what lets a recovered partition finish a flush a crash cut short
        (_restoring): deletions first, then the run record of every workload whose node records
        changed, then those node records. A run record that made it holds what its workload's
        records up to the flush decided; one that did not means none of that workload's node
        records of the flush did either."""
        changes = sorted(self.workloads.take_node_changes())
        records: dict[str, bytes | None] = {}
        for workload_id, node in changes:
            state = self.view.cache.get(workload_id)
            record = state_codec.encode_node_record(state, node, self._stamp) if state is not None else None
            records[node_record_key(workload_id, node)] = record
        for key, record in records.items():
            if record is None and key in self.table:
                del self.table[key]
        written = self.view.persist(self.workloads.take_touched() | {workload_id for workload_id, _ in changes})
        for key, record in records.items():
            if record is not None:
                self.table[key] = record
        return written + len(records)
