"""Per-partition correlator state over a key-value table (a faust Table, or a dict in tests).

Values are bytes in the one versioned format of ``correlator/state_codec.py`` (the view is given
its encode and decode functions); objects are decoded once and cached, and only the keys a batch
touched are written back, so the changelog carries what changed. Keys of other partitions held
by the same worker are invisible to this view: every write therefore lands in this partition's
changelog, as faust requires.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from correlator import state_codec
from streams.topics import partition_for

__all__ = ["PartitionClock", "PartitionView"]

T = TypeVar("T")
HISTORY_STEP_MS = 1_000
#: A watermark source (an extractor generation) silent this long is forgotten, not just left out.
SOURCE_FORGET_MS = 3_600_000
#: How long a source that did not say so itself counts as live after its last watermark.
SOURCE_IDLE_MS = 10_000
#: A workload partition that has not said how far its placements have gone for this long (record
#: time) while others have no longer holds a node partition's expiry back (see PartitionClock.placed).
PLACER_IDLE_MS = 3_600_000
META = "__"  # keys starting with this are bookkeeping, not node or workload state


class PartitionView(MutableMapping[str, T], Generic[T]):
    def __init__(
        self,
        table: MutableMapping[Any, Any],
        partition: int,
        partitions: int,
        decode: Callable[[str, bytes], T],
        encode: Callable[[T], bytes],
    ) -> None:
        self.table = table
        self.partition = partition
        self.partitions = partitions
        self.decode = decode
        self.encode = encode
        self.cache: dict[str, T] = {}
        #: Keys deleted since the last persist(): their tombstones go to the table with the rest of
        #: the state, not before it (a recovered partition is a snapshot of one moment).
        self.deleted: set[str] = set()
        #: This partition's keys in the table, read from it once (see __iter__) and kept up to date
        #: by persist(), the only writer of this partition's keys (None: not read yet).
        self._stored: dict[str, None] | None = None

    def _mine(self, key: Any) -> bool:
        return (
            isinstance(key, str)
            and not key.startswith(META)
            and partition_for(key, self.partitions) == self.partition
        )

    def __getitem__(self, key: str) -> T:
        if key not in self.cache:
            if key in self.deleted:
                raise KeyError(key)
            raw = self.table[key]
            self.cache[key] = self.decode(key, raw)
        return self.cache[key]

    def __setitem__(self, key: str, value: T) -> None:
        self.cache[key] = value
        self.deleted.discard(key)

    def __delitem__(self, key: str) -> None:
        self.cache.pop(key, None)
        self.deleted.add(key)

    def __contains__(self, key: object) -> bool:
        return key in self.cache or (key not in self.deleted and key in self.table)

    def __iter__(self) -> Iterator[str]:
        # The table is read once per view, not on every iteration: listing it (every partition's
        # keys, bookkeeping keys included, each hashed to find its partition) on every clock
        # record was 16 % of a lagging correlator's time in the soak. A rebalance builds new views,
        # so the table is still the truth after one.
        stored = self._stored_keys()
        yield from list(self.cache)
        yield from [k for k in list(stored) if k not in self.cache and k not in self.deleted]

    def _stored_keys(self) -> dict[str, None]:
        if self._stored is None:
            self._stored = dict.fromkeys(k for k in list(self.table.keys()) if self._mine(k))
        return self._stored

    def __len__(self) -> int:
        # asked by list(view.values()) before every scan of the partition's runs: no second pass
        # over the table for it
        cache, deleted = self.cache, self.deleted
        return len(cache) + sum(1 for k in self._stored_keys() if k not in cache and k not in deleted)

    def persist(self, keys: set[str]) -> int:
        """Write the touched keys back to the table, and the deleted ones' tombstones; how many."""
        stored, written = self._stored, 0
        for key in self.deleted:
            if key not in self.cache and key in self.table:
                del self.table[key]
                written += 1
                if stored is not None:
                    stored.pop(key, None)
        self.deleted = set()
        for key in keys:
            value = self.cache.get(key)
            if value is not None:
                self.table[key] = self.encode(value)
                written += 1
                if stored is not None and self._mine(key):
                    stored[key] = None
        return written


