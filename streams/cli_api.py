"""``faultstream api``: the NVIDIA Attribution v2 compatible API and the read-only dashboard."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
from pathlib import Path

__all__ = ["add_parser", "run_api"]

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("api", help="serve the Attribution v2 API and the dashboard (docs/api.md)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="API port (default 8000)")
    parser.add_argument("--web-port", type=int, default=8080, help="dashboard port (default 8080)")
    parser.add_argument("--redis-url", default=None, help=f"default: $REDIS_URL, else {DEFAULT_REDIS_URL}")
    parser.add_argument(
        "--prefix", default=None, help="Redis key prefix (default: FAULTSTREAM_REDIS_PREFIX or faultstream:)"
    )
    parser.add_argument("--rules", type=Path, default=None, help="rules directory (default: bundled)")
    parser.set_defaults(handler=run_api)


def run_api(args: argparse.Namespace) -> int:
    from sinks.redis_client import RedisError, check_url
    from sinks.redis_keys import redacted
    from streams.api.server import ApiSettings, serve
    from streams.cli import UsageError
    from streams.settings import load_settings

    site = load_settings()  # REDIS_URL, FAULTSTREAM_REDIS_PREFIX, the matcher's cache, as the workers read them
    url = args.redis_url or site.redis_url
    try:
        check_url(url)
    except ValueError as exc:
        raise UsageError(f"not a Redis URL: {redacted(url)}: {exc}") from exc
    settings = ApiSettings(
        host=args.host,
        port=args.port,
        web_port=args.web_port,
        redis_url=url,
        prefix=args.prefix or site.redis_prefix,
        rules=args.rules,
        matcher_cache_dir=site.matcher_cache_dir,
    )
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        asyncio.run(_until_signalled(serve(settings)))
    except RedisError as exc:
        raise UsageError(f"cannot reach Redis at {redacted(url)}: {exc}") from exc
    return 0


async def _until_signalled(main) -> None:
    task = asyncio.ensure_future(main)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, task.cancel)
    with contextlib.suppress(asyncio.CancelledError):
        await task
