"""Hostile and broken input against the extractor worker as a whole (issue 11).

tests/streams/test_normalize_record.py fuzzes ``normalize_record`` on decoded values. Here the
unit is what a Kafka fetch hands the worker: raw bytes in any encoding, hostile keys and
headers, huge and empty fields, control characters. One batch goes through
``ExtractorWorker.process`` (normalize → Hyperscan → collapse → route) and every output is
encoded as the worker would send it. The worker never raises; every record becomes lines, job
events or a dead letter with its reason; and everything it would produce can be encoded.

Counterexamples hypothesis found are kept at the end as plain regression tests.
"""

from __future__ import annotations

import json

import orjson
import pytest
from aiokafka.structs import ConsumerRecord
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from extractors.matchers import ReferenceMatcher
from streams import wire
from streams.extract_worker import ExtractorWorker, _dead_value
from streams.normalize import normalize_record
from streams.records import LogLine
from streams.settings import Settings
from streams.topics import RECORDED_TIME_HEADER

XID79 = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off the bus."
INGEST = ["logs.syslog", "logs.dmesg", "logs.applog", "events.scheduler"]
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))

#: Characters a hostile or broken line carries: C0/C1 controls, ANSI escapes, NUL, BOM,
#: bidi overrides, line and paragraph separators, lone surrogates (unpaired UTF-16 halves).
NASTY_CHARS = st.sampled_from(
    ["\x00", "\x1b[31m", "\x1b]0;title\x07", "\r", "\n", "\t", "\x7f", "\x85", "\u2028", "\u202e",
     "\ufeff", "\ud800", "\udcff", "%n", "%s", "{}", "{0}", "$(reboot)", "`id`", ";", "|", "\\"]
)  # fmt: skip
NASTY_TEXT = st.lists(st.text(max_size=20) | NASTY_CHARS, max_size=8).map("".join)
HUGE_TEXT = st.builds(lambda c, n: c * n, st.sampled_from(["a", "9", " ", "\x00", "é", "(", "JobId="]),
                      st.integers(10_000, 120_000))  # fmt: skip
FIELD_TEXT = NASTY_TEXT | HUGE_TEXT | st.just("") | st.just(XID79)
FIELD_KEYS = st.sampled_from(
    ["log", "message", "MESSAGE", "msg", "host", "hostname", "_HOSTNAME", "@timestamp", "timestamp", "time",
     "job_id", "rank", "kubernetes", "JobID", "State", "@start", "@end", "NodeList", "exit_code", "type",
     "workload_id", "nodes", "node", "reason", "involvedObject", "lastTimestamp", "scheduler"]
)  # fmt: skip
JSON_LEAF = st.none() | st.booleans() | st.integers() | st.floats() | FIELD_TEXT
JSON = st.recursive(
    JSON_LEAF,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(FIELD_KEYS, inner, max_size=4),
    max_leaves=8,
)
RECORD = st.dictionaries(FIELD_KEYS | st.text(max_size=6), JSON, max_size=8)


def _json_bytes(value: object) -> bytes:
    """JSON as a shipper would write it; a lone surrogate goes out as its escape, as Python's
    json module writes it (orjson refuses to encode one)."""
    return json.dumps(value).encode()


ENCODINGS = st.sampled_from(["utf-8", "latin-1", "utf-16", "cp1252", "utf-8-sig"])
MIXED = st.builds(
    lambda a, b, enc: a.encode("utf-8", "surrogatepass") + b.encode(enc, "replace"),
    NASTY_TEXT,
    NASTY_TEXT,
    ENCODINGS,
)
RAW_VALUES = st.one_of(
    st.binary(max_size=200),
    RECORD.map(_json_bytes),
    JSON.map(_json_bytes),
    MIXED,
    FIELD_TEXT.map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.just(b""),
    st.just(b"{"),
    st.just(b'{"log": "' + b"\\ud800" * 3 + b'", "host": "gpu001"}'),
    st.none(),  # a tombstone
)
HEADER_VALUES = st.binary(max_size=12) | st.just(b"99999999999999999999")
HEADERS = st.lists(st.tuples(st.sampled_from([RECORDED_TIME_HEADER, "x", ""]), HEADER_VALUES), max_size=2)


