"""A correlator killed with -9 in the middle of a workload partition's flush (issue 11), as
tests/streams/test_torn_flush.py does for a node partition. The flush writes each changed run
record and each changed (workload, node) record, then the clock with its offset marker; a kill in
between leaves some of them newer than the marker, and the replacement applies the records after
the marker again: a run's own lines (and its direct symptoms) would count twice, and a run decided
on its node records would be decided again on half of them.

Here the kill lands at every point of every flush: the replacement ends with the uninterrupted
partition's state, and every verdict it sends again is one the uninterrupted partition sent, with
the same revision."""

from __future__ import annotations

from typing import Any

from correlator.batching import collapse_batch
from correlator.node_side import NodeEvidence
from correlator.settings import CorrelatorSettings
from extractors.matchers import ReferenceMatcher
from streams import wire
from streams.partitions import WorkloadPartition
from streams.records import JobEvent, LogLine
from tests.streams.test_torn_flush import ChangelogTable, recovered_from

T0 = 1_714_557_600_000
JOB = "4101"
NODES = tuple(f"gpu{n:05d}" for n in range(8))
SETTINGS = CorrelatorSettings(grace_s=2, tail_s=2)
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"


def _direct_oom(ruleset, at_ms: int) -> dict[str, Any]:
    """The job's own line (it names the job) on gpu00003, scanned and collapsed as the extractor does."""
    line = LogLine(OOM, "gpu00003", T0 + at_ms, "applog", f"story:@{at_ms}", JOB)
    batch = collapse_batch([line], ReferenceMatcher(ruleset).extract_batch([line]))
    assert batch.direct_groups, "the OOM line is a direct symptom of the job"
    return {"t": "groups", "items": [g.to_dict() for g in batch.direct_groups]}


def _reports(nodes: tuple[str, ...], lines: int) -> dict[str, Any]:
    return {"t": "evidences", "items": [NodeEvidence(JOB, n, [], lines, T0 + 60_000).to_dict() for n in nodes]}


def _records(ruleset) -> list[dict[str, Any]]:
    """A job's life on the workload side, 400 ms of record time apart (a flush about every third)."""
    return [
        wire.job(JobEvent("job_start", JOB, T0, NODES, origin="story:start", user="alice")),
        wire.workload_lines(JOB, 10, T0 + 10_000),
        _direct_oom(ruleset, 20_000),
        _reports(NODES[:4], 5),
        wire.workload_lines(JOB, 10, T0 + 30_000),
        wire.job(JobEvent("job_end", JOB, T0 + 60_000, NODES, origin="story:end", state="FAILED", start_ms=T0)),
        _reports(NODES[4:], 5),  # every node has reported: decided
        _direct_oom(ruleset, 61_000),  # late: revised
        wire.workload_lines(JOB, 10, T0 + 61_000),
        _reports(NODES[:1], 9),  # a node re-reports with more lines
        wire.workload_lines(JOB, 10, T0 + 62_000),
        wire.tick(),
    ]


def _run(part: WorkloadPartition, records: list[dict[str, Any]], sent: dict[int, dict]) -> None:
    for offset, record in enumerate(records):
        if part.fresh(offset):  # after a restart: the records after the recovered marker, read again
            _, verdicts = part.handle(record, 1_000 + offset * 400, offset)
            for verdict in verdicts:
                body = verdict.model_dump(mode="json")
                assert sent.setdefault(verdict.revision, body) == body, "one revision, two contents"
            part.persist()


def _held(part: WorkloadPartition) -> dict[str, Any]:
    state = part.workloads.states[JOB] if JOB in part.workloads.states else part.view[JOB]
    run = state.run
    return {
        "direct_lines": run.direct_lines,
        "direct": {key: group.count for key, group in run.direct.items()},
        "reports": {node: report.lines for node, report in state.evidence.items()},
        "revision": run.revision,
        "digest": run.last_verdict_digest,
    }


