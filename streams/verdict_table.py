"""A fixed-width verdict table for people (``backtest --format table``, ``faultstream verdicts``)."""

from __future__ import annotations

from collections.abc import Sequence

from correlator.verdict import Verdict
from streams.terminal import printable

__all__ = ["verdict_table"]

COLUMNS = (("WORKLOAD", 20), ("END", 19), ("OUTCOME", 22), ("NODES", 16), ("ROOT SYMPTOM", 30), ("REV", 3))


def _row(verdict: Verdict) -> tuple[str, ...]:
    root = verdict.root_symptom
    root_text = f"{root.symptom}" if root else "-"
    nodes = ",".join(verdict.responsible_nodes) or "-"
    end = (verdict.job.end or "-")[:19]
    return (
        verdict.workload_id,
        end,
        verdict.verdict.attribution_outcome,
        nodes,
        root_text,
        str(verdict.revision),
    )


def _fit(cell: str, width: int) -> str:
    """Pad to the column; an over-long cell may spill a little rather than lose its meaning.
    Cells come from log lines (node names): printed with their control characters escaped."""
    return printable(cell, width + 12).ljust(width)


def verdict_table(verdicts: Sequence[Verdict]) -> str:
    header = "  ".join(name.ljust(width) for name, width in COLUMNS)
    widths = [width for _, width in COLUMNS]
    rows = ["  ".join(_fit(c, w) for c, w in zip(_row(v), widths, strict=True)) for v in verdicts]
    return "\n".join([header, *rows]) if rows else header + "\n(no verdicts)"
