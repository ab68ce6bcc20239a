"""What delivering one extractor batch costs: produce, await acks, commit the input offsets (the
at-least-once path before issue 11) against one transaction with the offsets in it (now).

    python -m scripts.bench.bench_delivery [--rounds 100]

Both paths alternate in one process on the same topics, so a busy machine slows both alike. A
batch is the 17 records the extractor sends for a full batch on 4 partitions: a packed groups
record and a line-count record per partition, a watermark per partition on both topics, a job.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import statistics
import time
from collections.abc import Awaitable, Callable

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.structs import TopicPartition

from streams.settings import load_settings

PARTITIONS = 4


async def _send_batch(producer: AIOKafkaProducer, node_topic: str, workload_topic: str) -> None:
    sent = []
    for partition in range(PARTITIONS):
        sent.append(await producer.send(node_topic, b"g" * 2000, partition=partition))
        sent.append(await producer.send(node_topic, b"l" * 200, partition=partition))
        sent.append(await producer.send(node_topic, b"w", partition=partition))
        sent.append(await producer.send(workload_topic, b"w", partition=partition))
    sent.append(await producer.send(workload_topic, b"job", partition=0))
    await asyncio.gather(*sent)


async def _timed(step: Callable[[], Awaitable[None]], into: list[float]) -> None:
    started = time.perf_counter()
    await step()
    into.append(time.perf_counter() - started)


async def bench(rounds: int) -> None:
    options = load_settings().aiokafka_options()
    ns = f"benchdelivery{secrets.token_hex(3)}."
    ingest, node_topic, workload_topic = (ns + name for name in ("ingest", "node-events", "workload-events"))
    admin = AIOKafkaAdminClient(**options)
    await admin.start()
    await admin.create_topics([NewTopic(t, PARTITIONS, 1) for t in (ingest, node_topic, workload_topic)])
    group = ns + "extractor"
    consumer = AIOKafkaConsumer(ingest, group_id=group, enable_auto_commit=False, **options)
    plain = AIOKafkaProducer(acks="all", linger_ms=5, **options)
    transactional = AIOKafkaProducer(acks="all", linger_ms=5, transactional_id=ns + "tx", **options)
    for client in (consumer, plain, transactional):
        await client.start()
    tp = TopicPartition(ingest, 0)
    committed: list[float] = []
    in_transaction: list[float] = []
    try:
        for offset in range(1, rounds + 1):

            async def commit_after_acks(offset: int = offset) -> None:
                await _send_batch(plain, node_topic, workload_topic)
                await consumer.commit({tp: offset})

            async def one_transaction(offset: int = offset) -> None:
                async with transactional.transaction():
                    await _send_batch(transactional, node_topic, workload_topic)
                    await transactional.send_offsets_to_transaction({tp: offset}, group)

            await _timed(commit_after_acks, committed)
            await _timed(one_transaction, in_transaction)
    finally:
        for client in (consumer, plain, transactional):
            await client.stop()
        await admin.delete_topics([ingest, node_topic, workload_topic])
        await admin.close()
    for label, seconds in (("produce, acks, commit", committed), ("one transaction", in_transaction)):
        ordered = sorted(seconds)
        p90 = ordered[int(0.9 * len(ordered))]
        print(f"{label:24s} median {statistics.median(ordered) * 1000:6.1f} ms   p90 {p90 * 1000:6.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=100)
    asyncio.run(bench(parser.parse_args().rounds))


if __name__ == "__main__":
    main()
