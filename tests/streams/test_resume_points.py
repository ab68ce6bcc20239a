"""The extractor never reads below its own last committed transaction (streams/resume_points.py).

After a broker freeze the group coordinator can answer a rejoining extractor with the offsets from
before its last transaction (its markers not yet applied): the batch was read and sent twice.
"""

from __future__ import annotations

from dataclasses import dataclass

from streams.resume_points import ResumePoints

SYSLOG0, SYSLOG1 = ("logs.syslog", 0), ("logs.syslog", 1)


@dataclass(frozen=True)
class Record:
    offset: int


def _after(**commits: dict[tuple[str, int], int]) -> ResumePoints:
    points: ResumePoints = ResumePoints()
    for offsets in commits.values():
        points.committed(offsets)
    return points


def test_a_fresh_extractor_drops_nothing_and_skips_nothing():
    points: ResumePoints = ResumePoints()
    fetched = {SYSLOG0: [Record(0), Record(1)]}
    assert points.unseen(fetched) == fetched
    assert points.skip_to(fetched) == {}


def test_a_partition_read_again_from_a_stale_group_offset_skips_to_the_last_commit():
    # the group answered with the offsets from before the second transaction (or with none)
    points = _after(first={SYSLOG0: 100, SYSLOG1: 7}, second={SYSLOG0: 250})
    fetched = {SYSLOG0: [Record(100), Record(101)], SYSLOG1: [Record(0), Record(1)]}
    assert points.unseen(fetched) == {}
    assert points.skip_to(fetched) == {SYSLOG0: 250, SYSLOG1: 7}


def test_a_partition_that_reached_the_commit_reads_on_without_a_seek():
    points = _after(first={SYSLOG0: 250})
    fetched = {SYSLOG0: [Record(249), Record(250), Record(251)]}
    assert points.unseen(fetched) == {SYSLOG0: [Record(250), Record(251)]}
    assert points.skip_to(fetched) == {}  # a seek back to 250 would read 250 and 251 twice


def test_commits_only_move_a_partition_forward():
    points = _after(first={SYSLOG0: 250}, stale={SYSLOG0: 100})
    assert points.own(SYSLOG0) == 250
    assert points.own(SYSLOG1) is None


def test_records_fetched_from_a_stale_offset_are_dropped_up_to_the_commit():
    points = _after(first={SYSLOG0: 3})
    fetched = {SYSLOG0: [Record(1), Record(2), Record(3), Record(4)], SYSLOG1: [Record(0)]}
    assert points.unseen(fetched) == {SYSLOG0: [Record(3), Record(4)], SYSLOG1: [Record(0)]}


def test_a_partition_read_entirely_below_the_commit_leaves_nothing_to_send():
    points = _after(first={SYSLOG0: 10})
    assert points.unseen({SYSLOG0: [Record(8), Record(9)]}) == {}