@st.composite
def consumer_records(draw: st.DrawFn) -> list[ConsumerRecord]:
    count = draw(st.integers(1, 6))
    return [
        ConsumerRecord(
            topic=draw(st.sampled_from(INGEST)),
            partition=0,
            offset=offset,
            timestamp=draw(st.integers(-1, 2**45)),
            timestamp_type=0,
            key=draw(st.none() | st.binary(max_size=12) | st.just(b"gpu\x1b[2J;$(x)")),
            value=draw(RAW_VALUES),
            checksum=None,
            serialized_key_size=0,
            serialized_value_size=0,
            headers=draw(HEADERS),
        )
        for offset in range(count)
    ]


@pytest.fixture(scope="module")
def worker(bundled_ruleset) -> ExtractorWorker:
    return ExtractorWorker(Settings(), bundled_ruleset)


def _produced(worker: ExtractorWorker, batch: list[ConsumerRecord]) -> list[bytes]:
    """Every value the worker would send for ``batch``, encoded as ``_produce`` encodes it."""
    out = worker.process(batch)
    values = [
        record if isinstance(record, bytes) else wire.encode(record) for _, record in out.node + out.workload
    ]
    values += [packed for _, packed in out.node_groups]
    values += [wire.encode(counts) for _, counts in out.node_counts]
    values += [_dead_value(dead) for dead in out.dead]
    return values


def test_hostile_batches_never_break_the_worker(worker: ExtractorWorker) -> None:
    @FUZZ
    @given(batch=consumer_records())
    def batch_goes_through(batch: list[ConsumerRecord]) -> None:
        for record in batch:
            one = normalize_record(
                record.topic, record.value, None, record.timestamp, "o", worker.topics.ingest
            )
            assert one.lines or one.events or one.dead, "a record disappeared"
            assert all(dead.reason for dead in one.dead)
        for value in _produced(worker, batch):
            orjson.loads(value)  # what reaches the topics is valid JSON

    batch_goes_through()


LINES = st.lists(
    st.builds(
        lambda text, host, source: LogLine(text, host, 1714560000000, source, "t:0:0", None),
        st.one_of(NASTY_TEXT, HUGE_TEXT, st.text(), NASTY_TEXT.map(lambda t: t + XID79 + t)),
        st.none() | NASTY_TEXT,
        st.sampled_from(["syslog", "dmesg", "applog", "scheduler", "k8s"]),
    ),
    min_size=1,
    max_size=12,
)


def test_the_rule_matchers_take_any_text_and_agree(bundled_ruleset, bundled_matcher) -> None:
    fast, slow = bundled_matcher, ReferenceMatcher(bundled_ruleset)

    @FUZZ
    @given(lines=LINES)
    @example(lines=[LogLine("\ud800" + XID79, "gpu001", 1, "dmesg", "o")])
    def any_text(lines: list[LogLine]) -> None:
        found = fast.extract_batch(lines)
        assert found == slow.extract_batch(lines)
        assert {s.line for s in found} <= {line.text for line in lines}  # the proof is the line as read

    any_text()


#: Values a scheduler record's fields take, valid and hostile: states, hostlists (one that would
#: expand to a billion hosts), times in every shape, exit codes, and the hostile JSON above.
SCHEDULER_VALUES = JSON | st.sampled_from(
    ["FAILED", "CANCELLED by 1000", "NODE_FAIL", "COMPLETED", "RESIZING", "gpu[001-004]", "gpu[0-999999999]",
     "n[1-1000][1-1000]", "gpu[", "None assigned", "2024-05-01T10:00:00Z", "2024-05-01T10:00:00", 1714557600,
     1714557600000, -1, "0:9", "9:0", "-", "job_start", "job_end", "node_state", "node_assign", "OOMKilled",
     "NodeNotReady", "Preempted", "Job", "Pod", "JobSet", "Node", "4101"]
)  # fmt: skip
K8S_OBJECT = (
    st.fixed_dictionaries(
        {}, optional={key: SCHEDULER_VALUES for key in ("kind", "name", "namespace", "labels", "uid")}
    )
    | SCHEDULER_VALUES
)
SCHEDULER_KEYS = (
    "@start", "@end", "nodes", "exit_code", "failed_node", "cancelled_by", "username", "job_name",
    "partition", "sluid", "workload_id", "time", "start_time", "node", "state", "signal", "user", "name",
    "scheduler", "actor", "reason", "message", "lastTimestamp", "firstTimestamp", "eventTime", "source",
    "metadata", "series", "type",
)  # fmt: skip
SCHEDULER_SHAPES = st.one_of(
    st.fixed_dictionaries({"jobid": SCHEDULER_VALUES, "state": SCHEDULER_VALUES}),
    st.fixed_dictionaries({"involvedObject": K8S_OBJECT, "reason": SCHEDULER_VALUES}),
    st.fixed_dictionaries({"type": st.sampled_from(["job_start", "job_end", "node_state"])}),
)


