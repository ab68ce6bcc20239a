"""Slurm jobcomp/kafka records (input-formats.md §4) to JobEvents and synthesized lines."""

from __future__ import annotations

from typing import Any

import pytest

from streams.normalize import Normalized, normalize_record
from streams.records import DeadLetter, JobEvent, LogLine

TOPIC = "events.scheduler"
ORIGIN = "events.scheduler:0:42"
START_MS = 1714557600000  # 2024-05-01T10:00:00Z
END_MS = 1714561200000  # 2024-05-01T11:00:00Z
KAFKA_MS = 1714561201234
NODES = ("gpu001", "gpu002", "gpu003", "gpu004", "gpu010")


def jobcomp(**changes: Any) -> dict[str, Any]:
    """A NODE_FAIL record as jobcomp_common_job_record_to_data() writes it."""
    record: dict[str, Any] = {
        "jobid": 1234, "container": None, "username": "alice", "user_id": 1000,
        "groupname": "ml", "group_id": 1000, "@start": "2024-05-01T10:00:00",
        "@end": "2024-05-01T11:00:00", "elapsed": 3600, "partition": "gpu",
        "alloc_node": "login1", "nodes": "gpu[001-004,010]", "total_cpus": 320,
        "total_nodes": 5, "derived_ec": "0:0", "exit_code": "0:9", "state": "NODE_FAIL",
        "failed_node": "gpu003", "cpu_hours": 320.0, "@submit": "2024-05-01T09:59:00",
        "@eligible": "2024-05-01T09:59:00", "@queue_wait": 60, "work_dir": "/home/alice/run",
        "std_err": "/home/alice/run/slurm-1234.out", "std_in": "/dev/null",
        "std_out": "/home/alice/run/slurm-1234.out", "cluster": "c1", "qos": "normal",
        "account": "ml", "job_name": "train", "time_limit": 7200,
        "script": "#!/bin/bash\nsrun python train.py\n",
    }  # fmt: skip
    record.update(changes)
    return {key: value for key, value in record.items() if value is not ...}


def normalize(record: dict[str, Any], kafka_ms: int | None = KAFKA_MS) -> Normalized:
    return normalize_record(TOPIC, record, None, kafka_ms, ORIGIN)


def test_jobcomp_end_record_alone_yields_start_and_end() -> None:
    assert normalize(jobcomp()) == Normalized(
        lines=[
            LogLine(
                "scheduler=slurm event=job_end workload=1234 state=NODE_FAIL exit=0:9 "
                "failed_node=gpu003 user=alice",
                "gpu003", END_MS, "scheduler", ORIGIN, "1234",
            )
        ],
        events=[
            JobEvent("job_start", "1234", START_MS, NODES, user="alice", name="train",
                     partition="gpu", origin=ORIGIN),
            JobEvent("job_end", "1234", END_MS, NODES, state="NODE_FAIL", start_ms=START_MS,
                     exit_code=0, signal=9, failed_node="gpu003", user="alice", name="train",
                     partition="gpu", origin=ORIGIN,
                     extra={"user_id": 1000, "cluster": "c1", "account": "ml", "qos": "normal",
                            "derived_ec": "0:0", "elapsed": 3600, "time_limit": 7200,
                            "work_dir": "/home/alice/run",
                            "std_out": "/home/alice/run/slurm-1234.out",
                            "std_err": "/home/alice/run/slurm-1234.out"}),
        ],
        dead=[],
    )  # fmt: skip


def test_jobcomp_end_record_never_carries_the_batch_script() -> None:
    end = normalize(jobcomp()).events[1]
    assert "script" not in end.extra


def test_jobcomp_cancelled_record_names_the_actor_when_the_record_has_one() -> None:
    result = normalize(jobcomp(state="CANCELLED", exit_code="0:15", failed_node=None,
                               cancelled_by="alice"))  # fmt: skip
    assert result.lines == [
        LogLine(
            "scheduler=slurm event=job_end workload=1234 state=CANCELLED exit=0:15 "
            "failed_node=- user=alice actor=alice",
            None, END_MS, "scheduler", ORIGIN, "1234",
        )
    ]  # fmt: skip
    assert (result.events[1].state, result.events[1].actor) == ("CANCELLED", "alice")


def test_jobcomp_sacct_style_cancelled_by_uid_state_gives_the_actor() -> None:
    end = normalize(jobcomp(state="CANCELLED by 0", failed_node=None)).events[1]
    assert (end.state, end.actor) == ("CANCELLED", "0")


def test_jobcomp_job_cancelled_while_pending_has_unknown_start_and_only_an_end() -> None:
    result = normalize(jobcomp(state="CANCELLED", **{"@start": "Unknown"}, nodes="None assigned",
                               failed_node=None, exit_code="0:0"))  # fmt: skip
    [end] = result.events
    assert (end.kind, end.start_ms, end.nodes, end.time_ms) == ("job_end", None, (), END_MS)


