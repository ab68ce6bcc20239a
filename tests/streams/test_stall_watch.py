"""The correlator restarts itself when faust leaves an assigned partition unfetched (stall_watch)."""

from __future__ import annotations

from streams.stall_watch import StallWatch

NODE, WORKLOAD = "node-events", "workload-events"
ASSIGNED = [(NODE, 0), (NODE, 1), (WORKLOAD, 0)]


def test_partitions_with_ticks_flowing_are_not_stalled():
    watch = StallWatch(limit_s=60)
    assert watch.stalled(ASSIGNED, now=0) == []
    for second in range(0, 300, 1):
        for topic, partition in ASSIGNED:
            watch.begin(topic, partition, now=second)
            watch.end(topic, now=second)
        assert watch.stalled(ASSIGNED, now=second + 0.5) == []


def test_one_partition_silent_past_the_limit_after_a_rebalance_is_stalled():
    watch = StallWatch(limit_s=60)
    assert not watch.settling(now=99)
    assert watch.stalled(ASSIGNED, now=100) == []  # ready from now on
    for second in range(100, 170):
        for topic, partition in [(NODE, 0), (WORKLOAD, 0)]:  # node-events[1] never comes back
            watch.begin(topic, partition, now=second)
            watch.end(topic, now=second)
    assert watch.stalled(ASSIGNED, now=159) == []
    assert watch.stalled(ASSIGNED, now=161) == [(NODE, 1)]


def test_silence_while_rebalancing_or_recovering_does_not_count():
    watch = StallWatch(limit_s=60)
    watch.stalled(ASSIGNED, now=0)
    assert not watch.settling(now=5)  # a long table recovery: still under way at 175 s
    assert not watch.settling(now=175)
    assert watch.stalled(ASSIGNED, now=500) == []
    assert watch.stalled(ASSIGNED, now=561) == [(NODE, 0), (NODE, 1), (WORKLOAD, 0)]


def test_an_agent_blocked_on_its_verdict_sink_is_back_pressure_not_a_stall():
    watch = StallWatch(limit_s=60)
    watch.stalled(ASSIGNED, now=0)
    watch.begin(WORKLOAD, 0, now=1)  # Redis is down: the sink retries inside this event
    for second in range(1, 300):
        for partition in (0, 1):
            watch.begin(NODE, partition, now=second)
            watch.end(NODE, now=second)
    assert watch.stalled(ASSIGNED, now=300) == []
    watch.end(WORKLOAD, now=300)  # Redis is back: silence counts from the end of that event
    assert watch.stalled(ASSIGNED, now=355) == []
    assert (WORKLOAD, 0) in watch.stalled(ASSIGNED, now=362)


def test_a_table_recovery_that_never_ends_is_a_stall_too():
    watch = StallWatch(limit_s=60)
    assert not watch.settling(now=10)
    assert not watch.settling(now=190)
    assert watch.settling(now=191)
