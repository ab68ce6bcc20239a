"""Record builders in the exact shapes real shippers and schedulers put on the topics.

Used by ``tests/golden/stories.py`` to write the golden recordings; each builder returns one
recording line (``{"topic", "value", "key", "timestamp"}``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

__all__ = [
    "canonical",
    "fluentbit_dmesg",
    "fluentbit_syslog",
    "jobcomp",
    "jobcomp_start",
    "k8s_event",
    "raw_syslog",
    "vector_applog",
]


def _dt(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def _rfc3339(ms: int) -> str:
    return _dt(ms).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _record(topic: str, value: Any, ms: int, key: str | None = None) -> dict[str, Any]:
    return {"topic": topic, "value": value, "key": key, "timestamp": ms}


def fluentbit_dmesg(host: str, ms: int, text: str, uptime_s: float = 812345.0) -> dict[str, Any]:
    """Fluent Bit ``kmsg`` input + record_modifier adding ``hostname``; text as dmesg prints it."""
    return _record(
        "logs.dmesg", {"@timestamp": ms / 1000, "log": f"[{uptime_s:12.6f}] {text}", "hostname": host}, ms + 40
    )


def fluentbit_syslog(host: str, ms: int, ident: str, text: str) -> dict[str, Any]:
    """Fluent Bit ``systemd`` input: journal fields, ``_HOSTNAME``, ``MESSAGE``."""
    return _record(
        "logs.syslog",
        {
            "@timestamp": ms / 1000,
            "MESSAGE": text,
            "_HOSTNAME": host,
            "SYSLOG_IDENTIFIER": ident,
            "PRIORITY": "3",
            "_TRANSPORT": "kernel" if ident == "kernel" else "syslog",
        },
        ms + 55,
    )


def raw_syslog(host: str, ms: int, tag: str, text: str, pri: int = 30) -> dict[str, Any]:
    """An RFC 3164 line forwarded as a plain string (rsyslog omkafka with the default template)."""
    stamp = (
        _dt(ms).strftime("%b %d %H:%M:%S").replace(" 0", "  ", 1)
        if _dt(ms).day < 10
        else _dt(ms).strftime("%b %d %H:%M:%S")
    )
    return _record("logs.syslog", f"<{pri}>{stamp} {host} {tag}: {text}", ms + 70)


def vector_applog(host: str, ms: int, text: str, rank: int, job_id: str | None = None) -> dict[str, Any]:
    """Vector ``file`` source tailing one rank's log (a remap may add ``job_id``/``rank``)."""
    value: dict[str, Any] = {
        "file": f"/var/log/train/rank{rank}.log",
        "host": host,
        "message": text,
        "source_type": "file",
        "timestamp": _rfc3339(ms),
    }
    if job_id is not None:
        value.update({"job_id": job_id, "rank": rank})
    return _record("logs.applog", value, ms + 90)


def _slurm_time(ms: int) -> str:
    return _dt(ms).strftime("%Y-%m-%dT%H:%M:%S")


def jobcomp(
    jobid: int,
    start_ms: int,
    end_ms: int,
    state: str,
    nodes: str,
    *,
    user: str = "alice",
    uid: int = 1001,
    exit_code: str = "0:0",
    failed_node: str | None = None,
    name: str = "llama-pretrain",
    **extra: Any,
) -> dict[str, Any]:
    """Slurm jobcomp/kafka job-end record (fields of jobcomp_common_job_record_to_data)."""
    value = {
        "jobid": jobid,
        "username": user,
        "user_id": uid,
        "groupname": "ml",
        "group_id": 1000,
        "@start": _slurm_time(start_ms),
        "@end": _slurm_time(end_ms),
        "elapsed": (end_ms - start_ms) // 1000,
        "partition": "gpu",
        "alloc_node": "login01",
        "nodes": nodes,
        "total_cpus": 128,
        "total_nodes": nodes.count(",") + 1,
        "derived_ec": exit_code,
        "exit_code": exit_code,
        "state": state,
        "failed_node": failed_node,
        "cpu_hours": 1.0,
        "job_name": name,
        "cluster": "c1",
        "qos": "normal",
        "account": "ml",
        "time_limit": 86400,
        "work_dir": "/home/alice/run",
        **extra,
    }
    return _record("events.scheduler", value, end_ms + 200, key=str(jobid))


def jobcomp_start(jobid: int, start_ms: int, nodes: str, user: str = "alice") -> dict[str, Any]:
    """The job-start record Slurm >= 25.05 can send (state RUNNING, no @end yet)."""
    value = {
        "jobid": jobid,
        "username": user,
        "user_id": 1001,
        "@start": _slurm_time(start_ms),
        "@end": "Unknown",
        "partition": "gpu",
        "nodes": nodes,
        "state": "RUNNING",
        "job_name": "llama-pretrain",
        "cluster": "c1",
    }
    return _record("events.scheduler", value, start_ms + 200, key=str(jobid))


def k8s_event(
    reason: str,
    kind: str,
    namespace: str,
    name: str,
    message: str,
    ms: int,
    *,
    host: str | None = None,
    labels: dict[str, str] | None = None,
    component: str = "kubelet",
    event_type: str = "Warning",
) -> dict[str, Any]:
    """A kubernetes-event-exporter Event (core/v1 Event + clusterName, labels on involvedObject)."""
    stamp = _dt(ms).strftime("%Y-%m-%dT%H:%M:%SZ")
    value = {
        "metadata": {
            "name": f"{name}.{ms:x}",
            "namespace": namespace,
            "uid": f"uid-{ms:x}-{reason}",
            "creationTimestamp": stamp,
        },
        "involvedObject": {
            "kind": kind,
            "namespace": namespace,
            "name": name,
            "uid": f"obj-{name}",
            "apiVersion": "v1",
            "labels": labels or {},
        },
        "reason": reason,
        "message": message,
        "source": {"component": component, **({"host": host} if host else {})},
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
        "type": event_type,
        "eventTime": None,
        "reportingComponent": "",
        "reportingInstance": "",
        "clusterName": "c1",
    }
    return _record("events.scheduler", value, ms + 300, key=value["metadata"]["uid"])


def canonical(kind: str, workload_id: str, ms: int, **fields: Any) -> dict[str, Any]:
    """The canonical scheduler form, for schedulers without their own shape here."""
    value = {"type": kind, "workload_id": workload_id, "time": _rfc3339(ms), **fields}
    return _record("events.scheduler", value, ms + 100, key=workload_id)
