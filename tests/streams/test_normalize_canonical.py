"""The canonical scheduler form to JobEvents and synthesized lines."""

from __future__ import annotations

from typing import Any

import pytest

from streams.normalize import Normalized, normalize_record
from streams.records import DeadLetter, JobEvent, LogLine

TOPIC = "events.scheduler"
ORIGIN = "events.scheduler:0:3"
TIME_MS = 1714557600000  # 2024-05-01T10:00:00Z
KAFKA_MS = 1714557699000


def normalize(record: dict[str, Any], kafka_ms: int | None = KAFKA_MS) -> Normalized:
    return normalize_record(TOPIC, record, None, kafka_ms, ORIGIN)


def test_canonical_job_start_with_hostlist_and_rfc3339_time() -> None:
    record = {"type": "job_start", "workload_id": "run-17", "time": "2024-05-01T10:00:00Z",
              "nodes": "gpu[001-002]", "user": "bob", "name": "pretrain",
              "scheduler": "lsf"}  # fmt: skip
    assert normalize(record) == Normalized(
        [LogLine("scheduler=lsf event=job_start workload=run-17 nodes=gpu[001-002] user=bob",
                 None, TIME_MS, "scheduler", ORIGIN, "run-17")],
        [JobEvent("job_start", "run-17", TIME_MS, ("gpu001", "gpu002"), user="bob",
                  name="pretrain", scheduler="lsf", origin=ORIGIN)],
        [],
    )  # fmt: skip


def test_canonical_job_end_with_node_list_epoch_time_and_actor() -> None:
    record = {"type": "job_end", "workload_id": 17, "time": 1714557600, "nodes": ["a1", "a2"],
              "state": "cancelled", "exit_code": 0, "signal": 15, "user": "bob",
              "actor": "admin"}  # fmt: skip
    assert normalize(record) == Normalized(
        [LogLine("scheduler=custom event=job_end workload=17 state=CANCELLED exit=0:15 "
                 "failed_node=- user=bob actor=admin", None, TIME_MS, "scheduler", ORIGIN, "17")],
        [JobEvent("job_end", "17", TIME_MS, ("a1", "a2"), state="CANCELLED", exit_code=0,
                  signal=15, user="bob", actor="admin", scheduler="custom", origin=ORIGIN)],
        [],
    )  # fmt: skip


def test_canonical_job_end_accepts_slurm_exit_signal_and_failed_node() -> None:
    record = {"type": "job_end", "workload_id": "9", "time": "2024-05-01T10:00:00",
              "state": "NODE_FAIL", "exit_code": "0:9", "failed_node": "gpu003",
              "start_time": "2024-05-01T09:00:00Z"}  # fmt: skip
    [end] = normalize(record).events
    assert (end.exit_code, end.signal, end.failed_node, end.start_ms) == (
        0, 9, "gpu003", TIME_MS - 3_600_000
    )  # fmt: skip
    assert normalize(record).lines[0].host == "gpu003"


def test_canonical_node_state_line_matches_the_documented_format() -> None:
    record = {"type": "node_state", "node": "gpu003", "state": "NOT_RESPONDING",
              "reason": "Not responding", "scheduler": "slurm", "time": 1714557600.0}  # fmt: skip
    assert normalize(record) == Normalized(
        [LogLine("scheduler=slurm event=node_state node=gpu003 state=NOT_RESPONDING "
                 "reason=Not responding", "gpu003", TIME_MS, "scheduler", ORIGIN)],
        [JobEvent("node_state", None, TIME_MS, ("gpu003",), state="NOT_RESPONDING",
                  scheduler="slurm", reason="Not responding", origin=ORIGIN)],
        [],
    )  # fmt: skip


def test_canonical_record_without_time_uses_the_kafka_timestamp() -> None:
    record = {"type": "node_state", "node": "gpu003", "state": "DOWN"}
    assert normalize(record).events[0].time_ms == KAFKA_MS


DEAD = [
    ({"type": "job_start"}, "canonical job_start record: missing or invalid 'workload_id'"),
    ({"type": "job_end", "workload_id": "1"}, "canonical job_end record: missing 'state'"),
    ({"type": "node_state", "state": "DOWN"}, "canonical node_state record: missing 'node'"),
    ({"type": "job_start", "workload_id": "1", "time": "noon"},
     "canonical job_start record: 'time' is not a time: 'noon'"),
    ({"type": "job_start", "workload_id": "1", "nodes": "n[1-"},
     "canonical job_start record: invalid hostlist in 'nodes' 'n[1-': '[' without a "
     "closing ']'"),
    ({"type": "job_start", "workload_id": "1", "nodes": [1, 2]},
     "canonical job_start record: 'nodes' must be a list of names or a hostlist string"),
    ({"type": "job_end", "workload_id": "1", "state": "FAILED", "exit_code": "x"},
     "canonical job_end record: 'exit_code' must be an integer or 'exit:signal' "
     "(and 'signal' an integer): 'x'"),
    ({"type": "job_start", "workload_id": "1", "user": 5},
     "canonical job_start record: 'user' must be a string, got 5"),
    ({"type": "job_resize", "workload_id": "1"},
     "unrecognised scheduler record (expected Slurm jobcomp, Kubernetes Event or canonical "
     "form)"),
]  # fmt: skip


@pytest.mark.parametrize(("record", "reason"), DEAD, ids=[reason for _, reason in DEAD])
def test_canonical_record_with_missing_or_invalid_field_is_a_dead_letter_naming_it(
    record: dict[str, Any], reason: str
) -> None:
    assert normalize(record) == Normalized([], [], [DeadLetter(reason, TOPIC, ORIGIN, record)])


def test_canonical_record_with_no_time_and_no_kafka_timestamp_is_a_dead_letter() -> None:
    [dead] = normalize({"type": "node_state", "node": "n1", "state": "DOWN"}, None).dead
    assert dead.reason == "canonical node_state record: no event time: no 'time', no Kafka timestamp"
