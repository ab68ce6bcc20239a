"""Read the fleet view back from Redis: worst nodes and pairs, or one node in detail.

The index sorted sets (``fleet:nodes``, ``fleet:peers``, ``fleet:ports``) can still name a
node whose own set has expired (the index lives on while other nodes keep failing); such
entries are skipped here, so a listing only shows what is backed by workloads in the window.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from sinks.fleet import pair_sides
from sinks.redis_client import connect
from sinks.redis_keys import VerdictKeys

__all__ = ["NodeFinding", "PairFinding", "node_finding", "worst_nodes", "worst_pairs"]


@dataclass
class NodeFinding:
    """One node across workloads: how many bad verdicts blame it, with which root symptoms."""

    node: str
    workloads: int
    root_symptoms: dict[str, int]  # most frequent first
    #: (workload_id, job end ms, outcome), latest job end first
    latest: list[tuple[str, int, str]] = field(default_factory=list)


@dataclass
class PairFinding:
    kind: str  # "peer" (node, peer) or "port" (host port, switch port)
    left: str
    right: str
    workloads: int


async def worst_nodes(url: str, prefix: str, top: int) -> list[NodeFinding]:
    keys = VerdictKeys(prefix)
    client = connect(url, name="faultstream-reader")
    try:
        ranked = await client.zrevrange(keys.fleet_nodes, 0, max(0, top * 2 - 1), withscores=True)
        findings = []
        for member, _score in ranked:
            finding = await _node(client, keys, member.decode(), latest=3)
            if finding is not None:
                findings.append(finding)
        findings.sort(key=lambda f: (-f.workloads, f.node))
        return findings[:top]
    finally:
        await client.aclose()


async def node_finding(url: str, prefix: str, node: str, latest: int = 20) -> NodeFinding | None:
    keys = VerdictKeys(prefix)
    client = connect(url, name="faultstream-reader")
    try:
        return await _node(client, keys, node, latest)
    finally:
        await client.aclose()


async def worst_pairs(url: str, prefix: str, kind: str, top: int, node: str | None = None) -> list[PairFinding]:
    """The pairs of ``kind`` named by the most workloads; with ``node``, only pairs it is part of."""
    keys = VerdictKeys(prefix)
    client = connect(url, name="faultstream-reader")
    try:
        ranked = await client.zrevrange(keys.fleet_pairs(kind), 0, -1, withscores=True)
        found = []
        for member, _score in ranked:
            left, right = pair_sides(member.decode())
            if node is not None and node not in (left.split("/")[0], right):
                continue
            workloads = await client.zcard(keys.fleet_pair(kind, member.decode()))
            if workloads:
                found.append(PairFinding(kind, left, right, workloads))
            if len(found) >= top:
                break
        return found
    finally:
        await client.aclose()


async def _node(client, keys: VerdictKeys, node: str, latest: int) -> NodeFinding | None:
    workloads = await client.zcard(keys.fleet_node(node))
    if not workloads:
        return None
    roots = await client.hvals(keys.fleet_roots(node))
    newest = await client.zrevrange(keys.fleet_node(node), 0, latest - 1, withscores=True)
    async with client.pipeline(transaction=False) as pipe:
        for member, _ in newest:
            pipe.hget(keys.verdict(member.decode()), "outcome")
        outcomes = await pipe.execute()
    rows = [
        (member.decode(), int(score), (outcome or b"").decode())
        for (member, score), outcome in zip(newest, outcomes, strict=True)
    ]
    return NodeFinding(node, workloads, dict(Counter(r.decode() for r in roots).most_common()), rows)
