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

journald and ``dmesg -T`` print month (and weekday) names in the node's ``LC_TIME``: the German,
French, Spanish, Dutch and Italian abbreviations glibc prints are read too (``Dez 07 11:59:58 host
kernel: msg``, ``[So Dez  7 11:59:58 2024] msg``), and so are fractional seconds
(``journalctl -o short-precise``). After an RFC 3339 time the next token is the host only when the
time has a numeric offset (syslog daemons, journald) and a syslog tag (``kernel:``, ``slurmd[12]:``)
follows the token: ``kubectl logs --timestamps``, ``docker logs -t`` and CRI-O / containerd
(``<time> stderr F msg``) lines put the message right after a ``...Z`` time.

Anything else has no header: (None, None). Zone-less header times are taken as UTC.
"""

from __future__ import annotations

from streams.normalize.times import DAY_MS, MONTHS, civil_ms, date_ms, rfc3339_ms, valid_date, year_at

__all__ = ["Header", "parse_line_header"]

#: (wall-clock time in epoch ms, host); either may be None.
Header = tuple[int | None, str | None]
_NONE: Header = (None, None)
_WEEKDAYS = frozenset({"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"})
#: glibc's abbreviated month names (``%b``) in de_DE, fr_FR, es_ES, nl_NL and it_IT.
LOCAL_MONTHS: dict[str, int] = {
    name: number
    for names in (
        "Jan Feb Mär Apr Mai Jun Jul Aug Sep Okt Nov Dez",
        "janv. févr. mars avril mai juin juil. août sept. oct. nov. déc.",
        "ene feb mar abr may jun jul ago sep oct nov dic",
        "jan feb mrt apr mei jun jul aug sep okt nov dec",
        "gen feb mar apr mag giu lug ago set ott nov dic",
    )
    for number, name in enumerate(names.split(), start=1)
} | {"sept": 9}
_CRI_STREAMS = ("stdout F ", "stderr F ", "stdout P ", "stderr P ")


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
    space = line.find(" ", 3, 6)
    if space > 0 and line[:space] in LOCAL_MONTHS:  # journald in the node's locale: "Dez 07 ..."
        return _rfc3164(line[space + 1 :], LOCAL_MONTHS[line[:space]], ref_ms)
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
    if after[:9] in _CRI_STREAMS or stamp_text[-1:] in "Zz":
        # CRI-O / containerd ("<time> stderr F msg") and kubectl / docker --timestamps write Go's
        # RFC3339Nano in UTC ("...Z"); syslog daemons and journald write a numeric offset
        return stamp, None
    return stamp, _host_token(after, tag_needed=True)


def _host_token(after: str, tag_needed: bool = False) -> str | None:
    """The token after the time is the host, unless the sender left it out ("kernel: msg"). With
    ``tag_needed`` it is the host only when a syslog tag follows it (after an RFC 3339 time, the
    message itself may follow: ``kubectl logs --timestamps``)."""
    token, _, rest = after.partition(" ")
    if not token or token.endswith(":") or "[" in token:
        return None
    if tag_needed and not _is_tag(rest.partition(" ")[0]):
        return None
    return token


def _is_tag(token: str) -> bool:
    """``kernel:``, ``slurmd[1822]:``: a name (no colon in it) with an optional pid, then a colon."""
    name = token[:-1].partition("[")[0]
    return token.endswith(":") and bool(name) and ":" not in name


def _rfc3164(rest: str, month: int, ref_ms: int | None) -> Header:
    # rest = "dd hh:mm:ss host tag: msg"; dd is space-padded ("May  7") or, off-spec, not at all
    day_text, _, rest = rest.lstrip(" ").partition(" ")
    if not day_text.isdecimal() or rest[2:3] != ":" or rest[5:6] != ":":
        return _NONE
    clock, _, after = rest.partition(" ")
    seconds, _, fraction = clock[6:].partition(".")  # journalctl -o short-precise: "11:59:58.123456"
    digits = clock[0:2] + clock[3:5] + seconds
    if len(digits) != 6 or not digits.isdecimal() or not (fraction.isdecimal() or clock[8:] == ""):
        return _NONE
    clock_ms = int(digits[:2]) * 3_600_000 + int(digits[2:4]) * 60_000 + int(digits[4:]) * 1000
    clock_ms += int(fraction[:3].ljust(3, "0")) if fraction else 0
    stamp = None if ref_ms is None else _infer_year(month, int(day_text), clock_ms, ref_ms)
    return stamp, _host_token(after)


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
    # dmesg -T: "Fri Aug 30 11:43:09 2024", or in the node's locale "So Dez  7 11:59:58 2024"
    if len(inner) == 5 and (inner[0] in _WEEKDAYS or inner[1] in LOCAL_MONTHS):
        return _human_time(inner[1], inner[2], inner[3], inner[4]), None
    if len(inner) == 4 and inner[0] in MONTHS:  # fabric manager: "Feb 27 2025 15:10:02"
        return _human_time(inner[0], inner[1], inner[3], inner[2]), None
    return _NONE  # "[12345.678901]" and "[  +0.000041]" count from boot: not wall clock


def _human_time(month_text: str, day_text: str, clock: str, year_text: str) -> int | None:
    month = MONTHS.get(month_text) or LOCAL_MONTHS.get(month_text)
    hms = clock.split(":")
    if month is None or len(hms) != 3 or not all(p.isdecimal() for p in (day_text, year_text, *hms)):
        return None
    year, day = int(year_text), int(day_text)
    if not valid_date(year, month, day):
        return None
    return civil_ms(year, month, day, int(hms[0]), int(hms[1]), int(hms[2]))
