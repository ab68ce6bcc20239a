"""The correlator reads only committed records of the internal topics.

The extractor writes each batch's outputs in one Kafka transaction with the batch's input
offsets (docs/architecture.md, "Delivery guarantees"): a batch it crashed in the middle of stays
on the topic, aborted, and the restarted extractor writes it again. A reader that saw both would
count the batch twice, so every reader of node-events and workload-events reads committed only.

faust-streaming 0.15.3 reads committed only in its own exactly-once mode, which would also make
every correlator output transactional; the correlator needs just the reading side, so
:class:`ReadCommittedApp` gives its worker consumer that isolation level and nothing else.
"""

from __future__ import annotations

from typing import Any

import faust
from faust.transport.drivers.aiokafka import AIOKafkaConsumerThread, Consumer

from streams.commit_offsets import committable

__all__ = ["READ_COMMITTED", "ReadCommittedApp"]

#: aiokafka's ``isolation_level`` for every reader of the extractor's topics.
READ_COMMITTED = "read_committed"


class _ReadCommittedThread(AIOKafkaConsumerThread):
    def _create_worker_consumer(self, transport: Any) -> Any:
        consumer = super()._create_worker_consumer(transport)
        # faust passes "read_uncommitted" outside exactly-once mode; the consumer reads this
        # attribute when it starts (aiokafka 0.14 hands it to its fetcher in start())
        consumer._isolation_level = READ_COMMITTED
        return consumer


class _ReadCommittedConsumer(Consumer):
    def _new_consumer_thread(self) -> AIOKafkaConsumerThread:
        return _ReadCommittedThread(self, loop=self.loop, beacon=self.beacon)

    def _new_offset(self, tp: Any) -> int | None:
        # faust's own stops at the offset its gap bookkeeping adds twice (streams/commit_offsets.py)
        return committable(self._acked[tp], self._acked_index[tp], self._gap[tp], self._committed_offset[tp])


class ReadCommittedApp(faust.App):
    """A faust app whose worker consumer reads committed records only, and commits past the
    extractor's transaction markers (streams/commit_offsets.py)."""

    def _new_transport(self) -> Any:
        transport = super()._new_transport()
        transport.Consumer = _ReadCommittedConsumer
        return transport
