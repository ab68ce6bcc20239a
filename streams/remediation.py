"""Acting on verdicts: a policy (streams/remediation_policy.py) turns each verdict revision into
actions on its responsible nodes, or refusals, each one an :class:`ActionRecord` for the
``faultstream.actions`` topic. Dry-run unless told to execute.

Safety, in order: the first matching rule only; stale verdicts refused; uncertainty gated; node
names must look like host names (they come from log lines); a node acts only after
``min_repeats`` workloads blamed it; at most ``max_nodes_per_window`` nodes per window across all
rules and workers (one Redis script decides, atomically); each (workload, node, rule, action) is
done once, however often a verdict is delivered or revised. Commands run as argument lists with
no shell; a placeholder fills one argv item and can never become another.

Redis keys (``{prefix}`` = the Redis prefix + ``remediate:``, + ``dry-run:`` in dry-run, so a
dry run never spends the real budget or marks real work done):

* ``{prefix}done:{workload}:{node}:{rule}:{n}`` — action n of the rule was done (7 days)
* ``{prefix}blamed:{domain}:{node}`` — sorted set, workload -> job end (ms): the repeat count
* ``{prefix}nodes-of:{workload}`` — the nodes the workload's latest handled revision blamed
* ``{prefix}acted`` — sorted set, node -> when it was first acted on in the window (the cap)
* ``<redis prefix>excluded`` — sorted set, node -> expiry (ms), and ``<redis prefix>excluded:{node}``,
  the reason as JSON with the same TTL: the exclusion set schedulers and people read.
"""

from __future__ import annotations

import asyncio
import logging
import re
import subprocess
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import orjson

from streams.remediation_policy import Action, Policy, PolicyRule, substitute

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["ActionRecord", "Remediator", "run_command"]

log = logging.getLogger("faultstream.remediate")

DONE_TTL_S = 7 * 86400
COMMAND_TIMEOUT_S = 60
HOST_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$")
# Reason text travels into commands (Reason=...) and logs: one printable line, bounded.
UNPRINTABLE = re.compile(r"[^\x20-\x7e]")

