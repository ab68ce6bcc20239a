"""The Redis key scheme shared by the verdict writer, the reader and the CLI.

All keys start with one prefix (default ``faultstream:``). For Redis Cluster, put a hash tag in
the prefix (``{faultstream}:``) so every key lands in one slot: the apply script touches node
keys it only learns about server-side.

=====================================  ======  =============================================
key                                    type    content
=====================================  ======  =============================================
``{prefix}verdict:{workload_id}``      hash    latest revision: json, revision, outcome,
                                               terminal_state, sub_domain, end, nodes, counted
``{prefix}verdicts:recent``            zset    workload_id scored by job end (epoch ms)
``{prefix}verdicts:stream``            stream  one entry per applied revision
``{prefix}node:{node}``                hash    sub_domain -> latest verdicts blaming the node
``{prefix}nodes:{sub_domain}``         zset    node -> latest verdicts blaming it in that domain
``{prefix}verdicts`` (pub/sub)         channel verdict JSON per applied revision
``{prefix}fleet:nodes``                zset    node -> bad verdicts blaming it in the window
``{prefix}fleet:node:{node}``          zset    workload_id -> job end (epoch ms), TTL
``{prefix}fleet:node:{node}:roots``    hash    workload_id -> root symptom, TTL
``{prefix}fleet:peers`` / ``:ports``   zset    pair -> workloads with that pair's evidence
``{prefix}fleet:peer:{node}|{peer}``   zset    workload_id -> job end (epoch ms), TTL
``{prefix}fleet:port:{host}|{switch}`` zset    workload_id -> job end (epoch ms), TTL
``{prefix}sink:built``                 string  when the keys were (re)built from the verdicts
                                               topic; missing: Redis lost them (or is new)
``{prefix}sink:rebuilding``            string  the token of the rebuild under way, short TTL
=====================================  ======  =============================================

In ``fleet:node:{node}`` keys the node is escaped by :func:`key_part` (a real host name is
unchanged): node names come from log lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["DEFAULT_PREFIX", "VerdictKeys", "key_part", "redacted"]

DEFAULT_PREFIX = "faultstream:"
_USERINFO_PASSWORD = re.compile(r"(//[^/@]*?:)[^/@]*@")  # redis://user:PASSWORD@host
_QUERY_PASSWORD = re.compile(r"([?&]password=)[^&]*")  # unix:///sock?password=PASSWORD


@dataclass(frozen=True)
class VerdictKeys:
    prefix: str = DEFAULT_PREFIX

    def verdict(self, workload_id: str) -> str:
        return f"{self.prefix}verdict:{workload_id}"

    def node(self, node: str) -> str:
        return f"{self.prefix}node:{node}"

    def nodes(self, sub_domain: str) -> str:
        return f"{self.prefix}nodes:{sub_domain}"

    @property
    def fleet_nodes(self) -> str:
        return f"{self.prefix}fleet:nodes"

    def fleet_node(self, node: str) -> str:
        return f"{self.prefix}fleet:node:{key_part(node)}"

    def fleet_roots(self, node: str) -> str:
        return f"{self.prefix}fleet:node:{key_part(node)}:roots"

    def fleet_pairs(self, kind: str) -> str:
        """``kind`` is ``peer`` (node, peer) or ``port`` (host port, switch port)."""
        return f"{self.prefix}fleet:{kind}s"

    def fleet_pair(self, kind: str, pair: str) -> str:
        return f"{self.prefix}fleet:{kind}:{pair}"

    @property
    def built(self) -> str:
        return f"{self.prefix}sink:built"

    @property
    def rebuilding(self) -> str:
        return f"{self.prefix}sink:rebuilding"

    @property
    def recent(self) -> str:
        return f"{self.prefix}verdicts:recent"

    @property
    def stream(self) -> str:
        return f"{self.prefix}verdicts:stream"

    @property
    def channel(self) -> str:
        return f"{self.prefix}verdicts"


#: What a host name is made of (RFC 1123, plus ``_``); anything else in a key part is escaped.
_NOT_HOSTNAME = re.compile(r"[^A-Za-z0-9._-]")


def key_part(name: str) -> str:
    """``name`` as one part of a key: unchanged for a real host name, else every other character
    percent-encoded (UTF-8). Node names come from log lines: ``gpu001:roots`` must not be the
    key of gpu001's roots hash, which made every later write fail with WRONGTYPE."""
    return _NOT_HOSTNAME.sub(
        lambda m: "".join(f"%{b:02X}" for b in m[0].encode("utf-8", "surrogatepass")), name
    )


def redacted(url: str) -> str:
    """The URL with its password masked, for messages and logs (works on malformed URLs too)."""
    url = _USERINFO_PASSWORD.sub(r"\1***@", url)
    return _QUERY_PASSWORD.sub(r"\1***", url)
