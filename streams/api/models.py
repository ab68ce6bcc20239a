"""Request bodies of the v2 API: pydantic at the edge, so bad input is a 4xx with a reason."""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import orjson
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

__all__ = [
    "ApiInputError",
    "AttributorRequest",
    "Metadata",
    "ObservationLine",
    "ObservationRequest",
    "Workload",
    "parse_observation_lines",
]

#: Workload states an operator may send, mapped onto the Slurm-style states the engine reads.
STATUS_ALIASES = {
    "failed": "FAILED",
    "fail": "FAILED",
    "error": "FAILED",
    "completed": "COMPLETED",
    "complete": "COMPLETED",
    "succeeded": "COMPLETED",
    "success": "COMPLETED",
    "cancelled": "CANCELLED",
    "canceled": "CANCELLED",
    "timeout": "TIMEOUT",
    "timedout": "TIMEOUT",
    "node_fail": "NODE_FAIL",
    "out_of_memory": "OUT_OF_MEMORY",
    "preempted": "PREEMPTED",
    "boot_fail": "BOOT_FAIL",
    "deadline": "DEADLINE",
    "running": "RUNNING",
}


class ApiInputError(ValueError):
    """A request the client must fix; ``status`` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class _Lenient(BaseModel):
    # NVIDIA's client sends more fields than we use (srun_cmd, nranks, ...): accept and ignore them.
    model_config = ConfigDict(extra="ignore")


class Workload(_Lenient):
    id: str | int
    type: str = "slurm"
    job_start_time: datetime | None = None
    job_end_time: datetime | None = None
    interest_start_time: datetime | None = None
    interest_end_time: datetime | None = None
    timezone: str | None = None
    status: str | None = None
    nodes: dict[str, list[int | str]] | list[str] = Field(default_factory=dict)
    name: str | None = None
    username: str | None = None
    framework: str | None = None

    @field_validator("status")
    @classmethod
    def _known_status(cls, value: str | None) -> str | None:
        if value is None:
            return None
        state = STATUS_ALIASES.get(value.strip().lower())
        if state is None:
            raise ValueError(f"unknown status {value!r}; expected one of {sorted(set(STATUS_ALIASES))}")
        return state

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str | None) -> str | None:
        if value:
            try:
                ZoneInfo(value)
            except (ZoneInfoNotFoundError, ValueError) as exc:
                raise ValueError(
                    f"unknown timezone {value!r}; expected an IANA name such as UTC or Europe/Paris"
                ) from exc
        return value or None

    @property
    def zone(self) -> tzinfo:
        """The zone of the times that carry none (the workload's, the lines'): UTC unless told."""
        return ZoneInfo(self.timezone) if self.timezone else UTC

    @field_validator("nodes")
    @classmethod
    def _as_mapping(cls, value: dict | list) -> dict[str, list[int | str]]:
        return {host: [] for host in value} if isinstance(value, list) else value

    @property
    def workload_id(self) -> str:
        return str(self.id)


class Metadata(_Lenient):
    cluster: str | None = None
    agent: str | None = None
    tenant: str | None = None
    ruleset: str | None = "default"


class AttributorRequest(_Lenient):
    workload: Workload
    metadata: Metadata = Field(default_factory=Metadata)


class TimeInterval(_Lenient):
    start: datetime | None = None
    end: datetime | None = None


class ObservationContext(_Lenient):
    time_interval: TimeInterval | None = None
    source: str = "syslog"

    @field_validator("source")
    @classmethod
    def _plain_name(cls, value: str) -> str:
        if not value.replace("_", "").replace("-", "").isalnum():
            raise ValueError(f"source must be a plain name such as applog or syslog, got {value!r}")
        return value.lower()


class ObservationRequest(_Lenient):
    context: ObservationContext
    body: str


class Resource(_Lenient):
    kind: str = "node"
    hostname: str | None = None


class ObservationLine(_Lenient):
    body: str
    resources: list[Resource] = Field(default_factory=list)
    time: datetime | None = None

    @property
    def hostname(self) -> str | None:
        return next((r.hostname for r in self.resources if r.kind == "node" and r.hostname), None)


_LINES = TypeAdapter(list[ObservationLine])


def parse_observation_lines(body: str) -> list[ObservationLine]:
    """The observation's ``body``: a JSON string holding a list of lines (400 if it is not)."""
    try:
        raw: Any = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ApiInputError(f"observation body is not JSON: {exc}") from exc
    try:
        return _LINES.validate_python(raw)
    except ValidationError as exc:
        raise ApiInputError(
            f"observation body must be a list of {{body, resources, time?}}: {_first(exc)}"
        ) from exc


def _first(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"]) or "body"
    return f"{where}: {error['msg']}"
