"""Application-log records that name their workload and rank in fields."""

from __future__ import annotations

from streams.normalize import normalize_record
from streams.records import LogLine

TIME = 1714560000.0
TIME_MS = 1714560000000
TEXT = "[E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog caught collective operation timeout"


def normalize(record: dict[str, object], key: str | None = None) -> list[LogLine]:
    result = normalize_record("logs.applog", record, key, None, "logs.applog:0:1")
    assert result.dead == []
    return result.lines


def test_applog_job_id_and_rank_fields_set_workload_and_rank() -> None:
    record = {"@timestamp": TIME, "log": TEXT, "host": "gpu001", "job_id": 1234, "rank": 1}
    assert normalize(record) == [LogLine(TEXT, "gpu001", TIME_MS, "applog", "logs.applog:0:1", "1234", 1)]


def test_applog_slurm_environment_fields_are_read_as_plain_digits() -> None:
    record = {"@timestamp": TIME, "log": TEXT, "host": "gpu001", "SLURM_JOB_ID": "1234",
              "SLURM_PROCID": "7"}  # fmt: skip
    [parsed] = normalize(record)
    assert (parsed.workload_id, parsed.rank) == ("1234", 7)


def test_applog_array_task_is_named_like_jobcomp_names_it() -> None:
    record = {"@timestamp": TIME, "log": TEXT, "host": "gpu001", "SLURM_JOB_ID": "1240",
              "SLURM_ARRAY_JOB_ID": "1234", "SLURM_ARRAY_TASK_ID": "6"}  # fmt: skip
    assert normalize(record)[0].workload_id == "1234_6"


def test_applog_explicit_workload_id_wins_over_job_id() -> None:
    record = {"@timestamp": TIME, "log": TEXT, "host": "gpu001", "workload_id": "k8s:ml/train",
              "job_id": "99", "RANK": 3}  # fmt: skip
    [parsed] = normalize(record)
    assert (parsed.workload_id, parsed.rank) == ("k8s:ml/train", 3)


def test_applog_pod_labels_name_the_jobset_before_its_child_job() -> None:
    record = {"@timestamp": TIME, "log": TEXT, "kubernetes": {
        "host": "gpu-node-7", "namespace_name": "ml",
        "labels": {"job-name": "train-workers-0", "jobset.sigs.k8s.io/jobset-name": "train"},
    }}  # fmt: skip
    [parsed] = normalize(record)
    assert (parsed.host, parsed.workload_id) == ("gpu-node-7", "k8s:ml/train")


def test_applog_plain_job_pod_label_names_the_job() -> None:
    record = {"@timestamp": TIME, "log": TEXT, "kubernetes": {
        "host": "gpu-node-7", "namespace_name": "ml", "labels": {"job-name": "train"}}}  # fmt: skip
    assert normalize(record)[0].workload_id == "k8s:ml/train"


def test_applog_rank_that_is_not_a_number_is_ignored_and_the_line_kept() -> None:
    record = {"@timestamp": TIME, "log": TEXT, "host": "gpu001", "job_id": "1234",
              "rank": "leader"}  # fmt: skip
    assert normalize(record) == [LogLine(TEXT, "gpu001", TIME_MS, "applog", "logs.applog:0:1", "1234", None)]


def test_applog_record_naming_a_workload_but_no_host_still_belongs_to_the_job() -> None:
    record = {"@timestamp": TIME, "log": TEXT, "job_id": "1234", "rank": 0}
    assert normalize(record) == [LogLine(TEXT, None, TIME_MS, "applog", "logs.applog:0:1", "1234", 0)]


def test_record_without_workload_fields_has_no_workload() -> None:
    record = {"@timestamp": TIME, "log": TEXT, "host": "gpu001", "kubernetes": {"host": "x"}}
    [parsed] = normalize(record)
    assert (parsed.workload_id, parsed.rank) == (None, None)


def test_multiline_applog_record_shares_workload_and_rank_across_lines() -> None:
    record = {"@timestamp": TIME, "log": "a\nb", "host": "gpu001", "job_id": 5, "rank": 2}
    assert normalize(record) == [
        LogLine("a", "gpu001", TIME_MS, "applog", "logs.applog:0:1#0", "5", 2),
        LogLine("b", "gpu001", TIME_MS, "applog", "logs.applog:0:1#1", "5", 2),
    ]
