"""Event times are epoch milliseconds inside; RFC 3339 UTC strings in verdicts."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["iso"]


def iso(time_ms: int | None) -> str | None:
    if time_ms is None:
        return None
    moment = datetime.fromtimestamp(time_ms / 1000, tz=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
