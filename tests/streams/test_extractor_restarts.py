"""The extractor starts again in place when aiokafka gives up on a lost broker (issue 11).

A CI run lost ten verdicts this way: the broker went down on a full disk while the extractor's
producer looked up its transaction coordinator, aiokafka raised a plain KafkaError from its
sender, and the extractor process exited for good. These stories drive the restart loop with
stand-in workers; the live broker-fault tests (tests/pipeline/test_broker_faults.py) run the real one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from aiokafka.errors import KafkaConnectionError, KafkaError, TopicAuthorizationFailedError

from streams.extract_worker import ExtractorStats, run_until_stopped


class _Worker:
    """Runs until stopped, or fails at once with ``failure``."""

    def __init__(self, failure: BaseException | None = None) -> None:
        self.failure = failure
        self.stats = ExtractorStats()
        self.stopped = asyncio.Event()

    async def run(self) -> None:
        if self.failure is not None:
            raise self.failure
        await self.stopped.wait()

    def stop(self) -> None:
        self.stopped.set()


def _workers(*failures: BaseException | None) -> tuple[list[_Worker], Callable[[], _Worker]]:
    made: list[_Worker] = []
    plan = list(failures)

    def make() -> _Worker:
        made.append(_Worker(plan.pop(0) if plan else None))
        return made[-1]

    return made, make


async def _stop_when(made: list[_Worker], count: int, stopping: asyncio.Event) -> None:
    while len(made) < count:
        await asyncio.sleep(0.001)
    stopping.set()


def test_a_broker_lost_mid_transaction_starts_a_fresh_worker_instead_of_exiting():
    async def story() -> list[_Worker]:
        made, make = _workers(KafkaError("KafkaConnectionError('Connection at 127.0.0.1:9092 closed')"))
        stopping = asyncio.Event()
        stopper = asyncio.ensure_future(_stop_when(made, 2, stopping))
        stats = await run_until_stopped(make, stopping, backoff_s=(0.01, 0.05))
        await stopper
        assert stats is made[1].stats
        return made

    made = asyncio.run(story())
    assert len(made) == 2
    assert made[1].stopped.is_set()  # the fresh worker ran until told to stop


def test_restarts_back_off_doubling_up_to_the_cap():
    async def story() -> float:
        lost = KafkaConnectionError("Connect call failed")
        made, make = _workers(lost, lost, lost, lost)
        stopping = asyncio.Event()
        stopper = asyncio.ensure_future(_stop_when(made, 5, stopping))
        started = asyncio.get_running_loop().time()
        await run_until_stopped(make, stopping, backoff_s=(0.05, 0.1))
        await stopper
        return asyncio.get_running_loop().time() - started

    # waits 0.05, 0.1, 0.1, 0.1 between the five workers: at least 0.35 s, far below unbounded doubling
    assert 0.35 <= asyncio.run(story()) < 2.0


def test_an_authorization_failure_is_not_retried_the_process_exits_with_it():
    async def story() -> None:
        _, make = _workers(TopicAuthorizationFailedError())
        await run_until_stopped(make, asyncio.Event(), backoff_s=(0.01, 0.05))

    with pytest.raises(TopicAuthorizationFailedError):
        asyncio.run(story())


def test_a_stop_during_the_backoff_ends_the_loop_without_another_worker():
    async def story() -> list[_Worker]:
        made, make = _workers(KafkaConnectionError("Connect call failed"))
        stopping = asyncio.Event()
        asyncio.get_running_loop().call_later(0.05, stopping.set)
        await run_until_stopped(make, stopping, backoff_s=(30.0, 30.0))
        return made

    made = asyncio.run(asyncio.wait_for(story(), 5))
    assert len(made) == 1
