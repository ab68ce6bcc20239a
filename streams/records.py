"""Record models: what arrives on the topics, and what the normalizers make of it.

At the edges (a recording line, a topic record) pydantic models are the contract; inside the
engine the hot path uses the plain dataclasses :class:`LogLine` and :class:`JobEvent`, defined
with the engine (``correlator.records``) and re-exported here for the adapters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from correlator.records import JobEvent, LogLine

__all__ = [
    "DEFAULT_TOPICS",
    "DeadLetter",
    "JobEvent",
    "LogLine",
    "TopicRecord",
]

#: Topic name → the source its log lines carry. ``events.scheduler`` holds scheduler events.
DEFAULT_TOPICS = {
    "logs.syslog": "syslog",
    "logs.dmesg": "dmesg",
    "logs.applog": "applog",
    "events.scheduler": "scheduler",
}


class TopicRecord(BaseModel):
    """One Kafka record, as a recording file holds it (one JSON object per line).

    ``value`` is exactly what the record's value would be on the topic: a JSON object, or a
    string for shippers that send raw lines. ``timestamp`` is the Kafka record timestamp in
    epoch milliseconds.
    """

    model_config = ConfigDict(extra="forbid")

    topic: str
    value: dict[str, Any] | str
    key: str | None = None
    timestamp: int | None = None
    partition: int | None = None
    offset: int | None = None


@dataclass(slots=True)
class DeadLetter:
    """A record that could not be used, kept with its reason (never dropped silently)."""

    reason: str
    topic: str
    origin: str
    value: Any

    def to_dict(self) -> dict[str, Any]:
        return {"reason": self.reason, "topic": self.topic, "origin": self.origin, "value": self.value}
