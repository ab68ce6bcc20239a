"""The indexed refiners choose exactly the explainer the pairwise comparison chose.

``pairwise_refiners`` is the original quadratic implementation, kept as the reference (and the
storm benchmark's baseline): for every target it compared every item. Random evidence from the
bundled rules (few nodes and entities, close times, so that scopes, windows and ties all occur)
must get the same roles and the same ``explained_by`` from both.
"""

from __future__ import annotations

import random
import time

import pytest

from correlator.evidence import EvidenceGroup
from correlator.refine import JudgedGroup, apply_refiners
from extractors.symptom import Symptom
from scripts.bench.pairwise_refiners import pairwise_refiners

T0 = 1_714_557_600_000


def _random_items(rng: random.Random, rules, count: int) -> list[JudgedGroup]:
    items = []
    for index in range(count):
        rule = rng.choice(rules)
        node = rng.choice(["gpu001", "gpu002", "gpu003", None])
        # whole seconds and the exact window edges (60, 300, 600, 900 s) make ties and boundaries
        ms = (
            T0
            + rng.choice([0, 1, 59, 60, 61, 299, 300, 301, 600, 900, 901, 3600]) * 1000
            + rng.choice([0, 0, 1])
        )
        entity = rng.choice([(), ("0",), ("1",)])
        source = rng.choice(rule.sources)
        symptom = Symptom(
            rule.id,
            rule.symptom,
            rule.domain,
            rule.role,
            rule.priority,
            rule.catalog_id,
            rule.marker,
            node,
            ms,
            source,
            f"line {index}",
            f"t:0:{index}",
            entity=entity,
        )
        items.append(
            JudgedGroup(EvidenceGroup.start(symptom), rule, rng.choice([rule.role, rule.role, "context"]))
        )
    items.sort(key=lambda i: (i.first_ms, i.rule.id, i.node or "", i.group.first.line))
    return items


@pytest.mark.parametrize("seed", range(40))
def test_indexed_refiners_pick_the_same_explainer_as_comparing_every_pair(bundled_ruleset, seed):
    rng = random.Random(seed)
    refiners = bundled_ruleset.refiners
    # the rules refiners name (as target or cause) and a few others
    rules = [r for r in bundled_ruleset.symptom_rules if r.role != "benign"]
    chosen = rng.sample(rules, 12) + [
        r for r in rules if {"xid", "transport", "node_loss", "reboot"} & set(r.tags)
    ]
    items = _random_items(rng, chosen, 150)
    twins = [JudgedGroup(i.group, i.rule, i.role) for i in items]
    apply_refiners(items, refiners)
    pairwise_refiners(twins, refiners)
    assert [(i.role, i.explained_by) for i in items] == [(t.role, t.explained_by) for t in twins]
    assert any(i.explained_by for i in items), "the sample exercised no refiner"


def test_a_storm_of_twenty_thousand_symptoms_is_refined_in_well_under_a_second(bundled_ruleset):
    """The pairwise version took minutes here (56.7 M selector calls for 20k symptoms)."""
    rules = {r.id: r for r in bundled_ruleset.symptom_rules}
    xid = next(r for r in rules.values() if "xid" in r.tags and r.priority >= 60 and r.domain == "hardware")
    transport = next(r for r in rules.values() if "transport" in r.tags and r.role == "cause")

    def item(rule, node, ms, n):
        symptom = Symptom(
            rule.id,
            rule.symptom,
            rule.domain,
            rule.role,
            rule.priority,
            rule.catalog_id,
            rule.marker,
            node,
            ms,
            rule.sources[0],
            f"line {n}",
            f"t:0:{n}",
        )
        return JudgedGroup(EvidenceGroup.start(symptom), rule, rule.role)

    items = [item(xid, "gpu0007", T0, 0)]
    items += [item(transport, f"gpu{n % 1250:04d}", T0 + 1000 + n * 7, n) for n in range(20_000)]
    started = time.perf_counter()
    apply_refiners(items, bundled_ruleset.refiners)
    elapsed = time.perf_counter() - started
    assert all(i.role == "downstream" for i in items[1:] if i.first_ms - T0 <= 900_000)
    assert elapsed < 2.0, f"{elapsed:.2f} s"
