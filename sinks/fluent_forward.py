"""Verdicts to a Fluentd / Fluent Bit ``forward`` input, for sites whose log pipeline is Fluent.

One event per verdict revision, with fluent-logger: tag ``<prefix>.<sub_domain>`` (so a Fluent
``<match faultstream.verdict.hardware>`` can route drains apart), time = the job's end, record =
the verdict as JSON-able data. fluent-logger keeps what it could not send in its buffer and sends
it with the next event; :meth:`VerdictForwarder.send` reports whether the endpoint has taken
everything, so the consumer commits only what arrived (docs/integrations.md).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fluent.sender import FluentSender

__all__ = ["VerdictForwarder"]

DEFAULT_TAG = "faultstream"
LABEL_PREFIX = "verdict"


def _event_time(verdict: dict[str, Any]) -> float:
    """The job's end (the verdict is about that moment), else its first revision's decision."""
    end = (verdict.get("job") or {}).get("end")
    if isinstance(end, str):
        try:
            return datetime.fromisoformat(end.replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass
    return 0.0


class VerdictForwarder:
    def __init__(self, host: str, port: int, tag: str = DEFAULT_TAG, timeout_s: float = 3.0) -> None:
        self.sender = FluentSender(tag, host=host, port=port, timeout=timeout_s, nanosecond_precision=True)

    def send(self, verdict: dict[str, Any]) -> bool:
        """Emit one verdict; True once the endpoint has taken it and everything buffered before."""
        label = f"{LABEL_PREFIX}.{verdict.get('sub_domain') or 'success'}"
        sent = self.sender.emit_with_time(label, _event_time(verdict), verdict)
        return bool(sent) and not self.sender.pendings

    def flush(self) -> bool:
        """Resend what is buffered (after an outage); True when nothing is left."""
        if self.sender.pendings:
            self.sender._send(b"")  # fluent-logger's own path: sends the buffer before the new bytes
        return not self.sender.pendings

    def close(self) -> None:
        self.sender.close()
