"""The one exception the normalizers raise: its message is the dead-letter reason."""

from __future__ import annotations

__all__ = ["RecordError"]


class RecordError(ValueError):
    """A record that cannot be used. ``normalize_record`` turns it into a DeadLetter."""
