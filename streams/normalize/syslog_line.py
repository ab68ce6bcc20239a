"""The header of a raw log line: the wall-clock time and host it carries, if any.

Recognised (dispatch on the first character, so most lines cost one comparison):

* RFC 3164  ``Feb 14 05:03:41 host tag[pid]: msg``, with or without ``<PRI>``;
* RFC 5424  ``<34>1 2024-05-01T10:00:00.123Z host app pid msgid [sd] msg``;
* RFC 3339 headers (``journalctl -o short-iso``, rsyslog's precise template)
  ``2024-05-01T10:00:00+0000 host kernel: msg``;
* dmesg: ``[12345.678901] msg``, ``<6>[    2.962781] msg``, ``[  +0.000041] msg`` (seconds since
  boot or a delta: no wall clock), ``[Fri Aug 30 11:43:09 2024] msg`` (``dmesg -T``: wall clock),
  ``kern  :warn  : 2025-01-21T04:41:44,283575+00:00 msg`` (``dmesg -x --time-format iso``);
* ``[Feb 27 2025 15:10:02] [ERROR] ...`` (NVIDIA fabric manager log).

Anything else has no header: (None, None). Zone-less header times are taken as UTC.
"""

from __future__ import annotations

from streams.normalize.times import DAY_MS, MONTHS, civil_ms, date_ms, rfc3339_ms, valid_date, year_at

__all__ = ["Header", "parse_line_header"]

#: (wall-clock time in epoch ms, host); either may be None.
Header = tuple[int | None, str | None]
_NONE: Header = (None, None)
_WEEKDAYS = frozenset({"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"})


def parse_line_header(line: str, ref_ms: int | None) -> Header:
    """``ref_ms`` (the record's own time, else the caller's reference) supplies the year an RFC 3164
    header lacks; without one such a header gives no time (the clock is never a reference)."""
    first = line[:1]
    if first == "<":
        return _after_pri(line, ref_ms)
    if first == "[":
        return _bracketed(line)
    if first.isdigit():
        return _rfc3339_header(line)
    if line[:3] in MONTHS:
        return _rfc3164(line[4:], MONTHS[line[:3]], ref_ms)
    if line[6:7] == ":" and line[13:15] == ": ":
        # dmesg -x: "kern  :warn  : <time> msg"; the time is ISO only with --time-format iso
        return rfc3339_ms(line[15:].partition(" ")[0]), None
    return _NONE


def _after_pri(line: str, ref_ms: int | None) -> Header:
    end = line.find(">", 1, 5)
    if end < 0 or not line[1:end].isdigit():
        return _NONE
    rest = line[end + 1 :]
    if rest[:2] == "1 ":
        return _rfc5424(rest)
    if rest[:3] in MONTHS:
        return _rfc3164(rest[4:], MONTHS[rest[:3]], ref_ms)
    return parse_line_header(rest, ref_ms) if rest[:1] in "[0123456789" and rest else _NONE


def _rfc5424(rest: str) -> Header:
    # "1 TIMESTAMP HOSTNAME APP-NAME ..." where "-" is the nil value
    parts = rest.split(" ", 3)
    if len(parts) < 3:
        return _NONE
    stamp = None if parts[1] == "-" else rfc3339_ms(parts[1])
    return stamp, None if parts[2] == "-" else parts[2]


def _rfc3339_header(line: str) -> Header:
    stamp_text, _, after = line.partition(" ")
    stamp = rfc3339_ms(stamp_text)
    if stamp is None:
        return _NONE
    return stamp, _host_token(after)


def _host_token(after: str) -> str | None:
    """The token after the time is the host, unless the sender left it out ("kernel: msg")."""
    token = after.partition(" ")[0]
    if not token or token.endswith(":") or "[" in token:
        return None
    return token


def _rfc3164(rest: str, month: int, ref_ms: int | None) -> Header:
    # rest = "dd hh:mm:ss host tag: msg"; dd is space-padded ("May  7") or, off-spec, not at all
    day_text, _, rest = rest.lstrip(" ").partition(" ")
    if not day_text.isdecimal() or rest[2:3] != ":" or rest[5:6] != ":" or rest[8:9] not in (" ", ""):
        return _NONE
    digits = rest[0:2] + rest[3:5] + rest[6:8]
    if len(digits) != 6 or not digits.isdecimal():
        return _NONE
    clock_ms = int(digits[:2]) * 3_600_000 + int(digits[2:4]) * 60_000 + int(digits[4:]) * 1000
    stamp = None if ref_ms is None else _infer_year(month, int(day_text), clock_ms, ref_ms)
    return stamp, _host_token(rest[9:])


def _infer_year(month: int, day: int, clock_ms: int, ref_ms: int) -> int:
    """The year RFC 3164 leaves out: the reference's, or the one before when that is > 1 day ahead."""
    year = year_at(ref_ms)
    stamp = date_ms(year, month, day) + clock_ms
    if stamp > ref_ms + DAY_MS:
        stamp = date_ms(year - 1, month, day) + clock_ms
    return stamp


def _bracketed(line: str) -> Header:
    close = line.find("]", 1, 40)
    inner = line[1:close].split() if close > 0 else []
    if len(inner) == 5 and inner[0] in _WEEKDAYS:  # dmesg -T: "Fri Aug 30 11:43:09 2024"
        return _human_time(inner[1], inner[2], inner[3], inner[4]), None
    if len(inner) == 4 and inner[0] in MONTHS:  # fabric manager: "Feb 27 2025 15:10:02"
        return _human_time(inner[0], inner[1], inner[3], inner[2]), None
    return _NONE  # "[12345.678901]" and "[  +0.000041]" count from boot: not wall clock


def _human_time(month_text: str, day_text: str, clock: str, year_text: str) -> int | None:
    month = MONTHS.get(month_text)
    hms = clock.split(":")
    if month is None or len(hms) != 3 or not all(p.isdecimal() for p in (day_text, year_text, *hms)):
        return None
    year, day = int(year_text), int(day_text)
    if not valid_date(year, month, day):
        return None
    return civil_ms(year, month, day, int(hms[0]), int(hms[1]), int(hms[2]))
