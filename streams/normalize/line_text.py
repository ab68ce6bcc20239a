"""Envelope bytes a shipper leaves in a line's text that no program printed.

``clean_text`` runs before a record's text is split into lines and its header read, so the rules
see the same words whichever way the line travelled (tests/corpus/test_envelopes.py):

* NUL bytes: the zero-filled tail of a log file after a crash, or a fixed-size kmsg buffer;
* the byte-order mark RFC 5424 puts before a UTF-8 ``MSG``;
* terminal colour and cursor sequences (ANSI CSI, ``ESC [ ... m``), raw or as rsyslog's ``#033``
  escape; rsyslog's ``#015`` (a carriage return) becomes ``\\r`` again, so a CRLF line loses it;
* a Docker ``json-file`` line shipped as text (a file source tailing
  ``/var/lib/docker/containers/*/*-json.log`` without a JSON parser): its ``log`` value is the line.
"""

from __future__ import annotations

import re

import orjson

__all__ = ["clean_text", "needs_cleaning"]

_CSI = re.compile(r"\x1b\[[0-9;:?]{0,32}[A-Za-z]")
_DOCKER_STREAMS = frozenset({"stdout", "stderr"})


def needs_cleaning(text: str) -> bool:
    """Whether ``clean_text`` may change ``text`` (the normalizer's fast paths leave such text to
    the general path)."""
    return "\x00" in text or "\x1b" in text or "\ufeff" in text or "#0" in text or text[:7] == '{"log":'


def clean_text(text: str) -> str:
    if text[:7] == '{"log":':
        text = _docker_log(text)
    if "\x00" in text:
        text = text.replace("\x00", "")
    if "\ufeff" in text:
        text = text.replace("\ufeff", "")
    if "#0" in text:
        text = text.replace("#033", "\x1b").replace("#015", "\r")
    if "\x1b" in text:
        text = _CSI.sub("", text)
    return text


def _docker_log(text: str) -> str:
    """The ``log`` of a Docker json-file line (``{"log": "...\\n", "stream": "stderr", "time":
    "..."}``); any other text is returned as it is."""
    try:
        record = orjson.loads(text)
    except orjson.JSONDecodeError:
        return text
    if type(record) is dict and type(record.get("log")) is str and record.get("stream") in _DOCKER_STREAMS:
        return record["log"]
    return text
