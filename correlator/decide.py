"""Decide a verdict from one workload run and the evidence gathered for it.

The steps, each a small function below:

1. items: every evidence group becomes a :class:`JudgedGroup` with its rule's role; benign ones are
   dropped and groups entirely before the run started become ``context``;
2. refiners demote echoes, companions and context (``rules/refiners``);
3. the terminal state comes from the scheduler (markers in the logs refine a cancellation);
4. the remaining causes decide the domain: the *strong* ones (priority ≥ 50) if any; several
   domains among them → ``ambiguous`` naming each; none at all → ``unattributed`` (or the
   cancellation actor / time limit for cancel and timeout);
5. the chain lists every item collapsed across nodes, with its role in the cascade.
"""

from __future__ import annotations

from correlator.decision import Decision, blamed_nodes
from correlator.evidence import EvidenceGroup
from correlator.peers import explain_named_peers, node_addresses
from correlator.refine import JudgedGroup, apply_refiners
from correlator.teardown import KILL, explain_kill_teardown
from correlator.verdict import Verdict
from correlator.verdict_build import build_verdict
from correlator.workload import WorkloadRun
from extractors.loader import Ruleset
from extractors.vocabulary import CAUSE_ROLES, FOLLOWER_ROLES, Domain, Role

__all__ = ["STRONG_PRIORITY", "decide"]

#: Causes at or above this priority outweigh weaker ones (docs/rules.md, "Priority").
STRONG_PRIORITY = 50
#: Causes first seen within this many ms of the earliest compete on priority for the root.
ROOT_TIE_MS = 2_000

TERMINAL = {
    "COMPLETED": "success",
    "FAILED": "fail",
    "NODE_FAIL": "fail",
    "OUT_OF_MEMORY": "fail",
    "BOOT_FAIL": "fail",
    "TIMEOUT": "timeout",
    "DEADLINE": "timeout",
    "CANCELLED": "cancel",
    "PREEMPTED": "cancel",
}


def decide(
    run: WorkloadRun, groups: list[EvidenceGroup], ruleset: Ruleset, rules_by_id: dict, lines_seen: int
) -> Verdict:
    items = _items(run, groups, rules_by_id)
    apply_refiners(items, ruleset.refiners)
    explain_named_peers(items, node_addresses(groups), run.nodes)
    terminal, actor = _terminal_state(run, items)
    if terminal in ("cancel", "timeout"):
        explain_kill_teardown(run, items)
    decision = _decision(run, items, terminal, actor)
    return build_verdict(decision, ruleset.version, lines_seen)


def _items(run: WorkloadRun, groups: list[EvidenceGroup], rules_by_id: dict) -> list[JudgedGroup]:
    items = []
    for group in groups:
        rule = rules_by_id.get(group.first.rule_id)
        if rule is None or rule.role == Role.BENIGN:
            continue  # a rule removed since the symptom was extracted, or matched to be ignored
        item = JudgedGroup(group=group, rule=rule, role=rule.role)
        if run.start_ms is not None and group.last_ms < run.start_ms and rule.role in CAUSE_ROLES:
            item.pre_start = True
            if "condition" not in rule.tags:  # a node condition (no driver, FM down) still holds
                item.role = Role.CONTEXT
        items.append(item)
    items.sort(key=lambda i: (i.first_ms, i.rule.id, i.node or "", i.group.first.line))
    return items


def _scheduler_state(run: WorkloadRun) -> str | None:
    if run.end is None:
        return None
    if run.end.state:
        return run.end.state.upper()
    if run.end.exit_code is not None:
        return "COMPLETED" if run.end.exit_code == 0 and not run.end.signal else "FAILED"
    return None