# Count the node against the cap unless it is already counted; refuse past the cap. Atomic, so
# two remediate workers cannot both take the last slot.
CAP_SCRIPT = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1] - ARGV[2])
if redis.call('ZSCORE', KEYS[1], ARGV[3]) then return 1 end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[3])
return 1
"""


@dataclass(frozen=True)
class ActionRecord:
    """One line of the audit trail on ``faultstream.actions`` (key: the node, or the workload)."""

    workload_id: str
    revision: int
    node: str | None
    rule: str | None
    action: str | None  # exclude | command | None (a refusal before any action)
    outcome: str  # done | dry_run | failed | duplicate | refused | released
    detail: str
    argv: list[str] | None = None
    reason: str | None = None
    dry_run: bool = True
    time: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="milliseconds"))

    def to_json(self) -> bytes:
        return orjson.dumps(asdict(self))


@dataclass(frozen=True)
class CommandResult:
    returncode: int
    output: str


async def run_command(argv: list[str]) -> CommandResult:
    """Run an argument list, never through a shell; its output is kept for the audit record."""

    def run() -> CommandResult:
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, shell=False)
        except (OSError, subprocess.TimeoutExpired) as error:
            return CommandResult(-1, str(error))
        return CommandResult(done.returncode, (done.stdout + done.stderr).strip()[-500:])

    return await asyncio.to_thread(run)


class Remediator:
    def __init__(self, policy: Policy, redis: Redis, redis_prefix: str, execute: bool = False) -> None:
        self.policy = policy
        self.redis = redis
        self.execute = execute
        self.exclusion_prefix = redis_prefix
        self.prefix = f"{redis_prefix}remediate:" + ("" if execute else "dry-run:")
        self._cap = redis.register_script(CAP_SCRIPT)
        self.run_command = run_command

    async def handle(self, verdict: dict[str, Any], now_s: float | None = None) -> list[ActionRecord]:
        now_s = time.time() if now_s is None else now_s
        rule = self._first_matching_rule(verdict)
        before = await self._blame_before(verdict)
        if int(verdict.get("revision") or 0) < before["revision"]:
            return []  # an older revision delivered late changes nothing
        records = await self._release_nodes_no_longer_blamed(verdict, rule, before)
        if rule is None:
            return records
        facts = _Facts.of(verdict, rule)
        if refusal := self._refuse_verdict(verdict, rule, now_s):
            return [*records, facts.record(None, None, "refused", refusal, self.execute)]
        for node in facts.nodes:
            records += await self._handle_node(facts, rule, node, now_s)
        return records

    def _first_matching_rule(self, verdict: dict[str, Any]) -> PolicyRule | None:
        symptom = (verdict.get("root_symptom") or {}).get("symptom")
        for rule in self.policy.rules:
            wanted = rule.match
            if verdict.get("sub_domain") in wanted.sub_domain and (
                wanted.root_symptom is None or symptom in wanted.root_symptom
            ):
                return rule
        return None

    def _refuse_verdict(self, verdict: dict[str, Any], rule: PolicyRule, now_s: float) -> str | None:
        uncertainty = verdict.get("uncertainty_type")
        if uncertainty not in rule.match.uncertainty:
            return f"uncertainty {uncertainty!r} is not one of {rule.match.uncertainty}"
        end_ms = _job_end_ms(verdict)
        if end_ms is not None and now_s - end_ms / 1000 > self.policy.max_verdict_age_s:
            return f"stale: the job ended {now_s - end_ms / 1000:.0f} s ago (max_verdict_age_s)"
        nodes = verdict.get("responsible_nodes") or []
        if not nodes:
            return "no responsible node"
        most = rule.match.max_responsible_nodes
        if most is not None and len(set(nodes)) > most:
            return f"{len(set(nodes))} responsible nodes, more than max_responsible_nodes {most}"
        return None

    async def _handle_node(
        self, facts: _Facts, rule: PolicyRule, node: str, now_s: float
    ) -> list[ActionRecord]:
        if not HOST_NAME.match(node):
            return [facts.record(node, None, "refused", "node name is not a host name", self.execute)]
        repeats = await self._count_blame(facts, rule, node)
        if repeats < rule.match.min_repeats:
            window = rule.match.repeat_window_s
            detail = f"{repeats} of {rule.match.min_repeats} blaming workloads within {window:g} s"
            return [facts.record(node, None, "refused", detail, self.execute)]
        records = []
        counted = False
        for index, action in enumerate(rule.actions):
            done_key = f"{self.prefix}done:{facts.workload_id}:{node}:{rule.name}:{index}"
            if await self.redis.exists(done_key):
                records.append(facts.record(node, action, "duplicate", "already done", self.execute))
                continue
            if not counted:
                if not await self._within_cap(node, now_s):
                    cap, window = self.policy.max_nodes_per_window, self.policy.window_s
                    detail = f"cap: {cap} nodes per {window:g} s reached"
                    return [*records, facts.record(node, action, "refused", detail, self.execute)]
                counted = True
            record = await self._perform(facts, node, action, now_s)
            if record.outcome in ("done", "dry_run"):
                await self.redis.set(done_key, record.time, ex=DONE_TTL_S)
            records.append(record)
        return records

    async def _count_blame(self, facts: _Facts, rule: PolicyRule, node: str) -> int:
        key = f"{self.prefix}blamed:{facts.domain}:{node}"
        window_ms = rule.match.repeat_window_s * 1000
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.zadd(key, {facts.workload_id: facts.end_ms})
            pipe.zcount(key, facts.end_ms - window_ms, "+inf")
            pipe.expire(key, int(rule.match.repeat_window_s) + 3600)
            _, count, _ = await pipe.execute()
        return count

    async def _within_cap(self, node: str, now_s: float) -> bool:
        args = [int(now_s * 1000), int(self.policy.window_s * 1000), node, self.policy.max_nodes_per_window]
        return bool(await self._cap(keys=[f"{self.prefix}acted"], args=args))

    async def _perform(self, facts: _Facts, node: str, action: Action, now_s: float) -> ActionRecord:
        values = facts.values(node)
        if action.exclude:
            detail = f"exclude {node} for {action.exclude.ttl_s} s"
            if not self.execute:
                return facts.record(node, action, "dry_run", detail, False)
            await self._exclude(node, action.exclude.ttl_s, facts, now_s)
            return facts.record(node, action, "done", detail, True)
        argv = [substitute(item, values) for item in action.command]
        if not self.execute:
            return facts.record(node, action, "dry_run", "would run", False, argv)
        result = await self.run_command(argv)
        outcome = "done" if result.returncode == 0 else "failed"
        detail = f"exit {result.returncode}" + (f": {result.output}" if result.output else "")
        log.log(logging.INFO if outcome == "done" else logging.WARNING, "%s %s: %s", argv, outcome, detail)
        return facts.record(node, action, outcome, detail, True, argv)

    async def _exclude(self, node: str, ttl_s: int, facts: _Facts, now_s: float) -> None:
        until_ms = int((now_s + ttl_s) * 1000)
        why = {"reason": facts.reason, "workload_id": facts.workload_id, "rule": facts.rule,
               "since": _iso(now_s), "until": _iso(until_ms / 1000)}  # fmt: skip
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.zremrangebyscore(f"{self.exclusion_prefix}excluded", "-inf", int(now_s * 1000))
            pipe.zadd(f"{self.exclusion_prefix}excluded", {node: until_ms})
            pipe.set(f"{self.exclusion_prefix}excluded:{node}", orjson.dumps(why), ex=ttl_s)
            await pipe.execute()

    async def _blame_before(self, verdict: dict[str, Any]) -> dict[str, Any]:
        """The revision, nodes and domain this workload's latest handled revision blamed."""
        previous = await self.redis.get(f"{self.prefix}nodes-of:{verdict.get('workload_id')}")
        return orjson.loads(previous) if previous else {"revision": 0, "nodes": [], "domain": None}

    async def _release_nodes_no_longer_blamed(
        self, verdict: dict[str, Any], rule: PolicyRule | None, before: dict[str, Any]
    ) -> list[ActionRecord]:
        """A revision that stops blaming a node takes it out of the repeat counts. What was done
        stays done (a drained node is resumed by a person): the record says so."""
        workload_id, revision = str(verdict.get("workload_id")), int(verdict.get("revision") or 0)
        blamed = sorted(set(verdict.get("responsible_nodes") or [])) if rule else []
        now = {"revision": revision, "nodes": blamed, "domain": verdict.get("sub_domain")}
        await self.redis.set(f"{self.prefix}nodes-of:{workload_id}", orjson.dumps(now), ex=DONE_TTL_S)
        records = []
        for node in sorted(set(before["nodes"]) - set(blamed)):
            await self.redis.zrem(f"{self.prefix}blamed:{before['domain']}:{node}", workload_id)
            detail = f"revision {revision} no longer blames {node}; actions already done stay done"
            records.append(ActionRecord(workload_id, revision, node, None, None, "released", detail,
                                        dry_run=not self.execute))  # fmt: skip
        return records


