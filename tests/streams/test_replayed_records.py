"""A replayed record keeps its recorded time, though the broker sees the time it was sent.

Brokers delete segments whose newest record timestamp is older than the retention (7 days by
default), at their next retention check: a recording from last month published with its own
timestamps vanished before the extractor read it (seen in CI as verdicts that never came).
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from extractors.loader import load_ruleset
from streams.extract_worker import ExtractorWorker
from streams.settings import Settings
from streams.topics import RECORDED_TIME_HEADER, record_time_ms

SENT_MS = 1_796_000_000_000  # 2026: when `faultstream load` sent it
RECORDED_MS = 1_714_557_600_000  # 2024-05-01T10:00:00Z: the recording's Kafka timestamp


@dataclass
class ConsumedRecord:  # the fields of aiokafka's ConsumerRecord the extractor reads
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes
    timestamp: int
    headers: tuple[tuple[str, bytes], ...] = ()


def test_the_recorded_time_header_wins_over_the_send_time():
    assert record_time_ms(SENT_MS, [(RECORDED_TIME_HEADER, b"%d" % RECORDED_MS)]) == RECORDED_MS


def test_a_shipper_record_without_headers_keeps_its_kafka_timestamp():
    assert record_time_ms(SENT_MS, ()) == SENT_MS
    assert record_time_ms(SENT_MS, [("traceparent", b"00-ab"), (RECORDED_TIME_HEADER, b"soon")]) == SENT_MS


def test_a_replayed_dmesg_line_without_a_clock_is_placed_at_its_recorded_time():
    settings = Settings(namespace="")
    worker = ExtractorWorker(settings, load_ruleset(settings.rules_dir))
    line = orjson.dumps({"host": "gpu001", "message": "[12345.678901] NVRM: Xid (PCI:0000:3b:00): 79, pid=1"})
    replayed = ConsumedRecord(
        "logs.dmesg", 0, 7, None, line, SENT_MS, ((RECORDED_TIME_HEADER, b"%d" % RECORDED_MS),)
    )
    outputs = worker.process([replayed])
    [(_partition, packed)] = outputs.node_groups  # groups travel packed per partition
    [group] = orjson.loads(packed)["items"]
    assert group["first"]["node"] == "gpu001"
    assert group["first_ms"] == RECORDED_MS
