"""``RedisVerdictSink``: the latest revision of every verdict in Redis, shaped for Grafana.

Delivery is at-least-once (``flush()`` empties the buffer only after Redis took every verdict)
and writes are idempotent and ordered by revision: one Lua script per verdict compares the
revision with the stored one and applies nothing unless it is newer, so replays after a crash
or a retried pipeline change nothing. Key scheme: :mod:`sinks.redis_keys`; docs/sinks.md.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC, datetime
from typing import NamedTuple

import orjson

from sinks.base import SinkError
from sinks.fleet import fleet_entries
from sinks.redis_client import RedisError, connect, is_transient
from sinks.redis_keys import DEFAULT_PREFIX, VerdictKeys, redacted
from streams import metrics

__all__ = ["APPLY_VERDICT_LUA", "RedisVerdictSink"]

log = logging.getLogger(__name__)

# KEYS: verdict hash, recent zset, stream.
# ARGV: prefix, workload_id, revision, json, outcome, terminal_state, sub_domain, end, end_ms,
#       counted, nodes, recent_limit, stream_maxlen, channel, fleet, fleet_window_ms, fleet_ttl_s,
#       root_symptom.
# ``counted`` is what this revision adds to the node counters ({"domain", "nodes"} JSON, or ""):
# it is stored in the hash so the next revision can take exactly that back out. ``fleet`` is
# the same for the fleet view (sinks/fleet.py): a JSON list of [index, member, set, roots, root].
# Redis runs a script without interleaving but does not roll back a script that fails half-way,
# so every check (revision, key types, decoding) happens before the first write.
APPLY_VERDICT_LUA = """
local stored = redis.call('HGET', KEYS[1], 'revision')
if stored and tonumber(stored) >= tonumber(ARGV[3]) then
  return 0
end
local prefix = ARGV[1]
local changes = {}
local function plan(counted, delta)
  if not counted or counted == '' then return end
  local c = cjson.decode(counted)
  for _, node in ipairs(c.nodes) do
    table.insert(changes, {prefix .. 'node:' .. node, prefix .. 'nodes:' .. c.domain,
                           c.domain, node, delta})
  end
end
plan(redis.call('HGET', KEYS[1], 'counted'), -1)
plan(ARGV[10], 1)
local function entries(text)
  if not text or text == '' then return {} end
  return cjson.decode(text)
end
local fleet_old, fleet_new = entries(redis.call('HGET', KEYS[1], 'fleet')), entries(ARGV[15])
local expected = {{KEYS[2], 'zset'}, {KEYS[3], 'stream'}}
for _, change in ipairs(changes) do
  table.insert(expected, {change[1], 'hash'})
  table.insert(expected, {change[2], 'zset'})
end
for _, list in ipairs({fleet_old, fleet_new}) do
  for _, e in ipairs(list) do
    table.insert(expected, {e[1], 'zset'})
    table.insert(expected, {e[3], 'zset'})
    if e[4] ~= '' then table.insert(expected, {e[4], 'hash'}) end
  end
end
for _, want in ipairs(expected) do
  local kind = redis.call('TYPE', want[1])['ok']
  if kind ~= 'none' and kind ~= want[2] then
    return redis.error_reply('WRONGTYPE ' .. want[1] .. ' is a ' .. kind .. ', not a ' ..
                             want[2] .. '; nothing written')
  end
end
for _, change in ipairs(changes) do
  local per_node, worst, domain, node, delta = unpack(change)
  if redis.call('HINCRBY', per_node, domain, delta) <= 0 then
    redis.call('HDEL', per_node, domain)
  end
  if tonumber(redis.call('ZINCRBY', worst, delta, node)) <= 0 then
    redis.call('ZREM', worst, node)
  end
end
local wid, window, ttl = ARGV[2], tonumber(ARGV[16]), tonumber(ARGV[17])
local function reindex(e)
  local n = redis.call('ZCARD', e[3])
  if n > 0 then
    redis.call('ZADD', e[1], n, e[2])
    redis.call('EXPIRE', e[1], ttl)
  else
    redis.call('ZREM', e[1], e[2])
  end
end
for _, e in ipairs(fleet_old) do
  redis.call('ZREM', e[3], wid)
  if e[4] ~= '' then redis.call('HDEL', e[4], wid) end
  reindex(e)