@dataclass(frozen=True)
class _Facts:
    """What the rules and the records need from one verdict."""

    workload_id: str
    revision: int
    domain: str
    symptom: str
    rule: str
    reason: str
    end_ms: int
    nodes: list[str]

    @classmethod
    def of(cls, verdict: dict[str, Any], rule: PolicyRule) -> _Facts:
        workload_id, revision = str(verdict["workload_id"]), int(verdict.get("revision") or 1)
        domain = str(verdict.get("sub_domain"))
        symptom = str((verdict.get("root_symptom") or {}).get("symptom") or "-")
        base = {"workload_id": workload_id, "revision": str(revision), "symptom": symptom, "domain": domain,
                "rule": rule.name}  # fmt: skip
        reason = UNPRINTABLE.sub("_", substitute(rule.reason, {k: _one_line(v) for k, v in base.items()}))[:200]
        end_ms = _job_end_ms(verdict) or int(time.time() * 1000)
        nodes = sorted(set(verdict.get("responsible_nodes") or []))
        return cls(workload_id, revision, domain, symptom, rule.name, reason, end_ms, nodes)

    def values(self, node: str) -> dict[str, str]:
        return {"node": node, "reason": self.reason, "workload_id": _one_line(self.workload_id),
                "revision": str(self.revision), "symptom": _one_line(self.symptom), "domain": self.domain,
                "rule": self.rule}  # fmt: skip

    def record(
        self, node: str | None, action: Action | None, outcome: str, detail: str, executed: bool,
        argv: list[str] | None = None,
    ) -> ActionRecord:  # fmt: skip
        kind = action.kind if action else None
        return ActionRecord(self.workload_id, self.revision, node, self.rule, kind, outcome, detail, argv,
                            self.reason, dry_run=not executed)  # fmt: skip


def _one_line(text: str) -> str:
    return UNPRINTABLE.sub("_", text)[:200]


def _job_end_ms(verdict: dict[str, Any]) -> int | None:
    end = (verdict.get("job") or {}).get("end")
    if not end:
        return None
    try:
        stamp = datetime.fromisoformat(end.replace("Z", "+00:00"))
    except ValueError:
        return None
    return int(stamp.timestamp() * 1000)


def _iso(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, UTC).isoformat(timespec="seconds")
