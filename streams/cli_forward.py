"""``faultstream forward --to HOST:PORT``: every verdict revision to a Fluentd / Fluent Bit
``forward`` input (sinks/fluent_forward.py).

Its own consumer group (``<namespace>faultstream-forward``) on ``faultstream.verdicts``; offsets
are committed only once the endpoint has taken every verdict before them (at least once: an
endpoint that was away gets what it missed, and a crash between send and commit sends a
revision twice, which a Fluent pipeline stores as the same record twice).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from pathlib import Path

__all__ = ["add_parser"]

log = logging.getLogger("faultstream.forward")
RETRY_S = 1.0


def _endpoint(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host, int(port)


def add_parser(commands: argparse._SubParsersAction) -> None:
    forward = commands.add_parser("forward", help="send verdicts to a Fluentd / Fluent Bit forward input")
    forward.add_argument("--to", type=_endpoint, required=True, metavar="HOST:PORT")
    forward.add_argument("--tag", default="faultstream", help="tag prefix (events: TAG.verdict.<domain>)")
    forward.add_argument(
        "--from-beginning", action="store_true", help="a new group starts at the oldest verdict"
    )
    forward.add_argument("--config", type=Path, default=None, help="YAML config file (docs/operations.md)")
    forward.add_argument("--log-level", default="INFO")
    forward.set_defaults(handler=_forward)


def _forward(args: argparse.Namespace) -> int:
    from sinks.fluent_forward import VerdictForwarder
    from streams.settings import load_settings

    logging.basicConfig(
        level=args.log_level.upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    host, port = args.to
    forwarder = VerdictForwarder(host, port, args.tag)
    try:
        return asyncio.run(_consume(load_settings(args.config), forwarder, args.from_beginning))
    finally:
        forwarder.close()


async def _deliver(forwarder, record, stop: asyncio.Event) -> bool:
    """Send one verdict and wait until the endpoint has it (fluent-logger keeps it buffered
    meanwhile, so nothing is sent twice and its buffer never overflows)."""
    import orjson

    try:
        verdict = orjson.loads(record.value)
    except orjson.JSONDecodeError:
        log.error("not a verdict at %s:%d:%d; skipped", record.topic, record.partition, record.offset)
        return True
    delivered = forwarder.send(verdict)
    while not delivered and not stop.is_set():
        log.warning("forward endpoint unavailable; retrying in %.0f s", RETRY_S)
        await asyncio.sleep(RETRY_S)
        delivered = forwarder.flush()
    return delivered


async def _consume(settings, forwarder, from_beginning: bool) -> int:
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(
        settings.topic("faultstream.verdicts"),
        group_id=settings.topic("faultstream-forward"),
        enable_auto_commit=False,
        auto_offset_reset="earliest" if from_beginning else "latest",
        **settings.aiokafka_options(),
    )
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(signum, stop.set)
    await consumer.start()
    log.info("forwarding %s to the Fluent forward input", settings.topic("faultstream.verdicts"))
    try:
        while not stop.is_set():
            batch = await consumer.getmany(timeout_ms=500, max_records=500)
            records = [record for part in batch.values() for record in part]
            delivered = all([await _deliver(forwarder, record, stop) for record in records])
            if records and delivered:
                await consumer.commit()
    finally:
        with contextlib.suppress(Exception):
            await consumer.stop()
    return 0