end
for _, e in ipairs(fleet_new) do
  redis.call('ZADD', e[3], ARGV[9], wid)
  if e[4] ~= '' then redis.call('HSET', e[4], wid, e[5]) end
  -- the window is in event time (job ends), relative to the newest job end of the set
  local newest = tonumber(redis.call('ZRANGE', e[3], -1, -1, 'WITHSCORES')[2])
  local old = redis.call('ZRANGEBYSCORE', e[3], '-inf', '(' .. (newest - window))
  for _, gone in ipairs(old) do
    redis.call('ZREM', e[3], gone)
    if e[4] ~= '' then redis.call('HDEL', e[4], gone) end
  end
  redis.call('EXPIRE', e[3], ttl)
  if e[4] ~= '' then redis.call('EXPIRE', e[4], ttl) end
  reindex(e)
end
redis.call('HSET', KEYS[1], 'json', ARGV[4], 'revision', ARGV[3], 'outcome', ARGV[5],
  'terminal_state', ARGV[6], 'sub_domain', ARGV[7], 'end', ARGV[8], 'counted', ARGV[10],
  'nodes', ARGV[11], 'fleet', ARGV[15], 'root_symptom', ARGV[18])
redis.call('ZADD', KEYS[2], ARGV[9], ARGV[2])
redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -(tonumber(ARGV[12]) + 1))
redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[13], '*', 'workload_id', ARGV[2],
  'revision', ARGV[3], 'outcome', ARGV[5], 'sub_domain', ARGV[7], 'nodes', ARGV[11],
  'root_symptom', ARGV[18], 'json', ARGV[4])
redis.call('PUBLISH', ARGV[14], ARGV[4])
return 1
"""

FIRST_DELAY_S = 0.1
MAX_DELAY_S = 2.0
CHUNK = 500  # verdicts per pipeline: bounds request size after a long outage


class _Backoff:
    """Exponential waits (0.1 s doubling to 2 s) that stop at the flush's deadline."""

    def __init__(self, deadline: float) -> None:
        self.deadline, self.delay, self.tries = deadline, FIRST_DELAY_S, 0

    def next_wait(self) -> float | None:
        self.tries += 1
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            return None
        # The last wait is cut to the deadline so one final try happens right at it.
        wait, self.delay = min(self.delay, remaining), min(self.delay * 2, MAX_DELAY_S)
        return wait


class _Write(NamedTuple):
    keys: list[str]
    args: list[str | int | bytes]


