"""Where Fluent Bit and Vector put the text, host and time of a JSON log record.

Fluent Bit (``out_kafka``, ``format json``): text under ``log`` (tail), ``message`` (CRI parser,
syslog, systemd with ``lowercase on``), ``MESSAGE`` (systemd) or ``msg`` (kmsg); host under
``host``/``hostname`` (syslog input, a ``record_modifier`` filter), ``_HOSTNAME``/``HOSTNAME``/
``_hostname`` (systemd, with ``strip_underscores`` / ``lowercase``) or ``kubernetes.host``;
time under ``@timestamp`` (``timestamp_format double`` or ``iso8601``).

Vector (``kafka`` sink, ``json`` codec) always sets ``source_type``: text under ``message``,
host under ``hostname`` (syslog: the sender's name) then ``host``, time under ``timestamp``
(RFC 3339).
"""

from __future__ import annotations

from typing import Any

from streams.normalize.errors import RecordError
from streams.normalize.times import time_value_ms

__all__ = ["record_host", "record_text", "record_time_ms"]

TEXT_KEYS = ("log", "message", "MESSAGE", "msg")
FLUENTBIT_HOST_KEYS = ("host", "hostname", "_HOSTNAME", "HOSTNAME", "_hostname")
VECTOR_HOST_KEYS = ("hostname", "host", "_HOSTNAME")
#: The first one present is the record's time; ``time`` is the CRI parser's and generic senders'.
TIME_KEYS = ("@timestamp", "timestamp", "time")


def record_text(record: dict[str, Any]) -> str:
    for key in TEXT_KEYS:
        text = record.get(key)
        if text is None:
            continue
        if type(text) is list:  # journalctl -o json: a MESSAGE that is not printable UTF-8 is bytes
            text = _journal_bytes(text)
        if not isinstance(text, str):
            raise RecordError(f"log record field {key!r} is a {type(text).__name__}, not a string")
        return text
    raise RecordError("log record without text: no log/message/MESSAGE/msg field")


def _journal_bytes(value: list) -> str | list:
    """``journalctl -o json`` writes a field holding control characters (colour, a tab, a CR) or
    invalid UTF-8 as an array of byte values; anything else stays a list (and is an error)."""
    if not all(type(b) is int and 0 <= b <= 255 for b in value):
        return value
    return bytes(value).decode("utf-8", errors="replace")


def record_host(record: dict[str, Any]) -> str | None:
    keys = VECTOR_HOST_KEYS if "source_type" in record else FLUENTBIT_HOST_KEYS
    for key in keys:
        host = record.get(key)
        if isinstance(host, str) and host:
            return host
    kubernetes = record.get("kubernetes")
    if isinstance(kubernetes, dict):
        host = kubernetes.get("host")
        if isinstance(host, str) and host:
            return host
    return None


def record_time_ms(record: dict[str, Any]) -> int | None:
    """The record's structured time; a present but unreadable one is an error, not a fallback."""
    for key in TIME_KEYS:
        value = record.get(key)
        if value is None:
            continue
        stamp = time_value_ms(value)
        if stamp is None:
            raise RecordError(f"log record field {key!r} is not a time: {value!r:.80}")
        return stamp
    return None
