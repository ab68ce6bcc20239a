"""Event-time parsing: every timestamp shape the shippers send, to epoch milliseconds (UTC).

Zone-less times are UTC (Slurm's ``%FT%T``, Vector without a zone, syslog headers); see
docs/formats.md for why.
"""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime, timedelta
from functools import lru_cache

__all__ = [
    "DAY_MS",
    "MONTHS",
    "civil_ms",
    "date_ms",
    "epoch_number_ms",
    "now_ms",
    "rfc3339_ms",
    "time_value_ms",
    "valid_date",
    "year_at",
    "year_of",
]

DAY_MS = 86_400_000
MONTHS = {
    "Jan": 1,
    "Feb": 2,
    "Mar": 3,
    "Apr": 4,
    "May": 5,
    "Jun": 6,
    "Jul": 7,
    "Aug": 8,
    "Sep": 9,
    "Oct": 10,
    "Nov": 11,
    "Dec": 12,
}
_DAYS_IN_MONTH = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MS = timedelta(milliseconds=1)
#: An epoch number this large cannot be seconds (that would be past the year 5000): it is ms.
_EPOCH_MS_FLOOR = 1e11


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def epoch_number_ms(value: float) -> int | None:
    """Epoch seconds (Fluent Bit's default ``double``) or epoch ms, to ms; None if not a time."""
    if isinstance(value, bool) or not math.isfinite(value) or value < 0:
        return None
    return round(value) if value >= _EPOCH_MS_FLOOR else round(value * 1000)


#: Epoch ms of "YYYY-MM-DDTHH:MM:SS" prefixes already parsed: a stream's stamps share their second.
_SECONDS: dict[str, int] = {}
_SECONDS_MAX = 65_536
_MILLIS = {f"{ms:03d}": ms for ms in range(1000)}


def rfc3339_ms(text: str) -> int | None:
    """RFC 3339 / ISO 8601 date-time (any fraction digits, ``Z``, ``+0000``, ``,`` fraction).

    Zone-less means UTC. A bare date is not a timestamp: None. The common UTC shapes
    (``...SS``, ``...SSZ``, ``...SS.fffZ``, up to six fraction digits) reuse the parsed second.
    """
    base = _SECONDS.get(text[:19])
    if base is not None:
        rest = text[19:]
        if len(rest) == 5 and rest[4] == "Z" and rest[0] == ".":  # Vector's ".123Z": one lookup
            millis = _MILLIS.get(rest[1:4])
            if millis is not None:
                return base + millis
        if not rest or rest == "Z":
            return base
        digits = rest[1:-1] if rest[-1] == "Z" else rest[1:]
        if rest[0] == "." and 0 < len(digits) <= 6 and digits.isdigit() and digits.isascii():
            return base + int(digits[:3].ljust(3, "0"))
    stamp = _rfc3339_parse(text)
    if stamp is not None and text[19:20] in ("", "Z", "."):
        if len(_SECONDS) >= _SECONDS_MAX:
            _SECONDS.clear()
        _SECONDS[text[:19]] = _rfc3339_parse(text[:19])  # type: ignore[assignment]
    return stamp


def _rfc3339_parse(text: str) -> int | None:
    if len(text) < 19 or text[10] not in "Tt ":
        return None
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return (parsed - _EPOCH) // _ONE_MS


def time_value_ms(value: object) -> int | None:
    """A structured time field: epoch number, numeric string or RFC 3339 string."""
    if type(value) is float and 0 <= value < _EPOCH_MS_FLOOR:  # Fluent Bit's default: fast path
        return round(value * 1000)
    if isinstance(value, (int, float)):
        return epoch_number_ms(value)
    if not isinstance(value, str):
        return None
    if value[4:5] == "-":  # RFC 3339, the common string form: skip the numeric test
        return rfc3339_ms(value)
    if value[:1].isdecimal() and value.replace(".", "", 1).isdecimal():
        return epoch_number_ms(float(value))
    return rfc3339_ms(value)


def valid_date(year: int, month: int, day: int) -> bool:
    if not 1 <= month <= 12 or day < 1:
        return False
    if month == 2 and day == 29:
        return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return day <= _DAYS_IN_MONTH[month - 1]


def civil_ms(year: int, month: int, day: int, hour: int, minute: int, second: int) -> int:
    """UTC civil time to epoch ms, in integer arithmetic (faster than building a datetime)."""
    # Howard Hinnant's days_from_civil: the year starts in March so leap days fall last.
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    days = era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468
    return ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000


def year_of(ms: int) -> int:
    return (_EPOCH + timedelta(milliseconds=ms)).year


@lru_cache(maxsize=4096)
def date_ms(year: int, month: int, day: int) -> int:
    """Midnight UTC of a date; Feb 29 of a common year moves back to the latest leap year.

    Cached: a stream's lines come from a handful of days.
    """
    while not valid_date(year, month, day) and year > 1970:
        year -= 1
    return civil_ms(year, month, day, 0, 0, 0)


_year_span = [0, 0, 1970]  # [first ms, end ms, year] of the last year asked about


def year_at(ms: int) -> int:
    """``year_of`` with the answer cached for the rest of that year (the hot path asks often)."""
    span = _year_span
    if span[0] <= ms < span[1]:
        return span[2]
    year = year_of(ms)
    span[:] = [civil_ms(year, 1, 1, 0, 0, 0), civil_ms(year + 1, 1, 1, 0, 0, 0), year]
    return year
