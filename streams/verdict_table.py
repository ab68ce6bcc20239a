"""A fixed-width verdict table for people (``backtest --format table``, ``faultstream verdicts``)."""

from __future__ import annotations

from collections.abc import Sequence

from correlator.verdict import Verdict

__all__ = ["verdict_table"]

COLUMNS = (("WORKLOAD", 14), ("END", 20), ("OUTCOME", 24), ("NODES", 18), ("ROOT SYMPTOM", 30), ("REV", 3))


def _row(verdict: Verdict) -> tuple[str, ...]:
    root = verdict.root_symptom
    root_text = f"{root.symptom}" if root else "-"
    nodes = ",".join(verdict.responsible_nodes) or "-"
    end = (verdict.job.end or "-")[:19]
    return (verdict.workload_id, end, verdict.verdict.attribution_outcome, nodes, root_text, str(verdict.revision))


def verdict_table(verdicts: Sequence[Verdict]) -> str:
    header = "  ".join(name.ljust(width) for name, width in COLUMNS)
    rows = []
    for verdict in verdicts:
        cells = _row(verdict)
        rows.append("  ".join(cell[: max(width, 1) + 12].ljust(width) for cell, (_, width) in zip(cells, COLUMNS)))
    return "\n".join([header, *rows]) if rows else header + "\n(no verdicts)"
