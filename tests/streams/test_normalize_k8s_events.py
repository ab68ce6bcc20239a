"""kubernetes-event-exporter Events (input-formats.md §6) to k8s lines and JobEvents."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from streams.normalize import Normalized, normalize_record
from streams.records import DeadLetter, JobEvent, LogLine

TOPIC = "events.scheduler"
ORIGIN = "events.scheduler:1:8"
KAFKA_MS = 1714560999000


def utc_ms(text: str) -> int:
    stamp = datetime.fromisoformat(text)
    stamp = stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)
    return (stamp - datetime(1970, 1, 1, tzinfo=UTC)) // datetime.resolution // 1000


def event(kind: str = "Pod", name: str = "train-0", labels: dict[str, str] | None = None,
          **changes: Any) -> dict[str, Any]:  # fmt: skip
    """The exporter's JSON: a core/v1 Event plus clusterName and the object's labels."""
    record: dict[str, Any] = {
        "metadata": {"name": f"{name}.17c2a1b3", "namespace": "ml", "uid": "9d1e",
                     "creationTimestamp": "2024-05-01T10:41:07Z"},
        "involvedObject": {"kind": kind, "namespace": "ml", "name": name, "uid": "47d9",
                           "apiVersion": "v1", "labels": labels or {}},
        "reason": "BackOff", "message": "Back-off restarting failed container trainer in pod train-0",
        "source": {"component": "kubelet", "host": "gpu-node-7"},
        "firstTimestamp": "2024-05-01T10:41:07Z", "lastTimestamp": "2024-05-01T10:43:12Z",
        "count": 3, "type": "Warning", "eventTime": None, "reportingComponent": "",
        "reportingInstance": "", "clusterName": "c1",
    }  # fmt: skip
    record.update(changes)
    return record


def normalize(record: dict[str, Any], kafka_ms: int | None = KAFKA_MS) -> Normalized:
    return normalize_record(TOPIC, record, "9d1e", kafka_ms, ORIGIN)


LAST = utc_ms("2024-05-01T10:43:12Z")


def test_k8s_pod_event_becomes_one_k8s_line_on_the_kubelets_node() -> None:
    result = normalize(event(labels={"job-name": "train"}))
    assert result == Normalized(
        [LogLine("k8s reason=BackOff kind=Pod object=ml/train-0 node=gpu-node-7 "
                 "message=Back-off restarting failed container trainer in pod train-0",
                 "gpu-node-7", LAST, "k8s", ORIGIN, "k8s:ml/train")],
        [], [],
    )  # fmt: skip


def test_k8s_oom_killed_line_matches_the_documented_format() -> None:
    result = normalize(event(reason="OOMKilled", message="Container trainer was OOM killed"))
    assert [line.text for line in result.lines] == [
        "k8s reason=OOMKilled kind=Pod object=ml/train-0 node=gpu-node-7 "
        "message=Container trainer was OOM killed"
    ]


def test_k8s_line_time_is_last_timestamp_the_time_of_this_occurrence() -> None:
    assert normalize(event()).lines[0].time_ms == LAST


def test_k8s_event_with_only_event_time_uses_it() -> None:
    record = event(firstTimestamp=None, lastTimestamp=None,
                   eventTime="2024-05-01T10:41:07.123456Z")  # fmt: skip
    assert normalize(record).lines[0].time_ms == utc_ms("2024-05-01T10:41:07.123")


def test_k8s_event_series_last_observed_time_is_used_before_event_time() -> None:
    record = event(firstTimestamp=None, lastTimestamp=None, eventTime="2024-05-01T10:41:07Z",
                   series={"count": 4, "lastObservedTime": "2024-05-01T10:45:00.5Z"})  # fmt: skip
    assert normalize(record).lines[0].time_ms == utc_ms("2024-05-01T10:45:00.5")


def test_k8s_event_with_no_time_at_all_uses_the_kafka_timestamp() -> None:
    record = event(firstTimestamp=None, lastTimestamp=None, metadata={"name": "x"})
    assert normalize(record).lines[0].time_ms == KAFKA_MS


def test_k8s_multiline_message_is_flattened_and_stays_last() -> None:
    record = event(reason="Failed", message="Error: failed to start\ncontainer: exit 1")
    assert (
        normalize(record)
        .lines[0]
        .text.endswith("node=gpu-node-7 message=Error: failed to start container: exit 1")
    )


def test_k8s_scheduled_event_assigns_the_pods_workload_to_the_node_in_the_message() -> None:
    record = event(labels={"batch.kubernetes.io/job-name": "train", "job-name": "train"},
                   reason="Scheduled", type="Normal", source={"component": "default-scheduler"},
                   message="Successfully assigned ml/train-0 to gpu-node-7")  # fmt: skip
    assert normalize(record) == Normalized(
        [LogLine("k8s reason=Scheduled kind=Pod object=ml/train-0 node=gpu-node-7 "
                 "message=Successfully assigned ml/train-0 to gpu-node-7",
                 "gpu-node-7", LAST, "k8s", ORIGIN, "k8s:ml/train")],
        [JobEvent("node_assign", "k8s:ml/train", LAST, ("gpu-node-7",), scheduler="kubernetes",
                  reason="Scheduled", origin=ORIGIN, extra={"pod": "ml/train-0"})],
        [],
    )  # fmt: skip


def test_k8s_scheduled_pod_without_workload_labels_gets_a_line_but_no_assignment() -> None:
    record = event(reason="Scheduled", source={"component": "default-scheduler"},
                   message="Successfully assigned ml/debug-7f9c to gpu-node-2")  # fmt: skip
    result = normalize(record)
    assert (result.events, result.lines[0].host, result.lines[0].workload_id) == (
        [], "gpu-node-2", None
    )  # fmt: skip


def test_k8s_node_not_ready_is_a_node_state_not_responding_on_that_node() -> None:
    record = event(kind="Node", name="gpu-node-7", reason="NodeNotReady",
                   message="Node gpu-node-7 status is now: NodeNotReady",
                   source={"component": "node-controller"})  # fmt: skip
    record["involvedObject"].pop("namespace")
    assert normalize(record) == Normalized(
        [LogLine("k8s reason=NodeNotReady kind=Node object=gpu-node-7 node=gpu-node-7 "
                 "message=Node gpu-node-7 status is now: NodeNotReady",
                 "gpu-node-7", LAST, "k8s", ORIGIN)],
        [JobEvent("node_state", None, LAST, ("gpu-node-7",), state="NOT_RESPONDING",
                  scheduler="kubernetes", reason="Node gpu-node-7 status is now: NodeNotReady",
                  origin=ORIGIN)],
        [],
    )  # fmt: skip


JOB_ENDS = [
    ("Job", "train", {}, "Completed", "COMPLETED", None),
    ("Job", "train", {}, "BackoffLimitExceeded", "FAILED", None),
    ("Job", "train", {}, "PodFailurePolicy", "FAILED", None),
    ("Job", "train", {}, "DeadlineExceeded", "TIMEOUT", None),
    ("JobSet", "train", {}, "AllJobsCompleted", "COMPLETED", None),
    ("JobSet", "train", {}, "FailedJobs", "FAILED", None),
    ("JobSet", "train", {}, "ReachedMaxRestarts", "FAILED", None),
    ("JobSet", "train", {}, "FailJobSetFailurePolicyAction", "FAILED", None),
    ("JobSet", "train", {}, "DeadlineExceeded", "TIMEOUT", None),
    ("Workload", "jobset-train-5c7d9", {}, "Preempted", "PREEMPTED", "kueue"),
    ("Workload", "job-train-1a2b3", {}, "EvictedDueToPreempted", "PREEMPTED", "kueue"),
    ("Workload", "job-train-1a2b3", {}, "EvictedDueToPodsReadyTimeout", "PREEMPTED", "kueue"),
    ("Workload", "job-train-1a2b3", {}, "EvictedDueToNodeFailures", "NODE_FAIL", None),
    ("Workload", "job-train-1a2b3", {},
     "EvictedDueToDeactivatedDueToMaximumExecutionTimeExceeded", "TIMEOUT", None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("kind", "name", "labels", "reason", "state", "actor"),
    JOB_ENDS,
    ids=[f"{kind}-{reason}" for kind, _, _, reason, _, _ in JOB_ENDS],
)
def test_k8s_terminal_workload_reason_is_a_job_end(
    kind: str, name: str, labels: dict[str, str], reason: str, state: str, actor: str | None
) -> None:
    record = event(kind=kind, name=name, labels=labels, reason=reason, message="m",
                   source={"component": "x"})  # fmt: skip
    result = normalize(record)
    assert result.events == [
        JobEvent("job_end", "k8s:ml/train", LAST, state=state, actor=actor,
                 scheduler="kubernetes", reason=reason, name=name, origin=ORIGIN,
                 extra={"message": "m"})
    ]  # fmt: skip
    assert result.lines[0].workload_id == "k8s:ml/train"


def test_k8s_failed_child_job_of_a_jobset_ends_the_jobsets_run() -> None:
    labels = {"jobset.sigs.k8s.io/jobset-name": "train", "batch.kubernetes.io/job-name": "train-workers-0"}
    record = event(
        kind="Job",
        name="train-workers-0",
        labels=labels,
        reason="BackoffLimitExceeded",
        message="Job has reached the specified backoff limit",
        source={"component": "job-controller"},
    )
    assert normalize(record).events == [
        JobEvent("job_end", "k8s:ml/train", LAST, state="FAILED", scheduler="kubernetes",
                 reason="BackoffLimitExceeded", name="train-workers-0", origin=ORIGIN,
                 extra={"message": "Job has reached the specified backoff limit"})
    ]  # fmt: skip


def test_k8s_completed_child_job_of_a_jobset_is_not_the_jobsets_end() -> None:
    labels = {"jobset.sigs.k8s.io/jobset-name": "train"}
    result = normalize(event(kind="Job", name="train-workers-0", labels=labels, reason="Completed"))
    assert (result.events, result.lines[0].workload_id) == ([], "k8s:ml/train")


def test_k8s_workload_not_named_by_kueue_keeps_its_own_name() -> None:
    result = normalize(event(kind="Workload", name="manual", reason="Preempted"))
    assert result.events[0].workload_id == "k8s:ml/manual"


def test_k8s_other_workload_reasons_are_lines_only() -> None:
    result = normalize(event(kind="Workload", name="job-train-1a2b3", reason="QuotaReserved"))
    assert (result.events, len(result.lines)) == ([], 1)


DEAD = [
    ({"involvedObject": "pod/train-0"}, "Kubernetes Event: 'involvedObject' must be an object"),
    ({"reason": ""}, "Kubernetes Event: 'reason' must be a non-empty string, got ''"),
    ({"involvedObject": {"kind": "Pod"}},
     "Kubernetes Event: 'involvedObject.name' must be a non-empty string, got None"),
    ({"lastTimestamp": "later"}, "Kubernetes Event: 'lastTimestamp' is not a time: 'later'"),
]  # fmt: skip


@pytest.mark.parametrize(("changes", "reason"), DEAD, ids=[reason for _, reason in DEAD])
def test_k8s_event_with_missing_or_invalid_field_is_a_dead_letter(changes: dict[str, Any], reason: str) -> None:
    record = event(**changes)
    assert normalize(record) == Normalized([], [], [DeadLetter(reason, TOPIC, ORIGIN, record)])


def test_k8s_event_with_no_time_and_no_kafka_timestamp_is_a_dead_letter() -> None:
    record = event(firstTimestamp=None, lastTimestamp=None, metadata={})
    [dead] = normalize(record, kafka_ms=None).dead
    assert dead.reason == "Kubernetes Event: no event time: no time field, no Kafka timestamp"
