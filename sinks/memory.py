"""``ListSink``: an in-memory sink for pure tests and debugging."""

from __future__ import annotations

__all__ = ["ListSink"]


class ListSink:
    """Keeps added verdicts in ``added``; ``flush()`` moves them to ``flushed``."""

    def __init__(self) -> None:
        self.added: list[dict] = []
        self.flushed: list[dict] = []
        self.closed = False

    async def add(self, verdict: dict) -> None:
        self.added.append(verdict)

    async def flush(self) -> None:
        self.flushed.extend(self.added)
        self.added.clear()

    async def close(self) -> None:
        self.closed = True
