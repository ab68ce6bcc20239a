"""The correlator reads committed records only, without faust's exactly-once mode (issue 11)."""

from __future__ import annotations

import asyncio

from streams.correlator_app import _app
from streams.settings import Settings


def test_the_correlator_worker_consumer_reads_committed_records_while_its_outputs_stay_plain():
    async def build() -> tuple[str, str]:
        app = _app(Settings(namespace="read-committed-check."))
        consumer = app._new_consumer()._thread._create_worker_consumer(app.transport)  # not started
        try:
            return consumer._isolation_level, app.conf.processing_guarantee.value
        finally:
            consumer._closed = True  # never started: nothing to close, and no warning that it leaked

    isolation, guarantee = asyncio.run(build())
    assert isolation == "read_committed"  # an extractor batch aborted by a crash is never applied
    assert guarantee == "at_least_once"  # faust's own transactions stay off