def _uninterrupted(ruleset) -> tuple[ChangelogTable, WorkloadPartition, dict[int, dict]]:
    table, sent = ChangelogTable(), {}
    part = WorkloadPartition(ruleset, SETTINGS, table, 0, 1)
    _run(part, _records(ruleset), sent)
    return table, part, sent


def _cut_points(table: ChangelogTable) -> list[int]:
    """Every length of changelog that ends inside a flush: after its intent, before its clock."""
    keys = [key for key, _ in table.changelog]
    intents = [i for i, key in enumerate(keys) if key.startswith("__flushing__")]
    clocks = [i for i, key in enumerate(keys) if key.startswith("__clock__")]
    return [cut for start, end in zip(intents, clocks, strict=True) for cut in range(start + 1, end + 1)]


def test_a_kill_anywhere_in_a_workload_flush_counts_nothing_twice_and_revises_nothing_anew(bundled_ruleset):
    records = _records(bundled_ruleset)
    table, sent = ChangelogTable(), {}
    uninterrupted = WorkloadPartition(bundled_ruleset, SETTINGS, table, 0, 1)
    _run(uninterrupted, records, sent)
    assert len([key for key, _ in table.changelog if key.startswith("__clock__")]) >= 3
    assert _held(uninterrupted)["direct_lines"] == 40 and _held(uninterrupted)["reports"][NODES[0]] == 9
    assert len(sent) >= 2, "decided, then revised by the late symptom"

    for cut in _cut_points(table):  # killed while a flush was on its way: the changelog ends inside it
        replacement = WorkloadPartition(bundled_ruleset, SETTINGS, recovered_from(table.changelog[:cut]), 0, 1)
        assert replacement.torn_flush is not None, f"changelog cut after {cut} records"
        resent: dict[int, dict] = dict(sent)  # what it sends again must be what was sent
        _run(replacement, records, resent)
        assert replacement.torn_flush is None, "read past the flush that was cut short"

        assert _held(replacement) == _held(uninterrupted), f"changelog cut after {cut} records"
        assert resent == sent, f"changelog cut after {cut} records"


def test_a_kill_in_the_flush_that_deletes_an_expired_run_neither_revives_nor_decides_it_again(bundled_ruleset):
    """Past the revision horizon the run and its node records are deleted, in one flush; a kill
    inside it leaves some deleted and some not. The replacement must not rebuild half a run from
    what is left (a verdict from half of its node records, revision 1 again) nor keep it for ever."""
    settings = CorrelatorSettings(grace_s=2, tail_s=2, revision_horizon_s=60.0)
    hours_later = [wire.watermark(T0 + 3 * 3_600_000, "extractor-a.0", 600_000)]
    records = _records(bundled_ruleset) + hours_later + [wire.tick() for _ in range(300)]  # 2 min of ticks
    table, sent = ChangelogTable(), {}
    uninterrupted = WorkloadPartition(bundled_ruleset, settings, table, 0, 1)
    _run(uninterrupted, records, sent)
    deleting = [i for i, (key, value) in enumerate(table.changelog) if value is None and JOB in key]
    assert deleting, "the run expired and its records were deleted"
    assert JOB not in uninterrupted.view and not any(JOB in key for key in table)

    flushes = [cut for cut in _cut_points(table) if cut > deleting[0] - 2 and cut <= deleting[-1] + 1]
    assert len(flushes) >= len(NODES), "a kill lands between each of the deletes"
    for cut in flushes:
        replacement = WorkloadPartition(bundled_ruleset, settings, recovered_from(table.changelog[:cut]), 0, 1)
        resent: dict[int, dict] = dict(sent)
        _run(replacement, records, resent)
        assert resent == sent, f"changelog cut after {cut} records: a verdict sent anew"
        assert JOB not in replacement.view, f"changelog cut after {cut} records: the run is back"
        left = [key for key in replacement.table if JOB in key]
        assert not left, f"changelog cut after {cut} records: {left} never deleted"
