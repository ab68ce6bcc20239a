"""deploy/kubernetes/event-exporter.yaml: kubernetes-event-exporter's Kafka receiver puts Events on
events.scheduler in the shape the normalizer reads (the exporter's binary is not installable here:
its config is checked and an Event in its exact JSON shape goes through the normalizer)."""

from __future__ import annotations

import re

import orjson
import yaml

from deploy.render import render
from streams.normalize import normalize_record
from tests.conftest import REPO

TEMPLATE = REPO / "deploy" / "kubernetes" / "event-exporter.yaml"

#: A JobSet's child Job failing, as the exporter publishes it (core/v1 Event + involvedObject.labels).
JOB_FAILED = {
    "metadata": {"name": "train-workers-0.17c2", "namespace": "ml", "uid": "9d1e",
                 "creationTimestamp": "2024-05-01T10:41:07Z"},
    "involvedObject": {"kind": "Job", "namespace": "ml", "name": "train-workers-0",
                       "labels": {"jobset.sigs.k8s.io/jobset-name": "train"}},
    "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit",
    "source": {"component": "job-controller"}, "type": "Warning",
    "firstTimestamp": "2024-05-01T10:41:07Z", "lastTimestamp": "2024-05-01T10:41:07Z", "count": 1,
}  # fmt: skip


def rendered() -> dict:
    text = render(TEMPLATE.read_text(), {"BROKERS": "kafka-0.kafka:9092", "TOPIC_PREFIX": "prod."})
    return yaml.safe_load(text)


def test_every_event_the_engine_reads_goes_to_the_scheduler_topic_over_kafka():
    config = rendered()
    [receiver] = config["receivers"]
    assert receiver["kafka"]["topic"] == "prod.events.scheduler"
    assert receiver["kafka"]["brokers"] == ["kafka-0.kafka:9092"]
    routed = config["route"]["routes"][0]["match"]
    assert {"receiver": "faultstream", "type": "Warning"} in routed
    reasons = next(m["reason"] for m in routed if "reason" in m)
    for reason in ("Scheduled", "Completed", "AllJobsCompleted"):
        assert re.fullmatch(reasons, reason)


def test_an_event_in_the_exporters_shape_ends_the_jobsets_run():
    out = normalize_record("events.scheduler", orjson.dumps(JOB_FAILED), "9d1e", None, "events.scheduler:0:1")
    [event] = out.events
    assert (event.kind, event.workload_id, event.state) == ("job_end", "k8s:ml/train", "FAILED")
    assert not out.dead
