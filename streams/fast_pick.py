"""The compiled record picker (streams/normalize/_fastpick.c), or None: the pure Python path then
runs alone. (Here, not in streams/normalize/: the normalizers read no environment.)

``pick(raw, source, kafka_ms, USER_WRITTEN_SOURCES)`` answers exactly what
``common_json_fields(raw, source, None, k, k)`` answers (``k``: ``kafka_ms``, None when negative)
for the records it reads completely, and None ("decline") for every other one, which the caller
then gives to the Python path unchanged (tests/streams/test_fastpick.py holds it to that).
``pick_record(record, source, USER_WRITTEN_SOURCES)`` is ``pick`` of a Kafka ``ConsumerRecord``
that has no key, no headers and an int timestamp (what ``streams.prefilter._common`` reads in C),
None for any other. ``pick_line(line, line_no, log_sources, USER_WRITTEN_SOURCES)`` is the
backtest's: one recording line (streams/recording.py) of a log topic (``log_sources``: topic →
source) whose value is an object, with no key and a timestamp >= 0, read in C as
``parse_recording_line`` and ``common_fields`` read it: ``(text, host, time_ms, source, origin,
timestamp)``, or None for any other line. ``FAULTSTREAM_PURE_PICK=1`` forces the Python path
(A/B runs); without a C compiler at install time the module is missing and the Python path runs
too.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

__all__ = ["PURE_PICK_ENV", "PickLine", "fast_pick", "fast_pick_line", "fast_pick_record"]

PURE_PICK_ENV = "FAULTSTREAM_PURE_PICK"
Fields = tuple[str, str, int] | None
Pick = Callable[[bytes, str, int, frozenset[str]], Fields]
PickRecord = Callable[[Any, str, frozenset[str]], Fields]
LineFields = tuple[str, str, int, str, str, int] | None
PickLine = Callable[[bytes, int, dict[str, str], frozenset[str]], LineFields]


def _load() -> tuple[Pick, PickRecord, PickLine] | tuple[None, None, None]:
    if os.environ.get(PURE_PICK_ENV, "") not in ("", "0"):
        return None, None, None
    try:
        from streams.normalize._fastpick import pick, pick_line, pick_record
    except ImportError:  # built without a compiler (setup.py: optional): the pure path
        return None, None, None
    return pick, pick_record, pick_line


fast_pick, fast_pick_record, fast_pick_line = _load()
