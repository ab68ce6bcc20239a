"""Names from log lines reach Redis keys, the terminal and remediation commands unescaped nowhere
(issue 11): shell syntax, format directives, newlines, ANSI escapes, very long node names.

A node name is whatever a syslog header or a record's ``host`` field says; a workload's output
is written by its user. Each name below goes through the real sink into the real Redis, is read
back by the fleet reader, and is printed by ``faultstream nodes`` and ``faultstream verdicts``.
"""

from __future__ import annotations

import pytest

from sinks.fleet_reader import node_finding, worst_nodes
from sinks.redis_keys import VerdictKeys, key_part
from sinks.redis_verdicts import RedisVerdictSink
from streams.cli import main
from streams.remediation_policy import substitute
from streams.terminal import printable
from tests.sinks.verdicts import make_verdict, run

HOSTILE_NAMES = [
    "gpu001:roots",  # gpu001's roots hash, if the key were not escaped
    "$(reboot)",
    "gpu002; rm -rf /",
    "{faultstream}",  # a Redis Cluster hash tag
    "%n%s%x{0}{node}",
    "gpu003\nWORKLOAD 9999 Fail Hardware gpu004",  # a forged table row
    "\x1b[2J\x1b]0;pwned\x07gpu005",  # clear the screen, set the window title
    "\u202egpu006",  # right-to-left override
    "g" * 20_000,
]


async def _apply(url: str, prefix: str, *verdicts: dict) -> None:
    sink = RedisVerdictSink(url, prefix=prefix)
    try:
        for verdict in verdicts:
            await sink.add(verdict)
        await sink.flush()
    finally:
        await sink.close()


def _blaming(workload_id: str, node: str) -> dict:
    verdict = make_verdict(workload_id, sub_domain="infrastructure", nodes=[node])
    verdict["root_symptom"] = {
        "symptom": "slurm_node_not_responding", "rule_id": "t.r", "catalog_id": None,
        "domain": "infrastructure", "node": node, "time": "2026-03-01T11:59:00.000Z", "time_ms": 0,
        "source": "syslog", "origin": "t:0:0", "line": node, "captures": {"node": node},
    }  # fmt: skip
    return verdict


def test_a_real_host_name_keeps_its_key_and_anything_else_is_escaped():
    assert key_part("gpu-001.rack_3") == "gpu-001.rack_3"
    keys = VerdictKeys("p:")
    assert keys.fleet_node("gpu001:roots") != keys.fleet_roots("gpu001")
    for name in HOSTILE_NAMES:
        assert all(c.isalnum() or c in "._-%" for c in key_part(name)), name


def test_hostile_node_names_are_stored_and_read_back_as_they_are(redis_url, prefix, db):
    # gpu001 first: its fleet keys exist when "gpu001:roots" is blamed (that made WRONGTYPE and
    # the sink's retries stalled every later verdict)
    verdicts = [_blaming("job-0", "gpu001")] + [_blaming(f"job-{i}", n) for i, n in enumerate(HOSTILE_NAMES, 1)]
    run(_apply(redis_url, prefix, *verdicts))

    found = {f.node: f for f in run(worst_nodes(redis_url, prefix, top=50))}
    assert set(found) == {"gpu001", *HOSTILE_NAMES}
    assert all(f.workloads == 1 for f in found.values())
    for name in ("gpu001", "gpu001:roots"):
        finding = run(node_finding(redis_url, prefix, name))
        assert finding is not None and finding.root_symptoms == {"slurm_node_not_responding": 1}
    assert db.hgetall(f"{prefix}node:$(reboot)") == {"infrastructure": "1"}  # a key, never a command


def test_the_cli_tables_print_hostile_names_escaped_and_cut(redis_url, prefix, capsys):
    run(_apply(redis_url, prefix, *[_blaming(f"job-{i}", n) for i, n in enumerate(HOSTILE_NAMES)]))
    for command in (["nodes", "--top", "50"], ["verdicts", "--limit", "50"]):
        assert main([*command, "--redis-url", redis_url, "--prefix", prefix]) == 0
        out = capsys.readouterr().out
        assert "\x1b" not in out and "\u202e" not in out and "\x07" not in out
        assert not any(line.startswith("WORKLOAD 9999") for line in out.splitlines()), "a forged row"
        assert max(len(line) for line in out.splitlines()) < 1000, "a 20,000-character name was not cut"
        assert "\\x1b[2J" in out  # shown, not run


def test_printable_shows_controls_as_escapes():
    assert printable("a\x1b[31mb\nc\u202ed\x00") == "a\\x1b[31mb\\x0ac\\u202ed\\x00"
    assert printable("x" * 10, limit=5) == "xxxx…"
    assert printable("gpu-001 Fail Hardware") == "gpu-001 Fail Hardware"


@pytest.mark.parametrize("name", HOSTILE_NAMES[:6])
def test_a_remediation_placeholder_is_filled_once_never_expanded_again(name):
    filled = substitute("NodeName={node} Reason={reason}", {"node": name, "reason": "r"})
    assert filled == f"NodeName={name} Reason=r"
