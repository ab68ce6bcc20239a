"""Turn a :class:`~correlator.decision.Decision` into a :class:`Verdict` (chain, compat block)."""

from __future__ import annotations

from correlator.decision import Decision, blamed_nodes
from correlator.refine import JudgedGroup
from correlator.timefmt import iso
from correlator.verdict import (
    AttributionBlock,
    ChainElement,
    JobFacts,
    NodeSource,
    ObservationSource,
    RootSymptom,
    RootSymptomCompat,
    Verdict,
)
from extractors.vocabulary import FOLLOWER_ROLES, Domain

__all__ = ["build_verdict"]

DOMAIN_LABELS = {
    Domain.HARDWARE: "Hardware",
    Domain.SYSTEM_SOFTWARE: "System Software",
    Domain.INFRASTRUCTURE: "Infrastructure",
    Domain.USER: "User",
    Domain.AMBIGUOUS: "Ambiguous",
    Domain.UNATTRIBUTED: "Unattributed",
}
TERMINAL_LABELS = {"fail": "Fail", "cancel": "Cancel", "timeout": "Timeout", "success": "Success"}
#: A downstream or context chain element names at most this many nodes (those with the most
#: lines) and counts the rest: a 12,500-node storm is summarized, not listed. Root elements name
#: every node: they are the responsible ones.
CHAIN_NODE_SAMPLE = 16
#: At most this many per-node sources in ``symptoms`` (bad nodes first, then by time).
MAX_NODE_SOURCES = 64


def build_verdict(decision: Decision, ruleset_version: str, lines_seen: int) -> Verdict:
    run, root = decision.run, decision.root
    chain = _chain(decision)
    responsible = _responsible_nodes(decision)
    detail = _detail(decision, responsible)
    return Verdict(
        workload_id=run.workload_id,
        run_start=iso(run.start_ms),
        terminal_state=decision.terminal_state,
        sub_domain=decision.sub_domain,
        failure_domains=decision.domains,
        responsible_nodes=responsible,
        root_symptom=_root_symptom(root) if root else None,
        chain=chain,
        uncertainty_type=decision.uncertainty,
        cancellation_actor=decision.actor,
        detail=detail,
        job=_job_facts(decision),
        ruleset_version=ruleset_version,
        lines_seen=lines_seen,
        symptoms_seen=sum(i.group.count for i in decision.items),
        revision=max(run.revision, 1),
        verdict=_compat_block(decision, detail),
        symptoms=_node_sources(decision, responsible),
    )


def _chain_role(item: JudgedGroup, decision: Decision, considered: set[int]) -> str:
    if id(item) in considered and decision.sub_domain not in (None, Domain.UNATTRIBUTED):
        return "root"
    root = decision.root
    if root is not None and (item is root or (item.rule.id == root.rule.id and item.role == root.role)):
        return "root"
    if item.role in FOLLOWER_ROLES:
        return "downstream"
    return "context"


def _chain(decision: Decision) -> list[ChainElement]:
    merged: dict[tuple[str, str, str], dict] = {}
    considered = {id(i) for i in decision.considered}  # by identity: a list lookup per item is quadratic
    for item in decision.items:
        role = _chain_role(item, decision, considered)
        key = (item.rule.symptom, item.rule.id, role)
        entry = merged.setdefault(
            key, {"nodes": {}, "first": item.first_ms, "last": item.group.last_ms, "count": 0, "item": item}
        )
        node = item.node or ""
        entry["nodes"][node] = entry["nodes"].get(node, 0) + item.group.count
        entry["first"] = min(entry["first"], item.first_ms)
        entry["last"] = max(entry["last"], item.group.last_ms)
        entry["count"] += item.group.count
    ordered = sorted(merged.items(), key=lambda kv: (kv[1]["first"], kv[0]))
    return [
        ChainElement(
            symptom=symptom,
            rule_id=rule_id,
            domain=e["item"].rule.domain,
            role=role,
            first=iso(e["first"]),
            last=iso(e["last"]),
            count=e["count"],
            explained_by=e["item"].explained_by,
            **_chain_nodes(e["nodes"], sample=role != "root"),
        )
        for (symptom, rule_id, role), e in ordered
    ]


def _chain_nodes(lines_by_node: dict[str, int], sample: bool) -> dict:
    """Every node of the element, or beyond CHAIN_NODE_SAMPLE the ones with the most lines and
    the total."""
    named = {n: c for n, c in lines_by_node.items() if n}
    if not sample or len(named) <= CHAIN_NODE_SAMPLE:
        return {"nodes": sorted(named)}
    top = sorted(named, key=lambda n: (-named[n], n))[:CHAIN_NODE_SAMPLE]
    return {"nodes": sorted(top), "nodes_total": len(named)}


