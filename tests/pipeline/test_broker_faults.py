"""The pipeline while its Kafka broker restarts, stalls or runs out of disk (issue 11).

Each test runs the extractor and correlator workers against a broker of its own
(tests/private_kafka.py: ``scripts/kafka.sh`` on free ports and its own state), so stopping,
pausing or starving it disturbs nobody using the shared broker on :9092. What must hold: every
verdict arrives equal to the backtest's, no revision is published twice with two contents, and
the workers come back by themselves once the broker does.
"""

from __future__ import annotations

import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from tests.pipeline.conftest import Pipeline, Services
from tests.pipeline.results import ALL_RECORDINGS, comparable, expected_verdicts, read_topic, wait_for_verdicts
from tests.private_kafka import PrivateKafka

pytestmark = [pytest.mark.slow, pytest.mark.services]

FIRST = ALL_RECORDINGS[: len(ALL_RECORDINGS) // 2]
SECOND = ALL_RECORDINGS[len(ALL_RECORDINGS) // 2 :]


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateKafka]:
    broker = PrivateKafka(tmp_path_factory.mktemp("kafka-faults"))
    try:
        broker.start()
        yield broker
    finally:
        broker.resume() if broker.pid() else None  # never leave a stopped JVM behind
        broker.stop()


@pytest.fixture
def on_private_kafka(kafka, services, tmp_path) -> Iterator[Pipeline]:
    running = Pipeline(Services(kafka.bootstrap, services.redis), tmp_path, f"t{uuid.uuid4().hex[:8]}.")
    yield running
    running.stop()


def test_a_broker_restart_mid_run_loses_no_verdict_and_never_reuses_a_revision(kafka, on_private_kafka):
    pipeline = on_private_kafka
    expected = expected_verdicts(ALL_RECORDINGS, pipeline.grace_s)
    workers = [pipeline.extractor(), pipeline.correlator()]
    pipeline.load(*FIRST)
    _wait_for_first_verdicts(pipeline)
    kafka.stop()  # mid-run: later workloads of the first half are still in flight
    time.sleep(5)
    kafka.start()
    pipeline.load(*SECOND)
    got = wait_for_verdicts(pipeline.services.redis, pipeline.prefix, expected, timeout_s=150)
    _assert_same(got, expected, pipeline)
    _assert_no_revision_has_two_contents(pipeline)
    assert all(worker.poll() is None for worker in workers), pipeline.logs()


def test_a_broker_frozen_for_eighteen_seconds_delays_verdicts_but_loses_none(kafka, on_private_kafka):
    pipeline = on_private_kafka
    expected = expected_verdicts(ALL_RECORDINGS, pipeline.grace_s)
    workers = [pipeline.extractor(), pipeline.correlator()]
    pipeline.load(*FIRST)
    _wait_for_first_verdicts(pipeline)
    kafka.pause()  # SIGSTOP: connections stay open, nothing answers (a long GC pause, a hung disk)
    try:
        time.sleep(18)
    finally:
        kafka.resume()
    pipeline.load(*SECOND)
    got = wait_for_verdicts(pipeline.services.redis, pipeline.prefix, expected, timeout_s=150)
    _assert_same(got, expected, pipeline)
    _assert_no_revision_has_two_contents(pipeline)
    assert all(worker.poll() is None for worker in workers), pipeline.logs()


def _assert_same(got: dict[str, dict], expected: dict[str, dict], pipeline: Pipeline) -> None:
    missing = sorted(set(expected) - set(got))
    assert not missing, f"no verdict for {missing}\n{pipeline.logs()}"
    for workload_id, verdict in expected.items():
        mine, theirs = comparable(got[workload_id]), comparable(verdict)
        # a batch delivered but not committed before the outage is extracted again: its plain line
        # counts may count twice (docs/architecture.md, delivery guarantees); nothing else may differ
        mine.pop("lines_seen"), theirs.pop("lines_seen")
        assert mine == theirs, workload_id


def _assert_no_revision_has_two_contents(pipeline: Pipeline) -> None:
    contents = defaultdict(set)
    for _, verdict in read_topic(pipeline.services.kafka, f"{pipeline.namespace}faultstream.verdicts"):
        contents[(verdict["workload_id"], verdict["revision"])].add(
            orjson.dumps(comparable(verdict), option=orjson.OPT_SORT_KEYS)
        )
    reused = {key: len(bodies) for key, bodies in contents.items() if len(bodies) > 1}
    assert not reused, f"revisions emitted with two different contents: {reused}"


def _wait_for_first_verdicts(pipeline: Pipeline, count: int = 3) -> None:
    """Until the verdicts topic holds ``count`` verdicts: the run is under way, not finished."""
    topic = f"{pipeline.namespace}faultstream.verdicts"
    deadline = time.monotonic() + 90
    while len(read_topic(pipeline.services.kafka, topic, idle_s=1.0)) < count:
        assert time.monotonic() < deadline, f"no verdicts yet\n{pipeline.logs()}"
        time.sleep(0.5)


def _log_text(pipeline: Pipeline) -> str:
    return "".join(p.read_text(errors="replace") for p in Path(pipeline.workdir).glob("*.log"))
