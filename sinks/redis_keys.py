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
=====================================  ======  =============================================
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["DEFAULT_PREFIX", "VerdictKeys", "redacted"]

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
        return f"{self.prefix}fleet:node:{node}"

    def fleet_roots(self, node: str) -> str:
        return f"{self.prefix}fleet:node:{node}:roots"

    def fleet_pairs(self, kind: str) -> str:
        """``kind`` is ``peer`` (node, peer) or ``port`` (host port, switch port)."""
        return f"{self.prefix}fleet:{kind}s"

    def fleet_pair(self, kind: str, pair: str) -> str:
        return f"{self.prefix}fleet:{kind}:{pair}"

    @property
    def recent(self) -> str:
        return f"{self.prefix}verdicts:recent"

    @property
    def stream(self) -> str:
        return f"{self.prefix}verdicts:stream"

    @property
    def channel(self) -> str:
        return f"{self.prefix}verdicts"


def redacted(url: str) -> str:
    """The URL with its password masked, for messages and logs (works on malformed URLs too)."""
    url = _USERINFO_PASSWORD.sub(r"\1***@", url)
    return _QUERY_PASSWORD.sub(r"\1***", url)
