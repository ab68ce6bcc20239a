"""A real line means the same whatever envelope it reaches Kafka in (issue 6).

Every dev-split row of tests/corpus (the test split stays unseen) is stripped to the message its
program printed and rendered again in each envelope of tests/corpus/envelopes.py: dmesg with and
without wall clock, caller ids and ``-x`` levels, RFC 3164 / 5424, journald text and JSON (also a
byte-array MESSAGE), localized month names, rsyslog escapes, Fluent Bit and Vector records, Docker
json-file and CRI lines, ``kubectl logs --timestamps``, CRLF and NUL padding. The normalizer and
the matcher run on all of them in one batch; the engine judges each distinct piece of evidence as
``faultstream eval`` does. docs/formats.md lists the envelopes, docs/accuracy.md the figures.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from streams.evaluation import EVAL_NODE, REFERENCE_MS, LabelledLine, LineJudge, load_labels
from streams.normalize.syslog_line import parse_line_header
from tests.corpus.envelopes import ENVELOPES, HOST, EngineVerdicts, Rendering, bare_message, render

HERE = Path(__file__).parent


def _dev_rows(folder: str, healthy: bool):
    rows = load_labels([HERE / folder])
    return [r for r in rows if r.split == "dev" and (r.label == "benign") == healthy]


@pytest.fixture(scope="module")
def judge(bundled_ruleset) -> LineJudge:
    return LineJudge(bundled_ruleset)


@pytest.fixture(scope="module")
def failures(judge) -> list[Rendering]:
    return render(_dev_rows("lines", healthy=False), judge.matcher)


@pytest.fixture(scope="module")
def healthy(judge) -> list[Rendering]:
    return render(_dev_rows("healthy", healthy=True), judge.matcher)


def _by_row(renderings: list[Rendering]) -> dict[str, dict[str, Rendering]]:
    rows: dict[str, dict[str, Rendering]] = {}
    for rendering in renderings:
        rows.setdefault(rendering.row.id, {})[rendering.envelope.name] = rendering
    return rows


def test_bare_message_takes_off_exactly_the_envelopes_a_raw_line_is_rendered_in():
    message = "NVRM: Xid (PCI:0000:e4:00): 79, pid=1234, name=python, GPU has fallen off the bus."
    for envelope in ENVELOPES:
        value = envelope.render(message)
        if isinstance(value, str) and envelope.name not in ("crlf", "nul padded", "rsyslog escapes"):
            assert bare_message(value.lstrip("\x00")) == message, envelope.name


def test_every_envelope_of_every_real_line_is_read_as_one_line_never_a_dead_letter(failures, healthy):
    problems = [
        (r.row.id, r.envelope.name, r.dead or f"{len(r.lines)} lines")
        for r in failures + healthy
        if r.dead or len(r.lines) != 1
    ]
    assert not problems, problems[:10]


def test_a_failure_line_gives_the_same_verdict_symptoms_in_every_envelope_as_bare(failures, judge):
    engine = EngineVerdicts(judge)
    rows = _by_row(failures)
    assert len(rows) >= 1000 and all(len(envelopes) == len(ENVELOPES) for envelopes in rows.values())
    mismatches = Counter()
    examples = []
    for envelopes in rows.values():
        plain = engine.symptoms(envelopes["plain"])
        for name, rendering in envelopes.items():
            got = engine.symptoms(rendering)
            if got != plain:
                mismatches[name] += 1
                examples.append((rendering.row.id, name, plain, got, rendering.lines[0].text[:160]))
    assert not mismatches, (dict(mismatches), examples[:8])
    recognized = sum(bool(engine.symptoms(envelopes["plain"])) for envelopes in rows.values())
    assert recognized >= 0.95 * len(rows)  # the invariance is not the vacuous one of no symptoms


def test_the_envelope_names_the_node_not_the_words_of_the_message(failures):
    """The node is the header's or the record's host, else the Kafka key; a header in the user's
    own output (applog) names none. Rows whose message still carries a syslog header of its own
    (a format the stripper does not know) are left out: that header is text, not the envelope."""
    wrong = []
    for rendering in failures:
        message = bare_message(rendering.row.line)
        if parse_line_header(message, REFERENCE_MS)[1] is not None:
            continue
        envelope = rendering.envelope
        if envelope.in_header:
            expected = EVAL_NODE if rendering.row.arrives_on == "applog" else HOST
        else:
            expected = HOST if envelope.names_host else EVAL_NODE
        if [line.host for line in rendering.lines] != [expected]:
            wrong.append((rendering.row.id, envelope.name, [line.host for line in rendering.lines]))
    assert not wrong, (len(wrong), wrong[:10])


#: 2025-06-01T11:59:58Z, the same with the .123456 fraction, and 2024-12-07T11:59:58Z: a December
#: header without a year read in June is last December's.
T0, T123, DEC = 1_748_779_198_000, 1_748_779_198_123, 1_733_572_798_000
#: The wall-clock time in each envelope's own header (dmesg brackets count from boot: none).
HEADER_MS = {
    "dmesg -T": T0, "dmesg -T de": DEC, "dmesg -x iso": T123, "rfc3164 kernel": T0, "rfc3164 prog[pid]": T0,
    "rfc5424": T123, "rfc5424 bom": T123, "journald short-iso": T0, "journald short-iso-precise": T123,
    "journald short-precise": T123, "journald de": DEC, "journald fr": DEC, "journald es": DEC,
    "rsyslog escapes": T0, "cri-o / containerd line": T123, "cri line in fluent-bit tail": T123,
    "kubectl logs --timestamps": T123, "nul run before the line": T0,
}  # fmt: skip
#: Records without a time field of their own (journalctl's __REALTIME_TIMESTAMP is not read).
NO_TIME_FIELD = {"journalctl -o json", "journalctl -o json bytes"}


def test_the_envelopes_wall_clock_dates_the_line_in_any_locale_and_precision(failures):
    """The header's time, else the record's time field, else the Kafka timestamp; a user's header
    (applog) dates nothing."""
    wrong = []
    for rendering in failures:
        if parse_line_header(bare_message(rendering.row.line), REFERENCE_MS)[0] is not None:
            continue  # the message carries a time of its own: not the envelope's
        envelope = rendering.envelope
        header_ms = None if rendering.row.arrives_on == "applog" else HEADER_MS.get(envelope.name)
        is_record = envelope.names_host and not envelope.in_header
        field_ms = T123 if is_record and envelope.name not in NO_TIME_FIELD else None
        expected = header_ms or field_ms or REFERENCE_MS
        if [line.time_ms for line in rendering.lines] != [expected]:
            wrong.append(
                (rendering.row.id, envelope.name, [line.time_ms for line in rendering.lines], expected)
            )
    assert not wrong, (len(wrong), wrong[:10])


# Healthy rows that show a symptom bare, each decided (docs/accuracy.md, "benign false positives").
KNOWN_HEALTHY_HITS = {
    "healthy-kernel-0010",  # a boot banner: kernel.boot, shown as context
    "healthy-kernel-0071",  # the same, behind a syslog prefix
    "healthy-kernel-0157",  # mlx5 `Cable unplugged` on a port without a cable
    "fresh11a-healthy-nvidia_driver-003",  # nvidia-uvm UBSAN report (kernel.ubsan-report, weak)
    "fresh11a-healthy-nvidia_driver-006",  # RM `!rmapiLockIsOwner()` assertion
    "fresh11a-healthy-pytorch_distributed-001",  # TCPStore recvValue reset, retried and healed
    "fresh11a-healthy-pytorch_distributed-002",  # its stack header
    "fresh12a-healthy-storage-001",  # smartd `ATA error count increased` (an echo, never a cause)
    "fresh12a-healthy-storage-002",  # smartd `Self-Test Log error count increased` (the same)
}


def test_a_healthy_line_stays_healthy_in_every_envelope(healthy):
    """No envelope adds evidence to a healthy line; the few healthy lines that show a symptom bare
    show the same one in every envelope, and they are exactly the ones named in docs/accuracy.md
    (KNOWN_HEALTHY_HITS): a new one fails here until someone decides about it."""
    rows = _by_row(healthy)
    assert len(rows) >= 4000
    added = [
        (rendering.row.id, name, rendering.signature)
        for envelopes in rows.values()
        for name, rendering in envelopes.items()
        if rendering.signature != envelopes["plain"].signature
    ]
    assert not added, added[:10]
    showing = {row for row, envelopes in rows.items() if envelopes["plain"].signature}
    assert showing <= KNOWN_HEALTHY_HITS, sorted(showing - KNOWN_HEALTHY_HITS)


def test_a_rules_own_examples_fire_in_every_envelope_their_bare_message_fires_in(bundled_ruleset, judge):
    """Beyond the corpus: each rule's match examples, stripped and re-rendered. A rule anchored at
    the start of the line (``^Call Trace:``) misses the same line behind a container runtime's or
    a syslog daemon's prefix."""
    examples = [
        LabelledLine(
            id=f"{rule.id}#{k}", family="rules", line=example.line, source_url="rules/", label="echo",
            source=example.source or rule.sources[0],
        )
        for rule in bundled_ruleset.symptom_rules
        for k, example in enumerate(rule.examples.match)
    ]  # fmt: skip
    rows = _by_row(render(examples, judge.matcher))
    assert len(rows) >= 1000
    missed = []
    for row_id, envelopes in rows.items():
        rule_id = row_id.partition("#")[0]
        if rule_id not in {evidence[0] for evidence in envelopes["plain"].signature}:
            continue  # the bare message lost what the rule needs (a "prog[pid]:" tag, say)
        missed += [
            (rule_id, name, rendering.lines[0].text[:120] if rendering.lines else rendering.dead)
            for name, rendering in envelopes.items()
            if rule_id not in {evidence[0] for evidence in rendering.signature}
        ]
    assert not missed, (len(missed), missed[:10])
