"""What a scheduler's kill leaves behind is its echo, not a cause.

When Slurm ends a job at its time limit or on ``scancel``, it signals every task at once: the
survivors' NCCL sockets close, the launcher reports killed ranks, the driver cleans up channels
(Xid 45). All of that starts at the kill, so from the kill on such symptoms are downstream of it.
A collective that hung *before* the kill is not touched: a walltime reached after a hang is still
worth an ``ambiguous``.
"""

from __future__ import annotations

from correlator.refine import JudgedGroup
from correlator.workload import WorkloadRun
from extractors.vocabulary import CAUSE_ROLES, Role

__all__ = ["KILL", "TEARDOWN_TAGS", "explain_kill_teardown", "kill_time_ms"]

#: What a kill produces on every rank: closed transports, killed-task reports, channel cleanup,
#: collectives that can no longer finish. (Echo-role symptoms after the kill are its echo too.)
TEARDOWN_TAGS = frozenset(
    {"transport", "process_teardown", "xid_companion", "crash_consequence", "collective_hang"}
)
#: Lines this long before a logged kill still count as its echo (clocks of nodes differ a little).
KILL_SLACK_MS = 10_000
#: Without a kill line, the job-end record is the reference: Slurm sends SIGTERM, waits KillWait
#: (30 s by default) and only then records the end, so the teardown starts up to that much earlier.
END_SLACK_MS = 60_000
#: ``explained_by`` of what the kill explains.
KILL = "scheduler kill"
_KILL_MARKERS = ("timeout", "cancelled", "preempted")
_TEARDOWN_ROLES = (*CAUSE_ROLES, Role.ECHO)


def kill_time_ms(run: WorkloadRun, items: list[JudgedGroup]) -> int | None:
    """The earliest moment the scheduler's kill can have started: its first kill marker (less a
    little clock skew), else the job's end less the kill wait."""
    marks = [i.first_ms for i in items if i.role == Role.MARKER and i.rule.marker in _KILL_MARKERS]
    if marks:
        return min(marks) - KILL_SLACK_MS
    return run.end_ms - END_SLACK_MS if run.end_ms is not None else None


def explain_kill_teardown(run: WorkloadRun, items: list[JudgedGroup]) -> None:
    """Demote, in place, teardown symptoms that start at (or just before) the kill."""
    kill_ms = kill_time_ms(run, items)
    if kill_ms is None:
        return
    for item in items:
        if item.role not in _TEARDOWN_ROLES:
            continue
        if item.role != Role.ECHO and not (TEARDOWN_TAGS & set(item.rule.tags)):
            continue
        if item.first_ms >= kill_ms:
            item.role, item.explained_by = Role.DOWNSTREAM, KILL
    _follow_kill_echoes(items, kill_ms)


def _follow_kill_echoes(items: list[JudgedGroup], kill_ms: int) -> None:
    """A refiner may already have made a teardown symptom the echo of another one (a survivor's
    watchdog hang of a peer's `unhandled system error`); once that one is the kill's echo, so is
    the hang: otherwise it would stand as an unexplained echo and make a walltime ``ambiguous``."""
    killed = {(i.rule.id, i.node) for i in items if i.explained_by == KILL}
    for item in items:
        if item.role != Role.DOWNSTREAM or item.explained_by in (None, KILL) or item.first_ms < kill_ms:
            continue
        if not TEARDOWN_TAGS & set(item.rule.tags):
            continue
        rule_id, _, node = item.explained_by.rpartition(" <- ")[2].partition("@")
        if (rule_id, None if node in ("", "None") else node) in killed:
            item.explained_by = KILL
