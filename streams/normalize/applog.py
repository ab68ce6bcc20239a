"""The workload and rank a log record names in its fields (application logs, pod logs).

Slurm job ids stay plain digits ("1234"), so they equal the ids jobcomp records produce;
Kubernetes workloads are ``k8s:<namespace>/<name>`` like the ids Kubernetes Events produce.
"""

from __future__ import annotations

from typing import Any

__all__ = ["K8S_WORKLOAD_LABELS", "WORKLOAD_FIELDS", "k8s_id", "k8s_workload_id", "workload_and_rank"]

WORKLOAD_KEYS = ("workload_id", "job_id", "SLURM_JOB_ID", "slurm_job_id")
RANK_KEYS = ("rank", "RANK", "SLURM_PROCID")
ARRAY_KEYS = ("SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID")
#: The owning workload's name, most specific first: a JobSet's Jobs carry both names.
K8S_WORKLOAD_LABELS = (
    "jobset.sigs.k8s.io/jobset-name",
    "batch.kubernetes.io/job-name",
    "job-name",
)
#: Fields that can name a workload or a rank: one set test rejects the common record (none of
#: them) without seven lookups.
WORKLOAD_FIELDS = frozenset((*WORKLOAD_KEYS, *RANK_KEYS, *ARRAY_KEYS, "kubernetes"))


def workload_and_rank(record: dict[str, Any]) -> tuple[str | None, int | None]:
    if WORKLOAD_FIELDS.isdisjoint(record):
        return None, None
    return _workload(record), _rank(record)


def _workload(record: dict[str, Any]) -> str | None:
    workload = _id_text(record.get("workload_id"))
    if workload is None:
        workload = _array_task(record)  # an array task's own SLURM_JOB_ID is not jobcomp's id
    for key in WORKLOAD_KEYS[1:]:
        if workload is None:
            workload = _id_text(record.get(key))
    if workload is None:
        workload = _pod_workload(record.get("kubernetes"))
    return workload


def _array_task(record: dict[str, Any]) -> str | None:
    array_job = _id_text(record.get("SLURM_ARRAY_JOB_ID"))
    task = _id_text(record.get("SLURM_ARRAY_TASK_ID"))
    return f"{array_job}_{task}" if array_job and task else None


def _pod_workload(kubernetes: object) -> str | None:
    """Fluent Bit's ``kubernetes`` filter: the pod's labels and namespace."""
    if not isinstance(kubernetes, dict):
        return None
    labels = kubernetes.get("labels")
    return k8s_workload_id(kubernetes.get("namespace_name"), labels)


def k8s_workload_id(namespace: object, labels: object) -> str | None:
    if not isinstance(labels, dict):
        return None
    for label in K8S_WORKLOAD_LABELS:
        name = labels.get(label)
        if isinstance(name, str) and name:
            return k8s_id(namespace, name)
    return None


def k8s_id(namespace: object, name: str) -> str:
    return f"k8s:{namespace}/{name}" if isinstance(namespace, str) and namespace else f"k8s:{name}"


def _id_text(value: object) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return value.strip() or None
    return None


def _rank(record: dict[str, Any]) -> int | None:
    """A rank that is not a non-negative integer is ignored: the line is still evidence."""
    for key in RANK_KEYS:
        value = record.get(key)
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, int) and value >= 0:
            return value
        if isinstance(value, str) and value.strip().isdecimal():
            return int(value)
    return None