def test_jobcomp_running_record_yields_a_job_start_only() -> None:
    result = normalize(jobcomp(state="RUNNING", **{"@end": ...}, exit_code=...,
                               failed_node=None))  # fmt: skip
    assert result == Normalized(
        lines=[LogLine("scheduler=slurm event=job_start workload=1234 nodes=gpu[001-004,010] "
                       "user=alice", None, START_MS, "scheduler", ORIGIN, "1234")],
        events=[JobEvent("job_start", "1234", START_MS, NODES, user="alice", name="train",
                         partition="gpu", origin=ORIGIN)],
        dead=[],
    )  # fmt: skip


def test_jobcomp_pending_record_without_start_is_placed_at_the_kafka_timestamp() -> None:
    result = normalize(jobcomp(state="PENDING", **{"@start": "Unknown"}, nodes="None assigned"))
    [start] = result.events
    assert (start.kind, start.time_ms, start.nodes) == ("job_start", KAFKA_MS, ())
    assert result.lines[0].text == "scheduler=slurm event=job_start workload=1234 nodes=- user=alice"


def test_jobcomp_array_task_workload_is_its_own_jobid_as_slurm_lines_name_it() -> None:
    result = normalize(jobcomp(jobid=1240, array_job_id=1234, array_task_id=6))
    assert {event.workload_id for event in result.events} == {"1240"}
    assert result.lines[0].workload_id == "1240"
    end = next(e for e in result.events if e.kind == "job_end")
    assert (end.extra["array_job_id"], end.extra["array_task_id"]) == (1234, 6)


def test_jobcomp_het_job_component_workload_is_its_own_jobid() -> None:
    result = normalize(jobcomp(jobid=1235, het_job_id=1234, het_job_offset=1))
    assert result.lines[0].workload_id == "1235"


def test_jobcomp_pack_aliases_still_use_the_components_own_jobid() -> None:
    result = normalize(jobcomp(jobid=1234, pack_job_id=1234, pack_job_offset=0))
    assert result.lines[0].workload_id == "1234"


def test_jobcomp_no_val_array_fields_mean_not_an_array() -> None:
    result = normalize(jobcomp(array_job_id=0, array_task_id=4294967294))
    assert result.lines[0].workload_id == "1234"


def test_jobcomp_resize_record_is_a_dead_letter() -> None:
    record = jobcomp(state="RESIZING")
    result = normalize(record)
    assert result == Normalized([], [], [DeadLetter("resize records are not supported", TOPIC, ORIGIN, record)])


DEAD = [
    ({"@end": ...}, "Slurm jobcomp record: state NODE_FAIL without '@end'"),
    ({"@end": "yesterday"}, "Slurm jobcomp record: '@end' is not a time: 'yesterday'"),
    ({"@start": "soon"}, "Slurm jobcomp record: '@start' is not a time: 'soon'"),
    ({"state": "EXPLODED"}, "Slurm jobcomp record: unknown job state 'EXPLODED'"),
    ({"state": ""}, "Slurm jobcomp record: 'state' must be a non-empty string, got ''"),
    ({"state": 3}, "Slurm jobcomp record: 'state' must be a non-empty string, got 3"),
    ({"jobid": "abc"}, "Slurm jobcomp record: 'jobid' must be an integer, got 'abc'"),
    ({"exit_code": "bad"}, "Slurm jobcomp record: 'exit_code' is not 'exit:signal': 'bad'"),
    ({"nodes": 7}, "Slurm jobcomp record: 'nodes' must be a hostlist string, got 7"),
    (
        {"nodes": "gpu[001-004"},
        "Slurm jobcomp record: invalid hostlist in 'nodes' 'gpu[001-004': '[' without a closing ']'",
    ),
]


@pytest.mark.parametrize(("changes", "reason"), DEAD, ids=[reason for _, reason in DEAD])
def test_jobcomp_record_with_missing_or_invalid_field_is_a_dead_letter_naming_it(
    changes: dict[str, Any], reason: str
) -> None:
    record = jobcomp(**changes)
    assert normalize(record) == Normalized([], [], [DeadLetter(reason, TOPIC, ORIGIN, record)])


def test_jobcomp_running_record_with_no_start_and_no_kafka_time_is_a_dead_letter() -> None:
    record = jobcomp(state="RUNNING", **{"@start": "Unknown"})
    [dead] = normalize(record, kafka_ms=None).dead
    assert dead.reason == ("Slurm jobcomp record: no event time: '@start' unknown and no Kafka timestamp")
