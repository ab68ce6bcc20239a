"""``faultstream verdicts``: the latest verdicts from Redis, then (``--follow``) new ones."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from contextlib import aclosing
from typing import TYPE_CHECKING

import orjson

if TYPE_CHECKING:
    from correlator.verdict import Verdict

__all__ = ["DEFAULT_REDIS_URL", "add_parser", "run_verdicts"]

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


def run_verdicts(args: argparse.Namespace) -> int:
    from sinks.redis_client import RedisError, check_url
    from sinks.redis_keys import redacted
    from streams.cli import UsageError

    url = args.redis_url or os.environ.get("REDIS_URL") or DEFAULT_REDIS_URL
    args.prefix = args.prefix or os.environ.get("FAULTSTREAM_REDIS_PREFIX") or "faultstream:"
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
