"""Event times: the per-second cache of RFC 3339 stamps never changes an answer."""

from __future__ import annotations

from datetime import datetime

from hypothesis import given
from hypothesis import strategies as st

from streams.normalize import times
from streams.normalize.times import rfc3339_ms

EPOCH_1971 = datetime(1971, 1, 1)  # noqa: DTZ001 (hypothesis wants naive bounds for naive datetimes)
SECONDS = st.datetimes(min_value=EPOCH_1971).map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%S"))
FRACTIONS = st.one_of(st.just(""), st.text("0123456789", min_size=0, max_size=9).map(lambda d: "." + d))
ZONES = st.sampled_from(["", "Z", "z", "+00:00", "+0000", "-05:30", "+02:00"])


@given(SECONDS, FRACTIONS, ZONES, st.sampled_from(["T", " ", "t"]))
def test_a_cached_second_gives_the_same_time_as_a_full_parse(second, fraction, zone, sep):
    stamp = second.replace("T", sep) + fraction + zone
    expected = times._rfc3339_parse(stamp)
    assert rfc3339_ms(stamp) == expected  # cold: parses and may remember the second
    assert rfc3339_ms(stamp) == expected  # warm: may come from the cache


def test_vector_millisecond_stamps_share_their_second():
    assert rfc3339_ms("2024-05-01T10:00:00.003Z") == 1714557600003
    assert rfc3339_ms("2024-05-01T10:00:00.5Z") == 1714557600500
    assert rfc3339_ms("2024-05-01T10:00:00Z") == 1714557600000
    assert rfc3339_ms("2024-05-01T10:00:00.12+02:00") == 1714550400120
