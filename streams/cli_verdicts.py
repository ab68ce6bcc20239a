"""``faultstream verdicts``: the latest verdicts from Redis, then (``--follow``) new ones;
``faultstream verdicts rebuild``: Redis filled again from the verdicts topic (streams/redis_rebuild.py)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from contextlib import aclosing
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

if TYPE_CHECKING:
    from correlator.verdict import Verdict

__all__ = ["DEFAULT_REDIS_URL", "add_parser", "run_rebuild", "run_verdicts"]

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("verdicts", help="show the latest verdicts stored in Redis")
    parser.add_argument(
        "--redis-url", default=None, help=f"Redis to read (default: $REDIS_URL, else {DEFAULT_REDIS_URL})"
    )
    parser.add_argument(
        "--prefix",
        default=None,
        help="key prefix the sink wrote with (default: FAULTSTREAM_REDIS_PREFIX or faultstream:)",
    )
    parser.add_argument(
        "--limit", type=int, default=20, help="how many of the latest verdicts to print first (default 20)"
    )
    parser.add_argument("--json", action="store_true", help="one JSON verdict per line instead of a table")
    parser.add_argument(
        "--follow", "-f", action="store_true", help="then keep printing new verdicts until Ctrl-C"
    )
    parser.set_defaults(handler=run_verdicts)
    actions = parser.add_subparsers(dest="action", metavar="{rebuild}")
    rebuild = actions.add_parser(
        "rebuild",
        help="write the newest revision of every verdict on the verdicts topic to Redis (after data loss)",
        description="Reads the verdicts topic from its beginning and writes each workload's newest "
        "revision to Redis; revisions Redis already has (or has newer) are left alone, so it is safe "
        "while the pipeline runs. Kafka, Redis and the prefix come from the settings, as for the workers.",
    )
    rebuild.add_argument("--config", type=Path, default=None, help="YAML config file (docs/operations.md)")
    rebuild.set_defaults(handler=run_rebuild)


def run_verdicts(args: argparse.Namespace) -> int:
    from sinks.redis_client import RedisError, check_url
    from sinks.redis_keys import redacted
    from streams.cli import UsageError
    from streams.settings import load_settings

    site = load_settings()  # REDIS_URL and FAULTSTREAM_REDIS_PREFIX, as the workers read them
    url = args.redis_url or site.redis_url
    args.prefix = args.prefix or site.redis_prefix
    if args.limit < 0:
        raise UsageError(f"--limit must be 0 or more, got {args.limit}")
    try:
        check_url(url)
    except ValueError as exc:
        raise UsageError(f"not a Redis URL: {redacted(url)}: {exc}") from exc
    try:
        asyncio.run(_show(url, args))
    except (RedisError, OSError) as exc:
        raise UsageError(f"cannot reach Redis at {redacted(url)}: {exc}") from exc
    return 0


def run_rebuild(args: argparse.Namespace) -> int:
    from aiokafka.errors import KafkaError

    from sinks.base import SinkError
    from sinks.redis_client import RedisError
    from sinks.redis_keys import redacted
    from sinks.redis_rebuild import RebuildLost
    from streams.cli import UsageError
    from streams.cli_pipeline import _switch_ports
    from streams.redis_rebuild import RebuildBusy, rebuild
    from streams.settings import load_settings

    settings = load_settings(args.config)
    try:
        counts = asyncio.run(rebuild(settings, _switch_ports(settings.fleet_switch_ports)))
    except RebuildBusy as exc:
        raise UsageError(
            f"{exc} (a correlator noticed the loss?); it holds {settings.redis_prefix}sink:rebuilding"
        ) from exc
    except (RedisError, SinkError, RebuildLost, KafkaError, OSError) as exc:
        raise UsageError(f"rebuild of Redis at {redacted(settings.redis_url)} failed: {exc}") from exc
    print(
        f"rebuilt {settings.redis_prefix}* from {settings.topic('faultstream.verdicts')}: {counts}",
        file=sys.stderr,
    )
    return 0


async def _show(url: str, args: argparse.Namespace) -> None:
    from sinks.redis_reader import follow_verdicts, recent_verdicts, stream_position

    # Pin the stream position before reading the latest ones, so nothing written in between
    # is missed by --follow; a verdict seen in both is printed once.
    position = await stream_position(url, args.prefix) if args.follow else "$"
    latest = await recent_verdicts(url, args.prefix, args.limit)
    _print_latest(latest, args.json)
    if not args.follow:
        return
    seen = {_identity(v) for v in latest}
    async with aclosing(follow_verdicts(url, args.prefix, position)) as new_verdicts:
        async for verdict in new_verdicts:
            if _identity(verdict) not in seen:
                _print_one(verdict, args.json)


def _print_latest(verdicts: list[dict], as_json: bool) -> None:
    from streams.verdict_table import verdict_table

    if as_json:
        for verdict in verdicts:
            _print_one(verdict, as_json=True)
    else:
        print(verdict_table([_model(v) for v in verdicts]), flush=True)


def _print_one(verdict: dict, as_json: bool) -> None:
    from streams.verdict_table import verdict_table

    if as_json:
        sys.stdout.write(orjson.dumps(verdict).decode() + "\n")
    else:
        # The header came with the latest verdicts; a followed verdict is just one more row.
        sys.stdout.write(verdict_table([_model(verdict)]).split("\n", 1)[1] + "\n")
    sys.stdout.flush()


def _model(verdict: dict) -> Verdict:
    from pydantic import ValidationError

    from correlator.verdict import Verdict
    from streams.cli import UsageError

    try:
        return Verdict.model_validate(verdict)
    except ValidationError as exc:
        raise UsageError(
            f"verdict {verdict.get('workload_id')!r} in Redis does not match this "
            f"version's schema ({exc.error_count()} errors); try --json"
        ) from exc


def _identity(verdict: dict) -> tuple[str, int]:
    return str(verdict.get("workload_id")), int(verdict.get("revision") or 0)
