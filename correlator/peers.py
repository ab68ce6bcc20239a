"""Transport errors that name their peer point at it, whatever the clocks say.

A surviving rank's NCCL / IB error names the peer it lost (``Got completion from peer
10.0.0.7<50066>``, ``Connection closed by remote peer gpu007<43210>``). When that peer's own node
logged a concrete fault, the survivor's error is its echo even if the faulty node's clock runs a
few seconds late and its fault looks later than the echo. Peers are named by address more often
than by name, so each run builds an address → node map from what its nodes say about themselves:
NCCL's ``Bootstrap : Using eth0:10.0.0.7<0>`` and ``NET/IB : Using ... ; OOB eth0:10.0.0.7<0>``
lines, which rules capture as ``own_ip``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from correlator.evidence import EvidenceGroup
from correlator.refine import JudgedGroup
from extractors.vocabulary import CAUSE_ROLES, Domain, Role

__all__ = ["PEER_CAPTURE", "SELF_ADDRESS_CAPTURE", "explain_named_peers", "node_addresses"]

#: The capture naming the peer in a transport rule, and a node's own address in an INFO rule.
PEER_CAPTURE = "peer"
SELF_ADDRESS_CAPTURE = "own_ip"
#: Only these explain a named peer's errors: a part or the software of that node failed.
_FAULT_DOMAINS = (Domain.HARDWARE, Domain.SYSTEM_SOFTWARE)
_STRONG = 50
_PORT = re.compile(r"(?:<\d+>|:\d+|\]:\d+)$")


def _address(text: str) -> str:
    """``10.0.0.7<50066>`` → ``10.0.0.7``; ``[fe80::1]:5000`` → ``fe80::1``; names lower-cased."""
    bare = _PORT.sub("", text.strip()).strip("[]")
    return bare.lower()


def node_addresses(groups: Iterable[EvidenceGroup]) -> dict[str, str]:
    """Address (IP or host name, lower case) → node, from the nodes' own address lines."""
    addresses: dict[str, str] = {}
    for group in groups:
        own = group.first.captures.get(SELF_ADDRESS_CAPTURE)
        if own and group.node:
            addresses[_address(own)] = group.node
    return addresses


def _named_node(item: JudgedGroup, addresses: dict[str, str], by_short_name: dict[str, str]) -> str | None:
    peer = item.group.first.captures.get(PEER_CAPTURE)
    if not peer:
        return None
    address = _address(peer)
    if address in addresses:
        return addresses[address]
    return by_short_name.get(address.split(".")[0]) if not address[:1].isdigit() else None


def _is_fault(item: JudgedGroup) -> bool:
    rule = item.rule
    strong = rule.priority >= _STRONG and item.role in CAUSE_ROLES
    return strong and rule.domain in _FAULT_DOMAINS and "transport" not in rule.tags


def explain_named_peers(items: list[JudgedGroup], addresses: dict[str, str], nodes: set[str]) -> None:
    """Demote, in place, transport errors whose named peer's node logged a concrete fault."""
    faults: dict[str, JudgedGroup] = {}
    for item in items:
        if _is_fault(item) and item.node and item.node not in faults:
            faults[item.node] = item
    if not faults:
        return
    by_short_name = {node.lower().split(".")[0]: node for node in nodes}  # once: a storm has 10^4 items
    for item in items:
        if item.role not in (*CAUSE_ROLES, Role.ECHO) or "transport" not in item.rule.tags:
            continue
        node = _named_node(item, addresses, by_short_name)
        fault = faults.get(node) if node and node != item.node else None
        if fault is not None:
            item.role = Role.DOWNSTREAM
            item.explained_by = f"named peer <- {fault.rule.id}@{fault.node}"
