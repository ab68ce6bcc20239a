"""Build valid verdicts for sink tests: ``make_verdict("job-1", revision=2, nodes=["n7"])``."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from correlator.verdict import Verdict
from correlator.verdict_build import DOMAIN_LABELS

__all__ = ["make_verdict", "run"]


def make_verdict(
    workload_id: str,
    *,
    revision: int = 1,
    terminal_state: str = "fail",
    sub_domain: str | None = "hardware",
    nodes: list[str] | None = None,
    end: str | None = "2026-03-01T12:00:00.000Z",
) -> dict:
    """A verdict as the pipeline ships it: validated by the model, then dumped to JSON types."""
    nodes = ["node-1"] if nodes is None else nodes
    outcome = terminal_state.capitalize()
    if sub_domain:
        outcome += " " + DOMAIN_LABELS[sub_domain]
    return Verdict.model_validate(
        {
            "workload_id": workload_id,
            "run_start": "2026-03-01T11:00:00.000Z",
            "terminal_state": terminal_state,
            "sub_domain": sub_domain,
            "failure_domains": [sub_domain] if sub_domain else [],
            "responsible_nodes": nodes,
            "root_symptom": None,
            "chain": [],
            "uncertainty_type": None,
            "cancellation_actor": None,
            "detail": f"test verdict, revision {revision}",
            "job": {
                "scheduler": "slurm",
                "state": "FAILED",
                "start": "2026-03-01T11:00:00.000Z",
                "end": end,
                "nodes": sorted({*nodes, "node-1"}),
                "user": "alice",
                "name": "train",
                "exit_code": 1,
                "signal": None,
            },
            "ruleset_version": "0.0.0-test",
            "lines_seen": 10,
            "symptoms_seen": 1,
            "revision": revision,
            "verdict": {
                "root_symptom": None,
                "attribution_outcome": outcome,
                "detail": "test",
                "terminal_states": [terminal_state.capitalize()],
                "failure_domains": [DOMAIN_LABELS[sub_domain]] if sub_domain else [],
                "cancellation_actors": [],
                "uncertainty_type": None,
            },
            "symptoms": {},
        }
    ).model_dump(mode="json")


def run(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run one story's async part; asyncio.run also joins the loop's executor threads."""
    return asyncio.run(coro)
