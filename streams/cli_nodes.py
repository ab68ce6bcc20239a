"""``faultstream nodes``: the fleet view from Redis — nodes and pairs that fail across workloads."""

from __future__ import annotations

import argparse
import asyncio
from dataclasses import asdict
from datetime import UTC, datetime

import orjson

from streams.cli_verdicts import DEFAULT_REDIS_URL
from streams.terminal import printable

__all__ = ["add_parser"]

CELL_LIMIT = 200


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("nodes", help="the fleet view: nodes and pairs blamed across workloads")
    parser.add_argument("--top", type=int, default=10, help="how many nodes and pairs to list (default 10)")
    parser.add_argument("--node", default=None, help="one node in detail: its workloads, symptoms, pairs")
    parser.add_argument(
        "--redis-url", default=None, help=f"Redis to read (default: $REDIS_URL, else {DEFAULT_REDIS_URL})"
    )
    parser.add_argument("--prefix", default=None, help="key prefix (default: FAULTSTREAM_REDIS_PREFIX)")
    parser.add_argument("--json", action="store_true", help="one JSON document instead of tables")
    parser.set_defaults(handler=run_nodes)


def run_nodes(args: argparse.Namespace) -> int:
    from sinks.redis_client import RedisError
    from sinks.redis_keys import redacted
    from streams.cli import UsageError
    from streams.settings import load_settings

    site = load_settings()  # REDIS_URL and FAULTSTREAM_REDIS_PREFIX, as the workers read them
    url, prefix = args.redis_url or site.redis_url, args.prefix or site.redis_prefix
    if args.top < 1:
        raise UsageError(f"--top must be 1 or more, got {args.top}")
    try:
        report = asyncio.run(_report(url, prefix, args.top, args.node))
    except (RedisError, OSError) as exc:
        raise UsageError(f"cannot reach Redis at {redacted(url)}: {exc}") from exc
    if args.json:
        print(orjson.dumps(report).decode())
    else:
        print(_as_text(report, args.node))
    return 0


async def _report(url: str, prefix: str, top: int, node: str | None) -> dict:
    from sinks.fleet_reader import node_finding, worst_nodes, worst_pairs

    if node is None:
        nodes = await worst_nodes(url, prefix, top)
    else:
        one = await node_finding(url, prefix, node)
        nodes = [one] if one else []
    return {
        "nodes": [asdict(n) for n in nodes],
        "peers": [asdict(p) for p in await worst_pairs(url, prefix, "peer", top, node)],
        "ports": [asdict(p) for p in await worst_pairs(url, prefix, "port", top, node)],
    }


def _as_text(report: dict, node: str | None) -> str:
    if not report["nodes"] and not report["peers"] and not report["ports"]:
        return f"no bad verdicts blame {node} in the window" if node else "no bad verdicts blame any node yet"
    out = [f"{'NODE':<20}  {'WORKLOADS':>9}  {'ROOT SYMPTOMS':<48}  LATEST"]
    for finding in report["nodes"]:
        symptoms = ", ".join(f"{symptom} x{count}" for symptom, count in finding["root_symptoms"].items())
        latest = ", ".join(f"{w} ({_when(ms)} {outcome})" for w, ms, outcome in finding["latest"])
        node, symptoms, latest = _cell(finding["node"]), _cell(symptoms), _cell(latest)
        out.append(f"{node:<20}  {finding['workloads']:>9}  {symptoms:<48}  {latest}")
    for kind, title in (("peers", "NODE | PEER"), ("ports", "HOST PORT | SWITCH PORT")):
        if report[kind]:
            out += ["", f"{title:<48}  WORKLOADS"]
            out += [f"{_cell(p['left'] + ' | ' + p['right']):<48}  {p['workloads']:>9}" for p in report[kind]]
    return "\n".join(out)


def _cell(text: str) -> str:
    """Node names and symptoms come from log lines: escaped, and cut so one cannot flood the table."""
    return printable(text, CELL_LIMIT)


def _when(epoch_ms: int) -> str:
    return datetime.fromtimestamp(epoch_ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M")