def _terminal_state(run: WorkloadRun, items: list[JudgedGroup]) -> tuple[str, str | None]:
    state = _scheduler_state(run)
    terminal = TERMINAL.get(state or "", "fail")
    markers = {i.rule.marker: i for i in items if i.role == Role.MARKER}
    actor = run.end.actor if run.end else None
    # a plain FAILED (a batch script that went on after its step was killed, a pod) says less
    # than the kill line slurmstepd wrote: the line decides
    generic = state in (None, "FAILED") and terminal == "fail"
    if state == "PREEMPTED" or ((terminal == "cancel" or generic) and "preempted" in markers):
        return "cancel", actor or "scheduler (preemption)"
    if (terminal == "cancel" or generic) and "timeout" in markers:
        return "timeout", "scheduler (time limit)"
    if terminal == "cancel" or (generic and "cancelled" in markers):
        return "cancel", actor or _actor_from_markers(items) or _owner(run)
    return terminal, None


def _owner(run: WorkloadRun) -> str:
    """A cancel nobody else claims (no preemption, time limit or operator named): the job's
    owner's own ``scancel``, by far the most common plain CANCELLED."""
    return str(run.info.get("user") or "user")


def _actor_from_markers(items: list[JudgedGroup]) -> str | None:
    """Who cancelled, from the earliest cancel marker that says (slurmctld logs the uid)."""
    for item in items:
        if item.role == Role.MARKER and item.rule.marker == "cancelled":
            captures = item.group.first.captures
            if captures.get("actor"):
                return captures["actor"]
            if captures.get("uid"):
                return f"uid {captures['uid']}"
    return None


def _pick_root(considered: list[JudgedGroup]) -> JudgedGroup:
    earliest = min(i.first_ms for i in considered)
    close = [i for i in considered if i.first_ms - earliest <= ROOT_TIE_MS]
    return min(close, key=lambda i: (-i.rule.priority, i.first_ms, i.rule.id, i.node or ""))


def _decision(run: WorkloadRun, items: list[JudgedGroup], terminal: str, actor: str | None) -> Decision:
    causes = [i for i in items if i.role in CAUSE_ROLES]
    strong = [i for i in causes if i.rule.priority >= STRONG_PRIORITY]
    considered = strong if strong or terminal in ("cancel", "timeout") else _own_faults_first(causes)
    base = Decision(run, items, terminal, None, [], considered, None, None, actor)
    if terminal == "success":
        base.considered = []
        return base
    if considered:
        return _from_causes(base, considered, weak=not strong)
    return _without_causes(base)


def _own_faults_first(causes: list[JudgedGroup]) -> list[JudgedGroup]:
    """Among weak causes, a node's own fault outranks what survivors log about their peers
    (``transport``): the refiners do this for strong faults, a weak one deserves it too."""
    own = [i for i in causes if "transport" not in i.rule.tags]
    return own or causes


def _from_causes(base: Decision, considered: list[JudgedGroup], weak: bool) -> Decision:
    domains = _ranked_domains(considered)
    base.root = _pick_root(considered)
    base.domains = domains
    if _systemic(base.run, considered):
        # one bad link or card shows on one node; the same NIC error on every node at once is
        # how the stack is set up (GPUDirect, peer memory, a wrong HCA), not a part that broke
        base.sub_domain, base.domains, base.systemic = Domain.SYSTEM_SOFTWARE, [Domain.SYSTEM_SOFTWARE], True
        return base
    if len(domains) > 1:
        base.sub_domain, base.uncertainty = Domain.AMBIGUOUS, "competing_domains"
        return base
    base.sub_domain = domains[0]
    # weak first: weak causes on several nodes are no stronger for being many, and a remediation
    # consumer acts on `multiple_nodes` (drains every node named), never on `weak_evidence`
    if weak:
        base.uncertainty = "weak_evidence"
    elif len(blamed_nodes(considered)) > 1:
        base.uncertainty = "multiple_nodes"
    return base


#: Tags of symptoms that, seen on every node of a run, point at the software set-up.
SYSTEMIC_TAGS = frozenset({"nic", "transport", "fabric"})


