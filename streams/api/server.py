"""Run the API and the dashboard: two aiohttp sites, one Redis connection pool."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web
from redis.asyncio import BlockingConnectionPool, Redis

from extractors.loader import load_ruleset
from streams.api.app import api_app
from streams.api.dashboard import dashboard_app
from streams.api.store import AttributorStore
from streams.settings import DEFAULT_MATCHER_CACHE_DIR

__all__ = ["ApiSettings", "serve"]

log = logging.getLogger("faultstream.api")

#: Enough connections for a burst of concurrent requests; more wait for one (never refused).
REDIS_CONNECTIONS = 32


@dataclass(frozen=True)
class ApiSettings:
    host: str
    port: int
    web_port: int
    redis_url: str
    prefix: str
    rules: Path | None = None
    matcher_cache_dir: Path = DEFAULT_MATCHER_CACHE_DIR


async def serve(settings: ApiSettings, started: asyncio.Event | None = None) -> None:
    ruleset = load_ruleset(settings.rules)
    pool = BlockingConnectionPool.from_url(settings.redis_url, max_connections=REDIS_CONNECTIONS, timeout=30)
    client = Redis(connection_pool=pool, client_name="faultstream-api")
    await client.ping()  # fail at start, with the reason, rather than on the first request
    store = AttributorStore(client, settings.prefix)
    runners = [
        web.AppRunner(api_app(store, ruleset, settings.prefix, settings.matcher_cache_dir)),
        web.AppRunner(dashboard_app(client, settings.prefix)),
    ]
    try:
        for runner, port in zip(runners, (settings.port, settings.web_port), strict=True):
            await runner.setup()
            await web.TCPSite(runner, settings.host, port).start()
        log.info(
            "API on http://%s:%d/v2, dashboard on http://%s:%d/",
            settings.host,
            settings.port,
            settings.host,
            settings.web_port,
        )
        if started is not None:
            started.set()
        await asyncio.Event().wait()  # until cancelled (Ctrl-C, SIGTERM)
    finally:
        for runner in runners:
            await runner.cleanup()
        await client.aclose()
        await pool.disconnect()
