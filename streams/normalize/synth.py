"""The lines Faultstream synthesizes from scheduler records (formats: docs/rules.md).

Rules, not code, decide what a scheduler fact means, so each record becomes one ``key=value``
line. A missing value is ``-``; whitespace inside a value becomes ``_`` (``,`` in a node list)
so every field stays one token, except the last field (``reason=``, ``message=``), which runs
to the end of the line with newlines turned into spaces.
"""

from __future__ import annotations

__all__ = ["exit_text", "job_end_line", "job_start_line", "k8s_line", "node_state_line"]


def job_end_line(
    scheduler: str,
    workload: str,
    state: str,
    exit_code: int | None,
    signal: int | None,
    failed_node: str | None,
    user: str | None,
    actor: str | None,
) -> str:
    line = (
        f"scheduler={_token(scheduler)} event=job_end workload={_token(workload)} "
        f"state={_token(state)} exit={exit_text(exit_code, signal)} "
        f"failed_node={_token(failed_node)} user={_token(user)}"
    )
    return f"{line} actor={_token(actor)}" if actor else line


def job_start_line(scheduler: str, workload: str, nodes: str | None, user: str | None) -> str:
    node_text = ",".join(part.strip(",") for part in nodes.split()) if nodes else "-"
    return (
        f"scheduler={_token(scheduler)} event=job_start workload={_token(workload)} "
        f"nodes={node_text or '-'} user={_token(user)}"
    )


def node_state_line(scheduler: str, node: str, state: str, reason: str | None) -> str:
    return (
        f"scheduler={_token(scheduler)} event=node_state node={_token(node)} "
        f"state={_token(state)} reason={_last(reason) or '-'}"
    )


def k8s_line(reason: str, kind: str, obj: str, node: str | None, message: str) -> str:
    return (
        f"k8s reason={_token(reason)} kind={_token(kind)} object={_token(obj)} "
        f"node={_token(node)} message={_last(message)}"
    )


def exit_text(exit_code: int | None, signal: int | None) -> str:
    """Slurm's ``exit:signal``; ``-`` when the exit code is unknown."""
    if exit_code is None:
        return "-"
    return f"{exit_code}:{signal or 0}"


def _token(value: str | None) -> str:
    if not value:
        return "-"
    return "_".join(value.split()) or "-"


def _last(value: str | None) -> str:
    if not value:
        return ""
    return value.replace("\r\n", " ").replace("\n", " ").replace("\r", " ")
