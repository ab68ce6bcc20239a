"""Which offset-commit errors the correlator waits out instead of crashing (streams/commit_retry.py)."""

from __future__ import annotations

import pytest
from aiokafka.errors import (
    CommitFailedError,
    IllegalStateError,
    KafkaConnectionError,
    KafkaStorageError,
    NodeNotReadyError,
    NotCoordinatorForGroupError,
    RequestTimedOutError,
    UnknownError,
)

from streams.commit_retry import broker_cannot_commit_now

BROKER_TROUBLE = {
    "disk full, as aiokafka reports it": UnknownError(),
    "disk full, by name": KafkaStorageError(),
    "broker down": KafkaConnectionError(),
    "broker not ready": NodeNotReadyError(),
    "coordinator moved": NotCoordinatorForGroupError(),
    "broker frozen": RequestTimedOutError(),
}
GROUP_MOVED_ON = {
    "rebalanced": CommitFailedError(),
    "partition no longer assigned": IllegalStateError(),
    "a bug, not the broker": ValueError("not a Kafka error"),
}


@pytest.mark.parametrize("error", BROKER_TROUBLE.values(), ids=BROKER_TROUBLE.keys())
def test_a_commit_the_broker_cannot_take_now_is_tried_again_later(error):
    assert broker_cannot_commit_now(error)


@pytest.mark.parametrize("error", GROUP_MOVED_ON.values(), ids=GROUP_MOVED_ON.keys())
def test_a_commit_refused_because_the_group_moved_on_keeps_fausts_handling(error):
    assert not broker_cannot_commit_now(error)
