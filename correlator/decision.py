"""A decided verdict before it is rendered: :class:`Decision`, and which nodes its causes blame.

Its own module so that the decision (correlator/decide.py) and the rendering
(correlator/verdict_build.py) both depend on it and not on each other.
"""

from __future__ import annotations

from dataclasses import dataclass

from correlator.refine import JudgedGroup
from correlator.workload import WorkloadRun
from extractors.vocabulary import NODE_DOMAINS

__all__ = ["NOT_THE_NODE_TAGS", "Decision", "blamed_nodes"]

#: Domains whose causes make a node responsible (a user's error does not make a node bad).
#: Symptoms that the logging node reports about something else: a dead peer (transport) or a
#: shared file system (storage). They never make the node that logged them responsible.
NOT_THE_NODE_TAGS = frozenset({"transport", "storage"})


def blamed_nodes(items: list[JudgedGroup]) -> set[str]:
    """Nodes whose own parts or software the given causes implicate."""
    return {
        i.node
        for i in items
        if i.rule.domain in NODE_DOMAINS and i.node and not (NOT_THE_NODE_TAGS & set(i.rule.tags))
    }


@dataclass
class Decision:
    """Everything the verdict builder needs, computed once."""

    run: WorkloadRun
    items: list[JudgedGroup]
    terminal_state: str
    sub_domain: str | None
    domains: list[str]
    considered: list[JudgedGroup]
    root: JudgedGroup | None
    uncertainty: str | None
    actor: str | None
    #: the deciding causes are one NIC error on every node: no node is singled out
    systemic: bool = False
