"""Refiners: cascade knowledge from ``rules/refiners`` applied to one workload's evidence.

Each :class:`JudgedGroup` starts with its rule's role. Refiners run in order; within one refiner every
demotion is decided against the roles as they stood before it, so the result does not depend on
the order of the evidence.

A target's explainer is the least related cause by (first_ms, -priority, rule id, node). A
storm has tens of thousands of items, so causes are not compared pairwise: per refiner they are
sorted by that key once, in one list per scope (the whole job, a node, a node and entity), and
each target looks up the first cause whose time falls in its window by bisection: O(n log n).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import dataclass

from correlator.evidence import EvidenceGroup
from extractors.rule_model import RefinerRule, Selector, SymptomRule
from extractors.vocabulary import Role

__all__ = ["JudgedGroup", "apply_refiners", "selects"]

UNBOUNDED = 2**62


@dataclass(slots=True)
class JudgedGroup:
    """One evidence group under judgement, with the role it currently plays."""

    group: EvidenceGroup
    rule: SymptomRule
    role: str
    explained_by: str | None = None  # "refiner-id <- rule-id@node" once demoted
    pre_start: bool = False

    @property
    def node(self) -> str | None:
        return self.group.node

    @property
    def first_ms(self) -> int:
        return self.group.first_ms


def selects(selector: Selector, item: JudgedGroup) -> bool:
    rule, role = item.rule, item.role
    checks = (
        not selector.symptoms or rule.symptom in selector.symptoms,
        not selector.symptom_prefixes or rule.symptom.startswith(tuple(selector.symptom_prefixes)),
        not selector.rules or rule.id in selector.rules,
        not selector.tags or bool(set(selector.tags) & set(rule.tags)),
        not (set(selector.exclude_tags) & set(rule.tags)),
        not selector.catalog_prefixes or (rule.catalog_id or "").startswith(tuple(selector.catalog_prefixes)),
        not selector.domains or rule.domain in selector.domains,
        role in selector.roles,
        not selector.sources or item.group.first.source in selector.sources,
        rule.priority >= selector.min_priority,
    )
    return all(checks)


class _Selection:
    """``selects`` memoized: it depends only on the rule, the role and the line's source."""

    def __init__(self, selector: Selector) -> None:
        self.selector = selector
        self.seen: dict[tuple[str, str, str], bool] = {}

    def __call__(self, item: JudgedGroup) -> bool:
        key = (item.rule.id, item.role, item.group.first.source)
        chosen = self.seen.get(key)
        if chosen is None:
            chosen = self.seen[key] = selects(self.selector, item)
        return chosen


def _max_gap_ms(within_s: float | None) -> int:
    """The largest gap in ms that ``abs(gap_ms / 1000) <= within_s`` allows (exactly the float
    test the refiners have always used, so a boundary case is decided as before)."""
    if within_s is None:
        return UNBOUNDED
    gap = math.floor(within_s * 1000)
    while (gap + 1) / 1000 <= within_s:
        gap += 1
    while gap >= 0 and gap / 1000 > within_s:
        gap -= 1
    return gap


#: the scopes that match a target to causes by its node (``nodeless`` applies to these)
_NODE_SCOPES = ("same_node", "same_entity")


def _explainer_key(cause: JudgedGroup) -> tuple[int, int, str, str]:
    return (cause.first_ms, -cause.rule.priority, cause.rule.id, cause.node or "")


class _Causes:
    """One scope's causes, sorted by the explainer key, with their times for bisection and, for
    ``other_node``, where the next cause on a different node starts."""

    def __init__(self, causes: list[JudgedGroup], skip_same_node: bool = False) -> None:
        self.items = causes
        self.times = [c.first_ms for c in causes]
        self.next_other_node: list[int] = []
        if skip_same_node:
            nxt = [len(causes)] * len(causes)
            for i in range(len(causes) - 2, -1, -1):
                nxt[i] = i + 1 if causes[i + 1].node != causes[i].node else nxt[i + 1]
            self.next_other_node = nxt

    def first(
        self, lo_ms: int, hi_ms: int, target: JudgedGroup, other_node: bool = False
    ) -> JudgedGroup | None:
        """The least cause with lo_ms <= first_ms <= hi_ms that is not the target (and, for
        ``other_node``, is on another node)."""
        i = bisect_left(self.times, lo_ms)
        while i < len(self.items):  # at most three steps: over the target's node, the target
            cause = self.items[i]
            if cause.first_ms > hi_ms:
                return None
            if other_node and cause.node == target.node:
                i = self.next_other_node[i]
            elif cause is target:
                i += 1
            else:
                return cause
        return None


class _Explainers:
    """Per refiner: its causes indexed so that each target finds its explainer in O(log n)."""

    def __init__(self, refiner: RefinerRule, items: list[JudgedGroup]) -> None:
        self.refiner = refiner
        self.gap_ms = _max_gap_ms(refiner.within_s)
        is_cause = _Selection(refiner.cause)
        causes = sorted((c for c in items if is_cause(c)), key=_explainer_key)  # stable: ties keep item order
        self.by_scope: dict[object, _Causes] = {}
        self._all_causes = causes
        self._job_wide: _Causes | None = None
        if refiner.scope in ("any_node", "other_node"):
            self.by_scope[None] = _Causes(causes, skip_same_node=refiner.scope == "other_node")
        else:
            grouped: dict[object, list[JudgedGroup]] = {}
            for cause in causes:
                grouped.setdefault(self._scope_key(cause), []).append(cause)
            self.by_scope = {key: _Causes(group) for key, group in grouped.items()}

    def _scope_key(self, item: JudgedGroup) -> object:
        if self.refiner.scope == "same_node":
            return item.node
        if self.refiner.scope == "same_entity":
            return (item.node, item.group.first.entity)
        return None

    def __call__(self, target: JudgedGroup) -> JudgedGroup | None:
        causes = self.by_scope.get(self._scope_key(target))
        if target.node is None and self.refiner.nodeless == "any_node" and self.refiner.scope in _NODE_SCOPES:
            # a symptom of no node (a NODE_FAIL job record that does not name the failed node) has
            # no node to match: the refiner lets a cause on any node of the run explain it
            if self._job_wide is None:
                self._job_wide = _Causes(self._all_causes)
            causes = self._job_wide
        if causes is None:
            return None
        t, relation = target.first_ms, self.refiner.relation
        lo, hi = t - self.gap_ms, t + self.gap_ms
        if relation == "after":
            hi = t  # the cause came first (or in the same ms)
        elif relation == "before":
            lo = t
        return causes.first(lo, hi, target, other_node=self.refiner.scope == "other_node")


def apply_refiners(items: list[JudgedGroup], refiners: tuple[RefinerRule, ...]) -> None:
    """Demote, in place, every item a refiner explains by another item."""
    for refiner in refiners:
        is_target = _Selection(refiner.target)
        explainer = _Explainers(refiner, items)
        decided = []
        for target in items:
            if target.role in (Role.BENIGN, Role.MARKER) or not is_target(target):
                continue
            cause = explainer(target)
            if cause is not None:
                decided.append((target, cause))
        for target, cause in decided:
            target.role = refiner.set_role
            target.explained_by = f"{refiner.id} <- {cause.rule.id}@{cause.node}"
