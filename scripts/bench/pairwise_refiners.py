"""The original refiners, which compared every target with every item: O(n²) on a storm.

Kept as the reference the indexed ``correlator.refine.apply_refiners`` is tested against
(tests/correlator/test_refine_index.py) and as the same-run baseline of the storm benchmark
(``python -m scripts.bench.bench_backtest --storm 1250 --pairwise``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from correlator.refine import JudgedGroup, selects
from extractors.rule_model import RefinerRule

__all__ = ["pairwise_refiners", "using_pairwise_refiners"]


def _related(refiner: RefinerRule, target: JudgedGroup, cause: JudgedGroup) -> bool:
    gap_s = (target.first_ms - cause.first_ms) / 1000
    if refiner.relation == "after" and gap_s < 0:
        return False
    if refiner.relation == "before" and gap_s > 0:
        return False
    if refiner.within_s is not None and abs(gap_s) > refiner.within_s:
        return False
    if target.node is None and refiner.nodeless == "any_node" and refiner.scope in ("same_node", "same_entity"):
        return True
    if refiner.scope == "same_node":
        return target.node == cause.node
    if refiner.scope == "other_node":
        return target.node != cause.node
    if refiner.scope == "same_entity":
        return target.node == cause.node and target.group.first.entity == cause.group.first.entity
    return True


def _explainer(refiner: RefinerRule, target: JudgedGroup, items: list[JudgedGroup]) -> JudgedGroup | None:
    causes = (c for c in items if c is not target and selects(refiner.cause, c))
    related = [c for c in causes if _related(refiner, target, c)]
    return min(related, key=lambda c: (c.first_ms, -c.rule.priority, c.rule.id, c.node or ""), default=None)


def pairwise_refiners(items: list[JudgedGroup], refiners: tuple[RefinerRule, ...]) -> None:
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


@contextmanager
def using_pairwise_refiners() -> Iterator[None]:
    """Decide with the pairwise refiners inside the block (in this process: the backtest
    decides in its main process, whatever its worker count)."""
    import correlator.decide as decide

    indexed = decide.apply_refiners
    decide.apply_refiners = pairwise_refiners
    try:
        yield
    finally:
        decide.apply_refiners = indexed