class RedisVerdictSink:
    """Buffers verdicts; ``flush()`` applies them to Redis with retries. See module docstring."""

    def __init__(
        self,
        url: str,
        prefix: str = DEFAULT_PREFIX,
        recent_limit: int = 10000,
        stream_maxlen: int = 10000,
        retry_for_s: float = 60.0,
        fleet_window_s: float = 7 * 86400.0,
        switch_ports: dict[str, str] | None = None,
    ) -> None:
        if recent_limit < 1 or stream_maxlen < 1 or retry_for_s < 0 or fleet_window_s <= 0:
            raise ValueError("recent_limit, stream_maxlen must be >= 1, retry_for_s >= 0, fleet_window_s > 0")
        self._url = url
        self._keys = VerdictKeys(prefix)
        self._limits = (recent_limit, stream_maxlen)
        self._retry_for_s = retry_for_s
        self._fleet_window_s = fleet_window_s
        self._switch_ports = dict(switch_ports or {})  # host port -> switch port (sinks/fleet.py)
        self._client = connect(url, name="faultstream-sink")
        self._apply = self._client.register_script(APPLY_VERDICT_LUA)
        self._buffer: list[_Write] = []
        self.applied = 0  # revisions written
        self.skipped = 0  # replays and stale revisions Redis already had something newer for
        self.reconnects = 0  # outages seen: a restarted Redis may have come back empty (sinks/redis_rebuild.py)

    @property
    def pending(self) -> int:
        return len(self._buffer)

    async def add(self, verdict: dict) -> None:
        self._buffer.append(self._prepare(verdict))

    async def flush(self) -> None:
        with metrics.SINK_FLUSH_SECONDS.time():
            await self._flush()

    async def _flush(self) -> None:
        deadline = time.monotonic() + self._retry_for_s
        while self._buffer:
            chunk = self._buffer[:CHUNK]
            results = await self._write_with_retries(chunk, deadline)
            # Only now is the chunk safe in Redis; verdicts added meanwhile stay buffered.
            del self._buffer[: len(chunk)]
            applied = sum(1 for r in results if r == 1)
            self.applied += applied
            self.skipped += len(results) - applied
            metrics.count_sink_write(applied, len(results) - applied)

    async def close(self) -> None:
        await self._client.aclose()

    def _prepare(self, verdict: dict) -> _Write:
        try:
            workload_id, revision = str(verdict["workload_id"]), int(verdict["revision"])
        except (KeyError, TypeError, ValueError) as exc:
            raise SinkError(f"not a verdict (needs workload_id and revision): {exc!r}") from exc
        keys = [self._keys.verdict(workload_id), self._keys.recent, self._keys.stream]
        nodes = _unique(verdict.get("responsible_nodes") or [])
        recent_limit, stream_maxlen = self._limits
        args = [
            self._keys.prefix,
            workload_id,
            revision,
            orjson.dumps(verdict),
            _outcome(verdict),
            verdict.get("terminal_state") or "",
            verdict.get("sub_domain") or "",
            _job_end(verdict) or "",
            _end_ms(verdict),
            _counted(verdict, nodes),
            ",".join(nodes),
            recent_limit,
            stream_maxlen,
            self._keys.channel,
            orjson.dumps(fleet_entries(verdict, self._keys, self._switch_ports)),
            int(self._fleet_window_s * 1000),
            max(1, int(self._fleet_window_s)),
            (verdict.get("root_symptom") or {}).get("symptom") or "",
        ]
        return _Write(keys, args)

    async def _write_with_retries(self, chunk: list[_Write], deadline: float) -> list[int]:
        backoff = _Backoff(deadline)
        while True:
            try:
                results = await self._write(chunk)
            except RedisError as exc:
                try:
                    wait = self._wait_or_give_up(exc, backoff, len(chunk))
                except SinkError:
                    metrics.SINK_FAILURES.inc()
                    raise
                metrics.SINK_RETRIES.inc()
                log.warning("Redis write failed (try %d), retrying in %.1fs: %s", backoff.tries, wait, exc)
                await self._reconnect()
                await asyncio.sleep(wait)
                continue
            if backoff.tries:
                log.info("Redis write succeeded after %d failed tries", backoff.tries)
            return results

    def _wait_or_give_up(self, exc: RedisError, backoff: _Backoff, size: int) -> float:
        where = redacted(self._url)
        if not is_transient(exc):
            raise SinkError(f"Redis at {where} refused {size} verdicts: {exc}") from exc
        wait = backoff.next_wait()
        if wait is None:
            raise SinkError(
                f"gave up writing {size} verdicts to Redis at {where} after "
                f"{backoff.tries} tries in {self._retry_for_s:g}s: {exc}"
            ) from exc
        return wait

    async def _write(self, chunk: list[_Write]) -> list[int]:
        # Not a MULTI: each script call is atomic on its own, and a chunk that fails half-way
        # is simply sent again (the applied half is then skipped as a replay).
        async with self._client.pipeline(transaction=False) as pipe:
            for write in chunk:
                await self._apply(keys=write.keys, args=write.args, client=pipe)
            return await pipe.execute()

    async def _reconnect(self) -> None:
        # Drop every pooled socket so the next try dials afresh instead of reusing a dead one.
        self.reconnects += 1
        await self._client.connection_pool.disconnect()


def _unique(nodes: list[str]) -> list[str]:
    return list(dict.fromkeys(str(n) for n in nodes))


def _counted(verdict: dict, nodes: list[str]) -> bytes:
    """What this revision adds to the node counters: bad verdicts only, by domain."""
    domain = verdict.get("sub_domain")
    if verdict.get("terminal_state") == "success" or not domain or not nodes:
        return b""
    return orjson.dumps({"domain": domain, "nodes": nodes})


def _outcome(verdict: dict) -> str:
    block = verdict.get("verdict") or {}
    return block.get("attribution_outcome") or ""


def _job_end(verdict: dict) -> str | None:
    job = verdict.get("job") or {}
    return job.get("end")


def _end_ms(verdict: dict) -> int:
    """Job end as epoch ms (the "recent" order); the write time when the job has no end."""
    end = _job_end(verdict)
    if end:
        try:
            moment = datetime.fromisoformat(end)
        except ValueError:
            log.warning("verdict %s: unparseable job.end %r", verdict.get("workload_id"), end)
        else:
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)  # verdict times are UTC by contract
            return int(moment.timestamp() * 1000)
    return int(time.time() * 1000)
