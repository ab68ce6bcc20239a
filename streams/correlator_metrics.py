"""The correlator's metrics that need no change inside its agents: rebalances and consumer lag.

Attached to the faust app by the CLI after ``build_correlator_app``; the counters that must sit
where things happen (verdicts emitted, dead letters, stall restarts) are one-line calls into
:mod:`streams.metrics` in streams/correlator_app.py.
"""

from __future__ import annotations

from typing import Any

import faust

from streams import metrics
from streams.lag_probe import LagProbe
from streams.settings import Settings
from streams.topics import Topics

__all__ = ["instrument_correlator"]


def instrument_correlator(app: faust.App, settings: Settings) -> None:
    topics = Topics.from_settings(settings)
    inputs = {topics.node_events, topics.workload_events}  # not the changelogs: no group offsets

    @app.on_partitions_assigned.connect
    async def _count_rebalance(sender: Any, assigned: Any, **kwargs: Any) -> None:
        metrics.count_rebalance("correlator")

    def mine() -> list[tuple[str, int]]:
        return [(tp.topic, tp.partition) for tp in app.consumer.assignment() if tp.topic in inputs]

    probe = LagProbe(settings.aiokafka_options(), app.conf.id, mine)

    @app.task
    async def consumer_lag() -> None:
        await probe.run()  # cancelled at shutdown; run() closes its clients on the way out
