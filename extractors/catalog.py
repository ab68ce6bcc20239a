"""Write the rule catalog (docs/rule-catalog.md) from the rules: docs that cannot rot.

    python -m extractors.catalog > docs/rule-catalog.md

A test fails when the checked-in catalog differs from what the rules say.
"""

from __future__ import annotations

import sys
from collections import defaultdict

from extractors.loader import Ruleset, load_ruleset

__all__ = ["render_catalog"]


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def render_catalog(ruleset: Ruleset) -> str:
    families: dict[str, list] = defaultdict(list)
    for rule in ruleset.symptom_rules:
        families[ruleset.paths[rule.id].split("/")[1]].append(rule)
    out = [
        "# Rule catalog",
        "",
        f"Generated from `rules/` by `python -m extractors.catalog` — ruleset `{ruleset.name}` "
        f"{ruleset.semver}: {len(ruleset.symptom_rules)} symptom rules, {len(ruleset.refiners)} refiners. "
        "Schema and meaning of each column: docs/rules.md.",
        "",
    ]
    for family in sorted(families):
        out += [
            f"## {family}",
            "",
            "| id | symptom | domain | role | priority | catalog | title |",
            "|---|---|---|---|---|---|---|",
        ]
        for rule in families[family]:
            out.append(
                f"| `{rule.id}` | {rule.symptom} | {rule.domain} | {rule.role} | {rule.priority} | "
                f"{rule.catalog_id or ''} | {_cell(rule.title)} |"
            )
        out.append("")
    out += [
        "## Refiners",
        "",
        "| order | id | target | cause | relation | scope | sets | title |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for refiner in ruleset.refiners:
        target = refiner.target.model_dump(mode="json", exclude_defaults=True)
        cause = refiner.cause.model_dump(mode="json", exclude_defaults=True)
        within = f" ≤{refiner.within_s:g}s" if refiner.within_s is not None else ""
        out.append(
            f"| {refiner.order} | `{refiner.id}` | {_cell(str(target))} | {_cell(str(cause))} | "
            f"{refiner.relation}{within} | {refiner.scope} | {refiner.set_role} | {_cell(refiner.title)} |"
        )
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render_catalog(load_ruleset(sys.argv[1] if len(sys.argv) > 1 else None)))
