"""Text from log lines, made safe to print on a terminal.

Node names, workload ids and symptoms in the CLI's tables come from log lines. A terminal runs
the escape sequences it is sent (``\\x1b]0;...``: set the title, ``\\x1b[2J``: clear the screen,
and worse on some emulators), a newline forges a row, a bidi override reorders what is shown.
"""

from __future__ import annotations

import re

__all__ = ["printable"]

#: C0 and C1 controls, DEL, bidi embeddings/overrides/isolates, line and paragraph separators,
#: lone surrogates.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")


def printable(text: str, limit: int | None = None) -> str:
    """``text`` with every unsafe character shown as its escape (``\\x1b``, ``\\u202e``), cut
    to ``limit`` characters (ending in ``…``) when given."""
    safe = _UNSAFE.sub(_escape, text)
    if limit is not None and len(safe) > limit:
        safe = safe[: max(limit - 1, 0)] + "…"
    return safe


def _escape(found: re.Match[str]) -> str:
    code = ord(found[0])
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"
