"""One way to open a ``redis.asyncio`` client, shared by the sink, the reader and the CLI."""

from __future__ import annotations

try:
    from redis.asyncio import Redis
    from redis.asyncio.connection import parse_url
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff
    from redis.exceptions import AuthenticationError, AuthorizationError, RedisError, ResponseError
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError
except ImportError as exc:  # the redis client is an optional extra
    raise ImportError("the Redis sink needs the redis client: pip install 'faultstream[stream]'") from exc

__all__ = ["RedisError", "check_url", "connect", "is_transient"]

# Server replies that mean "try again shortly" (loading, failover, a long-running script).
TRANSIENT_REPLIES = ("BUSY", "LOADING", "MASTERDOWN", "READONLY", "TRYAGAIN", "CLUSTERDOWN")


def check_url(url: str) -> None:
    """Raise ``ValueError`` for a URL redis-py cannot use (its own parser, so no drift)."""
    options = parse_url(url)
    tls_only = sorted(name for name in options if name.startswith("ssl_"))
    if tls_only and "connection_class" not in options:  # redis-py raises a bare TypeError later
        raise ValueError(f"{', '.join(tls_only)} need(s) a rediss:// URL (TLS); this one is plain")


def connect(url: str, *, name: str, socket_timeout: float | None = 10.0) -> Redis:
    """A client that fails fast: callers own the retry policy and its time budget.

    redis-py retries 10 times by default inside every command, which would hide outages from
    our own backoff loop and stretch its deadline, so that is switched off here.
    """
    check_url(url)
    return Redis.from_url(
        url,
        retry=Retry(NoBackoff(), 0),
        socket_connect_timeout=5.0,
        socket_timeout=socket_timeout,
        client_name=name,
        health_check_interval=30,
    )


def is_transient(exc: RedisError) -> bool:
    """Worth retrying: the server is away or busy, not refusing the request itself."""
    if isinstance(exc, AuthenticationError | AuthorizationError):
        return False  # redis-py files these under ConnectionError, but waiting will not fix them
    if isinstance(exc, RedisConnectionError | RedisTimeoutError):
        return True
    return isinstance(exc, ResponseError) and str(exc).startswith(TRANSIENT_REPLIES)
