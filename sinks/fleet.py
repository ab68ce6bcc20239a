"""The fleet view: what one verdict adds to the per-node and per-pair sets (docs/observability.md).

A node that fails under many jobs should be one finding, not a ticket per job. So the verdict
sink files each bad verdict under every node it blames and under every pair its evidence names:

* ``peer`` pairs ``(node, peer)``: the root symptom's ``peer`` capture (a transport error naming
  the far end), and the survivors of a chain element the named-peer refiner explained
  (``named peer <- rule@node``: each survivor lost its connection to that node);
* ``port`` pairs ``(host port, switch port)``: the root symptom's device and port captures on
  its node (``gpu003/mlx5_0:1``); the switch side is the ``switch_port`` capture, else the
  cabling map (``fleet_switch_ports``: host port → switch port), else ``unknown``.

The sink's Lua script applies these entries (and takes the previous revision's back out), so the
sets always reflect each workload's latest revision. Pure: no Redis here.
"""

from __future__ import annotations

import re
from typing import Any

from sinks.redis_keys import VerdictKeys

__all__ = ["FleetEntry", "fleet_entries", "pair_member", "pair_sides"]

#: [index key, member, set key, roots hash key ("" for pairs), root symptom]: the Lua shape.
FleetEntry = list[str]

_NAMED_PEER = re.compile(r"named peer <- \S+@(?P<node>\S+)")
_PEER_PORT = re.compile(r"(?:<\d+>|:\d+|\]:\d+)$")
_DEVICE_CAPTURES = ("hca", "ibdev", "asyncdev", "device")
_PORT_CAPTURES = ("port", "ibport", "asyncport")
MAX_SURVIVORS = 64  # a storm's downstream element samples its nodes anyway


def fleet_entries(
    verdict: dict[str, Any], keys: VerdictKeys, switch_ports: dict[str, str] | None = None
) -> list[FleetEntry]:
    if verdict.get("terminal_state") == "success":
        return []
    root = verdict.get("root_symptom") or {}
    root_name = root.get("symptom") or "-"
    entries = [
        [keys.fleet_nodes, node, keys.fleet_node(node), keys.fleet_roots(node), root_name]
        for node in dict.fromkeys(str(n) for n in verdict.get("responsible_nodes") or [])
    ]
    for kind, pair in dict.fromkeys(_peer_pairs(verdict, root) + _port_pairs(root, switch_ports or {})):
        entries.append([keys.fleet_pairs(kind), pair, keys.fleet_pair(kind, pair), "", ""])
    return entries


def _peer_pairs(verdict: dict[str, Any], root: dict[str, Any]) -> list[tuple[str, str]]:
    pairs = []
    peer = (root.get("captures") or {}).get("peer")
    if peer and root.get("node"):
        pairs.append(("peer", pair_member(root["node"], _address(peer))))
    for element in verdict.get("chain") or []:
        named = _NAMED_PEER.search(element.get("explained_by") or "")
        if named:
            lost = named.group("node")
            survivors = element.get("nodes", [])[:MAX_SURVIVORS]
            pairs += [("peer", pair_member(n, lost)) for n in survivors if n != lost]
    return pairs


def _port_pairs(root: dict[str, Any], switch_ports: dict[str, str]) -> list[tuple[str, str]]:
    captures = root.get("captures") or {}
    device = next((captures[c] for c in _DEVICE_CAPTURES if captures.get(c)), None)
    if not device or not root.get("node"):
        return []  # a port number alone (a TCP port of a store) is no host port
    port = next((captures[c] for c in _PORT_CAPTURES if captures.get(c)), None)
    host_port = f"{root['node']}/{device}:{port}" if port else f"{root['node']}/{device}"
    switch_port = captures.get("switch_port") or switch_ports.get(host_port) or "unknown"
    return [("port", pair_member(host_port, switch_port))]


def pair_member(left: str, right: str) -> str:
    """One Redis member for a pair: ``left|right`` with ``%`` and ``|`` escaped in each side, so a
    node name that contains ``|`` cannot make two pairs one (names come from log lines)."""
    return f"{_escape(str(left))}|{_escape(str(right))}"


def pair_sides(member: str) -> tuple[str, str]:
    left, _, right = member.partition("|")
    return _unescape(left), _unescape(right)


def _escape(side: str) -> str:
    return side.replace("%", "%25").replace("|", "%7C")


def _unescape(side: str) -> str:
    return side.replace("%7C", "|").replace("%25", "%")


def _address(text: str) -> str:
    """``10.0.0.7<50066>`` → ``10.0.0.7``: the port of a connection changes per job, the peer does not."""
    return _PEER_PORT.sub("", text.strip()).strip("[]").lower()