@st.composite
def scheduler_records(draw: st.DrawFn) -> dict:
    """A record every scheduler normalizer takes for its own (the shape's keys are there), with
    any of the fields it reads, each valid or hostile."""
    record = draw(SCHEDULER_SHAPES)
    extra = draw(st.dictionaries(st.sampled_from(SCHEDULER_KEYS), SCHEDULER_VALUES, max_size=8))
    return {**extra, **record}


@FUZZ
@given(record=scheduler_records(), timestamp=st.none() | st.integers(-1, 2**45))
def test_every_scheduler_normalizer_takes_hostile_fields(record: dict, timestamp: int | None) -> None:
    for value in (record, _json_bytes(record)):
        result = normalize_record("events.scheduler", value, None, timestamp, "o")
        assert result.lines or result.events or result.dead
        assert [d.reason for d in result.dead if d.reason.startswith("internal error")] == []
        for event in result.events:  # what the correlator would be sent
            wire.encode(wire.job(event))
            assert len(event.nodes) <= 100_000


# Counterexamples hypothesis found while these properties were written: kept as regression tests.


def test_a_lone_surrogate_in_a_line_is_scanned_not_a_crash(bundled_matcher) -> None:
    """A str line holding "\\ud800" (a value decoded by something other than Kafka bytes) made
    the Hyperscan matcher's ``encode("utf-8", "surrogateescape")`` raise."""
    line = LogLine("\ud800 " + XID79, "gpu001", 1, "dmesg", "o")
    [symptom] = bundled_matcher.extract_batch([line])
    assert symptom.symptom == "gpu_fallen_off_bus"


def test_a_recorded_time_header_past_64_bits_is_ignored_not_a_crashed_batch(bundled_ruleset) -> None:
    """Anyone who may produce to an ingest topic sets headers: a 20-digit recorded time became
    the line's time and ``orjson`` refused to encode the batch's line counts, so the worker
    failed on the same batch after every restart."""
    worker = ExtractorWorker(Settings(), bundled_ruleset)
    record = ConsumerRecord("logs.dmesg", 0, 0, 1714560000000, 0, b"gpu001", XID79.encode(), None, 0, 0,
                            [(RECORDED_TIME_HEADER, b"99999999999999999999")])  # fmt: skip
    assert all(orjson.loads(value) for value in _produced(worker, [record]))
    assert worker.latest_ms == 1714560000000  # the Kafka timestamp, not the header


@pytest.mark.parametrize("job_field", [{}, {"job_id": "42"}], ids=["fast path", "naming its job"])
def test_a_jobs_output_cannot_pass_for_another_nodes_kernel_or_another_time(job_field: dict) -> None:
    """A job's user writes its output: a syslog-like header at the start of an application line
    is the user's, so the shipper's host and time stand (the header would have put a forged Xid
    on gpu003, or moved event time to 2099)."""
    for forged in (f"May  1 10:01:40 gpu003 kernel: {XID79}", f"2099-01-01T00:00:00Z gpu003 kernel: {XID79}"):
        record = {"log": forged, "host": "gpu001", "@timestamp": 1714557700.0, **job_field}
        [line] = normalize_record("logs.applog", orjson.dumps(record), None, 1714557700100, "o").lines
        assert (line.host, line.time_ms) == ("gpu001", 1714557700000)
    # the same header on a syslog line is the node's own rsyslog's: it still wins (relays)
    relayed = {"log": f"May  1 10:01:40 gpu003 kernel: {XID79}", "host": "relay01"}
    [line] = normalize_record("logs.syslog", orjson.dumps(relayed), None, 1714557700100, "o").lines
    assert line.host == "gpu003"