def _systemic(run: WorkloadRun, considered: list[JudgedGroup]) -> bool:
    """Every deciding cause is a NIC / transport error, and one of them was logged by every node.
    Not when a deciding cause is the user's: a job's own NCCL setting naming an interface no node
    has (`NCCL_SOCKET_IFNAME`) fails on every node too, and it is still the job's."""
    if len(run.nodes) < 2 or not all(SYSTEMIC_TAGS & set(i.rule.tags) for i in considered):
        return False
    if any(i.rule.domain == Domain.USER for i in considered):
        return False
    nodes_by_symptom: dict[str, set[str]] = {}
    for item in considered:
        nodes_by_symptom.setdefault(item.rule.symptom, set()).add(item.node or "")
    return any(run.nodes <= nodes for nodes in nodes_by_symptom.values())


def _ranked_domains(items: list[JudgedGroup]) -> list[str]:
    best: dict[str, tuple[int, int]] = {}
    for item in items:
        rank = (-item.rule.priority, item.first_ms)
        best[item.rule.domain] = min(best.get(item.rule.domain, rank), rank)
    return sorted(best, key=lambda d: best[d])


def _without_causes(base: Decision) -> Decision:
    run, terminal = base.run, base.terminal_state
    echoes = [i for i in base.items if i.role in FOLLOWER_ROLES and not i.pre_start and i.explained_by != KILL]
    if terminal == "timeout" and not echoes:
        base.sub_domain, base.domains = Domain.USER, [Domain.USER]
        return base
    if terminal == "cancel":
        base.sub_domain = _cancel_domain(run, base.actor)
        base.domains = [base.sub_domain] if base.sub_domain != Domain.UNATTRIBUTED else []
        base.uncertainty = "no_evidence" if base.sub_domain == Domain.UNATTRIBUTED else None
        return base
    if echoes:
        base.root = min(echoes, key=lambda i: (i.first_ms, -i.rule.priority, i.rule.id))
        base.sub_domain, base.uncertainty = Domain.AMBIGUOUS, "secondary_only"
        base.domains = [d for d in _ranked_domains(echoes) if d != Domain.NONE]
        return base
    corrected = _corrected_errors(base) if terminal == "fail" else []
    if corrected:
        return _from_corrected(base, corrected)
    base.sub_domain, base.uncertainty = Domain.UNATTRIBUTED, "no_evidence"
    return base


def _corrected_errors(base: Decision) -> list[JudgedGroup]:
    """Hardware errors the hardware corrected, logged by the run's nodes while it ran."""
    started = base.run.start_ms
    return [
        i
        for i in base.items
        if i.role == Role.CONTEXT
        and "corrected" in i.rule.tags
        and (started is None or i.group.last_ms >= started)
        and i.explained_by is None
        and (i.node is None or i.node in base.run.nodes)
    ]


def _from_corrected(base: Decision, corrected: list[JudgedGroup]) -> Decision:
    """A failed job with nothing but corrected hardware errors: the hardware is the only lead,
    so the verdict names it and its node(s), but as ``corrected_only``. Unattributed would hide
    the one thing the logs say; a plain hardware verdict would drain a node whose errors were
    all fixed. Remediation acts on neither (docs/verdict.md)."""
    base.considered = corrected
    base.root = min(corrected, key=lambda i: (i.first_ms, -i.rule.priority, i.rule.id, i.node or ""))
    base.sub_domain, base.domains, base.uncertainty = Domain.HARDWARE, [Domain.HARDWARE], "corrected_only"
    return base


def _cancel_domain(run: WorkloadRun, actor: str | None) -> str:
    if actor is None:
        return Domain.UNATTRIBUTED
    if actor.startswith("scheduler"):
        return Domain.INFRASTRUCTURE
    user = run.info.get("user")
    uid = run.end.extra.get("user_id") if run.end else None
    if actor in (user, f"uid {uid}") or actor == "user":
        return Domain.USER
    return Domain.INFRASTRUCTURE
