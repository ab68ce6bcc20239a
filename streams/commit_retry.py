"""An offset commit the broker cannot take right now is tried again, not a crash of the worker.

faust-streaming 0.15.3 crashes its consumer on any exception from an offset commit
(``AIOKafkaConsumerThread._commit``). A broker whose log directory has just filled up answers the
commit with KAFKA_STORAGE_ERROR (aiokafka raises it as ``UnknownError``) before it shuts itself
down; the crash stops the faust worker, whose shutdown then waits forever for agents blocked on
the dead broker: the correlator neither works nor exits, even after the broker is back (seen in
tests/pipeline/test_broker_faults.py). An offset that is not committed now is committed by the
next commit (faust's commit timer tries again every second with the newest offsets), and a worker
restarted meanwhile replays from the last commit, which the tables' offset markers make harmless
(docs/architecture.md, delivery guarantees). Errors that mean the group moved on (a rebalance)
keep faust's own handling.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from time import monotonic
from typing import Any

from aiokafka.errors import CommitFailedError, IllegalStateError, KafkaError, UnknownError
from aiokafka.structs import OffsetAndMetadata
from faust.transport.drivers.aiokafka import AIOKafkaConsumerThread, ensure_aiokafka_TP

__all__ = ["broker_cannot_commit_now", "retry_commits_the_broker_refuses"]

log = logging.getLogger("faultstream.correlator")

_faust_commit = AIOKafkaConsumerThread._commit


def broker_cannot_commit_now(exc: BaseException) -> bool:
    """A broker that is down, restarting, moving its group coordinator or failing its disk; not a
    group that rebalanced (those commits must fail the faust way)."""
    if isinstance(exc, (CommitFailedError, IllegalStateError)):
        return False
    return isinstance(exc, KafkaError) and (exc.retriable or isinstance(exc, UnknownError))


async def _commit(self: AIOKafkaConsumerThread, offsets: Mapping[Any, int]) -> bool:
    mine = {tp: offset for tp, offset in offsets.items() if tp in self.assignment()}
    try:
        await self._ensure_consumer().commit(
            {ensure_aiokafka_TP(tp): OffsetAndMetadata(offset, "") for tp, offset in mine.items()}
        )
    except Exception as exc:
        if not broker_cannot_commit_now(exc):
            return await _faust_commit(self, offsets)  # its handling: a rebalance, or a crash
        log.warning("offset commit refused by the broker (%r); the next commit tries again", exc)
        return False
    self.tp_last_committed_at.update({tp: monotonic() for tp in mine})  # faust's commit-lag check
    return True


def retry_commits_the_broker_refuses() -> None:
    """Install the commit above for every faust consumer of this process (idempotent)."""
    AIOKafkaConsumerThread._commit = _commit  # type: ignore[method-assign]