@dataclass
class PartitionClock:
    """Event time of one partition, moved on by wall-clock time while the partition is idle.

    ``event_ms`` is how far event time has come: the minimum of the watermarks of the extractors
    (``sources``) heard from within their idle time, each the slowest of the ingest partitions that
    extractor reads (streams/watermarks.py). Data records move it only while no extractor has sent
    a watermark with its name (older extractors, stories told to a partition directly); otherwise
    one fast ingest partition would carry it past lines still waiting in another.

    ``wall_ms`` is the record (producer) time at which the clock last heard how far event time had
    come. A tick at wall time W makes the effective watermark ``event_ms + (W - wall_ms)``: a quiet
    cluster still reaches a job's end plus grace, about ``grace`` seconds after its last line, while
    an extractor that keeps sending the same watermark (one input partition lags) holds it.
    Record times come from the records, so replaying a partition replays the same clock.
    """

    event_ms: int = 0
    wall_ms: int = 0
    effective_ms: int = 0
    offset: int = -1  # the last input offset applied (replays after a crash are skipped)
    history: list[list[int]] = field(default_factory=list)  # [wall_ms, effective_ms], oldest first
    #: source -> [its watermark, record time last heard, its idle time]
    sources: dict[str, list[int]] = field(default_factory=dict)
    #: node partitions: workload partition -> [event time up to which it has sent its placements,
    #: record time last heard, record time its silence counts from]; see placed()
    placers: dict[str, list[int]] = field(default_factory=dict)
    #: workload partitions: node partition -> [event time up to which it has sent every report due,
    #: record time last heard]; see reporting()
    reporters: dict[str, list[int]] = field(default_factory=dict)

    def observe(self, event_ms: int, wall_ms: int) -> None:
        """A data record's event time (or a watermark without a source)."""
        if self.sources:
            return  # the extractors' watermarks say how far event time has come
        if event_ms > self.event_ms:
            self.event_ms, self.wall_ms = event_ms, wall_ms

    def on_watermark(self, record: dict[str, Any], wall_ms: int) -> None:
        """A ``wm`` record (streams/wire.py)."""
        self.observe_watermark(record.get("source"), record["time_ms"], wall_ms, record.get("idle_ms"))

    def observe_watermark(self, source: str | None, time_ms: int, wall_ms: int, idle_ms: int | None) -> None:
        """An extractor's watermark: event time moves to the minimum over the sources heard from
        within their idle time (a source that fell silent drops out, as an idle input does)."""
        if source is None:  # an extractor older than per-source watermarks: its maximum
            self.observe(time_ms, wall_ms)
            return
        if self._superseded(source):
            return  # an older generation of an extractor that has spoken since
        known = self.sources.get(source)
        mark = max(time_ms, known[0]) if known else time_ms
        self.sources[source] = [mark, wall_ms, idle_ms or SOURCE_IDLE_MS]
        self._follow_sources(wall_ms)
        self.wall_ms = max(self.wall_ms, wall_ms)  # a source speaks: idle time counts from here
        for gone in [s for s, (_, heard, _) in self.sources.items() if wall_ms - heard > SOURCE_FORGET_MS]:
            del self.sources[gone]

    def _follow_sources(self, wall_ms: int) -> None:
        """Event time as it stands at ``wall_ms`` once the sources whose idle time has run out since
        the last watermark no longer count. A held source (one that died behind its input) must
        free the clock when its hold ends even if no extractor speaks again: a replacement that has
        read everything by then stays silent, and the clock stood at the dead one's mark (a kill -9
        test: no verdict in 150 s). When every source is silent, each has read its partitions to
        their ends (or its hold would still run), so the latest of their marks stands for all, as
        the extractor itself does for its idle partitions (streams/watermarks.py)."""
        if not self.sources:
            return
        marks = self.sources.values()
        live = [mark for mark, heard, idle in marks if wall_ms - heard < idle]
        self.event_ms = max(self.event_ms, min(live) if live else max(mark for mark, _, _ in marks))

    def _superseded(self, source: str) -> bool:
        """True for a generation older than one of the same extractor already heard; a newer one
        retires the older ones at once. An extractor that restarts or is rebalanced reads each of
        its partitions again from the committed offsets, so its new generation speaks for all it
        holds; the old one, silent since, would otherwise hold event time back for its whole idle
        time, which an extractor that was behind its input makes long (streams/extract_worker.py
        ``source_idle_ms``)."""
        instance, generation = _generation(source)
        if generation is None:
            return False
        older = []
        for other in self.sources:
            other_instance, other_generation = _generation(other)
            if other_instance == instance and other_generation is not None:
                if other_generation > generation:
                    return True
                if other_generation < generation:
                    older.append(other)
        for other in older:
            del self.sources[other]
        return False

    def observe_placed(self, source: str, time_ms: int, wall_ms: int) -> None:
        """A workload partition's word (a ``placed`` record, streams/wire.py) that every placement
        of a job event up to ``time_ms`` has been sent; it never moves back.

        One that speaks for the first time, or again after PLACER_IDLE_MS of silence, is a workload
        side coming back (a restarted correlator's first words after its backlog): the silence of
        the others counts afresh from here, or an outage longer than that would drop the ones whose
        first word comes a moment later."""
        known = self.placers.get(source)
        if known is None or wall_ms - known[1] >= PLACER_IDLE_MS:
            for other in self.placers.values():
                other[2] = max(other[2], wall_ms)
        self.placers[source] = [max(time_ms, known[0]) if known else time_ms, wall_ms, wall_ms]

    def observe_reported(self, source: str, time_ms: int, wall_ms: int) -> None:
        """A node partition's word (a ``reported`` record, streams/wire.py) that it has sent the
        report of every run it holds that ended by ``time_ms``; it never moves back."""
        known = self.reporters.get(source)
        self.reporters[source] = [max(time_ms, known[0]) if known else time_ms, wall_ms]

    def reporting(self, source: str, end_ms: int, wall_ms: int, limit_ms: int) -> bool:
        """True while node partition ``source`` has not yet vouched for runs that ended at
        ``end_ms`` and has said how far it has come within ``limit_ms`` of record time: a node side
        that lags on its way to the run's reports, which a verdict should wait for. False for one
        that has passed the run (its report is in, or it has none), one never heard from (an older
        release) and one gone silent (a dead worker): the overdue fallback then decides."""
        known = self.reporters.get(source)
        return known is not None and known[0] < end_ms and wall_ms - known[1] < limit_ms

    def placed(self, wall_ms: int) -> int | None:
        """The event time up to which every workload partition has sent its placements: the
        minimum over those silent for less than PLACER_IDLE_MS at ``wall_ms`` (a workload partition
        gone for good must not hold expiry back for ever), over all of them when every one is (a
        restarted correlator reading its node backlog hears nothing new until the workload side
        has read its first records). None: no workload partition has said (an older release, or a
        story told to one partition), and the node's own watermark alone expires state, as before."""
        if not self.placers:
            return None
        live = [mark for mark, _, since in self.placers.values() if wall_ms - since < PLACER_IDLE_MS]
        return min(live or [mark for mark, _, _ in self.placers.values()])

    def effective(self, wall_ms: int) -> int:
        self._follow_sources(wall_ms)
        idle = max(0, wall_ms - self.wall_ms) if self.wall_ms else 0
        self.effective_ms = max(self.effective_ms, self.event_ms + idle)
        if not self.history or wall_ms - self.history[-1][0] >= HISTORY_STEP_MS:
            self.history.append([wall_ms, self.effective_ms])
        return self.effective_ms

    def lagged(self, wall_ms: int, delay_ms: int) -> int:
        """The effective watermark as it stood ``delay_ms`` of wall time ago.

        State is expired by this lagged watermark, not the current one: when event time jumps
        (a replay, a burst of late records), the job-end placements that travel a longer path
        through the pipeline still find the node's evidence waiting for them.
        """
        old = [eff for wall, eff in self.history if wall <= wall_ms - delay_ms]
        self.history = [h for h in self.history if h[0] > wall_ms - 2 * delay_ms] or self.history[-1:]
        return old[-1] if old else 0

    def to_dict(self) -> dict[str, Any]:
        # a plain dict, not dataclasses.asdict: that deep-copies the history on every record
        return {
            "event_ms": self.event_ms,
            "wall_ms": self.wall_ms,
            "effective_ms": self.effective_ms,
            "offset": self.offset,
            "history": self.history,
            "sources": self.sources,
            "placers": self.placers,
            "reporters": self.reporters,
        }

    @classmethod
    def load(cls, table: MutableMapping[Any, Any], key: str) -> PartitionClock:
        raw = table.get(key)
        return cls(**state_codec.read("clock", key, raw)) if raw else cls()

    def save(self, table: MutableMapping[Any, Any], key: str) -> None:
        table[key] = state_codec.write(self.to_dict())


def _generation(source: str) -> tuple[str, int | None]:
    """An extractor's watermark source is ``<instance>.<generation>`` (streams/watermarks.py)."""
    instance, _, generation = source.rpartition(".")
    return (instance, int(generation)) if instance and generation.isdigit() else (source, None)