def _responsible_nodes(decision: Decision) -> list[str]:
    if decision.sub_domain in (None, Domain.USER, Domain.UNATTRIBUTED) or decision.systemic:
        return []
    return sorted(blamed_nodes(decision.considered))


def _root_symptom(item: JudgedGroup) -> RootSymptom:
    first = item.group.first
    return RootSymptom(
        symptom=first.symptom,
        rule_id=first.rule_id,
        catalog_id=first.catalog_id,
        domain=first.domain,
        node=first.node,
        time=iso(first.time_ms),
        time_ms=first.time_ms,
        source=first.source,
        origin=first.origin,
        line=first.line,
        captures=first.captures,
    )


def _observation(item: JudgedGroup) -> ObservationSource:
    first = item.group.first
    observation, _, pos = first.origin.partition("#")
    return ObservationSource(
        observation_id=observation,
        source=first.source,
        pos=int(pos or 0),
        line=first.line,
        rule=first.rule_id,
        time=iso(first.time_ms),
    )


def _outcome(decision: Decision) -> str:
    terminal = TERMINAL_LABELS[decision.terminal_state]
    if decision.sub_domain is None:
        return terminal
    return f"{terminal} {DOMAIN_LABELS[decision.sub_domain]}"


def _compat_block(decision: Decision, detail: str) -> AttributionBlock:
    root = decision.root
    return AttributionBlock(
        root_symptom=RootSymptomCompat(
            symptom=root.rule.symptom, source=_observation(root), catalog_id=root.rule.catalog_id
        )
        if root
        else None,
        attribution_outcome=_outcome(decision),
        detail=detail,
        terminal_states=[TERMINAL_LABELS[decision.terminal_state]],
        failure_domains=[DOMAIN_LABELS.get(d, d) for d in decision.domains]
        or ([DOMAIN_LABELS[decision.sub_domain]] if decision.sub_domain else []),
        cancellation_actors=[decision.actor] if decision.actor else [],
        uncertainty_type=decision.uncertainty,
    )


def _node_sources(decision: Decision, responsible: list[str]) -> dict[str, list[NodeSource]]:
    out: dict[str, list[NodeSource]] = {}
    bad = set(responsible)
    sourced = [i for i in decision.considered if i.node]
    if len(sourced) > MAX_NODE_SOURCES:  # many nodes: the responsible ones first, then the earliest
        first = sorted(sourced, key=lambda i: (i.node not in bad, i.first_ms))[:MAX_NODE_SOURCES]
        kept = {id(i) for i in first}
        sourced = [i for i in sourced if id(i) in kept]
    for item in sourced:
        status = "bad" if item.node in bad else "interesting"
        out.setdefault(item.rule.symptom, []).append(
            NodeSource(node=item.node, status=status, source=_observation(item))
        )
    return out


def _job_facts(decision: Decision) -> JobFacts:
    run, end = decision.run, decision.run.end
    return JobFacts(
        scheduler=run.info.get("scheduler"),
        state=end.state if end else None,
        start=iso(run.start_ms),
        end=iso(end.time_ms) if end else None,
        nodes=sorted(run.nodes),
        user=run.info.get("user"),
        name=run.info.get("name"),
        exit_code=end.exit_code if end else None,
        signal=end.signal if end else None,
    )


def _detail(decision: Decision, responsible: list[str]) -> str:
    root = decision.root
    echoes = [i for i in decision.items if i.role in FOLLOWER_ROLES]
    downstream = sum(i.group.count for i in echoes)
    echo_nodes = {i.node for i in echoes if i.node}
    if decision.terminal_state == "success":
        return "workload completed successfully"
    if root is None:
        if decision.sub_domain == Domain.UNATTRIBUTED:
            return "no rule matched any line of this workload's nodes in its window"
        actor = f" by {decision.actor}" if decision.actor else ""
        return f"{decision.terminal_state}{actor}; no failure evidence"
    where = f" on {root.node}" if root.node else ""
    text = f"{root.rule.title}{where} at {iso(root.first_ms)}"
    if decision.uncertainty == "competing_domains":
        text += "; competing causes in " + ", ".join(decision.domains)
    elif decision.uncertainty == "secondary_only":
        text += "; only secondary symptoms, no concrete cause"
    elif decision.uncertainty == "corrected_only":
        text += "; only errors the hardware corrected: the one lead, not proof"
    if decision.systemic:
        text += f"; the same error on all {len(decision.run.nodes)} nodes: a software set-up, not one node"
    if len(responsible) > 1:
        text += "; nodes " + ", ".join(responsible)
    if downstream:
        text += f"; {downstream} downstream line(s) on {len(echo_nodes)} node(s)"
    return text
