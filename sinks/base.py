"""The sink contract (quix-streams' shape): ``add()`` buffers, ``flush()`` delivers.

A caller commits its Kafka offsets only after every sink's ``flush()`` returned, so a sink that
empties its buffer only once the data is safely written gives at-least-once delivery for free.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["Sink", "SinkError"]


class SinkError(Exception):
    """A sink could not take or deliver verdicts; the caller must not commit its offsets."""


@runtime_checkable
class Sink(Protocol):
    async def add(self, verdict: dict) -> None:
        """Buffer one verdict (a ``Verdict.model_dump(mode="json")`` dict); no I/O required."""

    async def flush(self) -> None:
        """Deliver everything added so far, or raise :class:`SinkError` and keep it buffered."""

    async def close(self) -> None:
        """Release connections. Does not flush: unflushed verdicts were never committed."""
