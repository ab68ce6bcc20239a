"""Refiners: cascade knowledge from ``rules/refiners`` applied to one workload's evidence.

Each :class:`Item` starts with its rule's role. Refiners run in order; within one refiner every
demotion is decided against the roles as they stood before it, so the result does not depend on
the order of the evidence.
"""

from __future__ import annotations

from dataclasses import dataclass

from correlator.evidence import EvidenceGroup
from extractors.rule_model import RefinerRule, Selector, SymptomRule

__all__ = ["CAUSE_ROLES", "Item", "apply_refiners", "selects"]

CAUSE_ROLES = ("cause", "companion")


@dataclass(slots=True)
class Item:
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


def selects(selector: Selector, item: Item) -> bool:
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


def _related(refiner: RefinerRule, target: Item, cause: Item) -> bool:
    gap_s = (target.first_ms - cause.first_ms) / 1000
    if refiner.relation == "after" and gap_s < 0:
        return False
    if refiner.relation == "before" and gap_s > 0:
        return False
    if refiner.within_s is not None and abs(gap_s) > refiner.within_s:
        return False
    if refiner.scope == "same_node":
        return target.node == cause.node
    if refiner.scope == "other_node":
        return target.node != cause.node
    if refiner.scope == "same_entity":
        same_entity = target.group.first.entity == cause.group.first.entity
        return target.node == cause.node and same_entity
    return True


def _explainer(refiner: RefinerRule, target: Item, items: list[Item]) -> Item | None:
    causes = (c for c in items if c is not target and selects(refiner.cause, c))
    related = [c for c in causes if _related(refiner, target, c)]
    return min(related, key=lambda c: (c.first_ms, -c.rule.priority, c.rule.id, c.node or ""), default=None)


def apply_refiners(items: list[Item], refiners: tuple[RefinerRule, ...]) -> None:
    """Demote, in place, every item a refiner explains by another item."""
    for refiner in refiners:
        decided = []
        for target in items:
            if target.role in ("benign", "marker") or not selects(refiner.target, target):
                continue
            cause = _explainer(refiner, target, items)
            if cause is not None:
                decided.append((target, cause))
        for target, cause in decided:
            target.role = refiner.set_role
            target.explained_by = f"{refiner.id} <- {cause.rule.id}@{cause.node}"
