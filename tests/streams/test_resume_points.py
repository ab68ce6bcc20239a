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


def test_a_fresh_extractor_resumes_where_the_group_says():
    points: ResumePoints = ResumePoints()
    assert points.seek_to(SYSLOG0, 40) is None
    assert points.seek_to(SYSLOG0, None) is None


def test_a_group_offset_from_before_the_last_commit_is_passed_over_for_the_commit():
    points = _after(first={SYSLOG0: 100, SYSLOG1: 7}, second={SYSLOG0: 250})
    assert points.seek_to(SYSLOG0, 100) == 250  # the second transaction's markers not yet applied
    assert points.seek_to(SYSLOG1, None) == 7  # the group knows no offset yet: ours stands


def test_a_group_offset_at_or_past_the_commit_stands():
    points = _after(first={SYSLOG0: 250})
    assert points.seek_to(SYSLOG0, 250) is None
    # the partition was another extractor's meanwhile, which read on: its offset is the right one
    assert points.seek_to(SYSLOG0, 900) is None


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
