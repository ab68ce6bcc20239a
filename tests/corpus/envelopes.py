"""The envelopes a real log line reaches Kafka in: one bare message, many renderings.

``bare_message`` strips a corpus line's own prefix (syslog / journald / dmesg headers, kernel
caller ids, the ``kernel:`` tag) down to what the program printed; each :class:`Envelope` renders
that message again as one producer would ship it (raw dmesg, ``dmesg -T`` / ``-x``, RFC 3164 and
5424, journald ``short-iso`` / ``short-precise`` / ``-o json``, rsyslog ``#ooo`` escapes, Fluent Bit
and Vector records, Docker json-file and CRI lines, ``kubectl logs --timestamps`` / ``--prefix``,
``srun --label``, localized month names, CRLF and NUL padding). The shapes follow docs/formats.md
and the shippers' documentation.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

import orjson

from extractors.matchers import HyperscanMatcher
from extractors.symptom import Symptom
from streams.evaluation import EVAL_NODE, REFERENCE_MS, TOPIC_OF_SOURCE, LabelledLine, LineJudge
from streams.normalize import normalize_record
from streams.normalize.syslog_line import LOCAL_MONTHS
from streams.normalize.times import MONTHS
from streams.records import LogLine

#: The node an envelope names in its header or fields; the Kafka key names ``KEY_NODE``.
HOST = "gpu001"
#: 2025-06-01T11:59:58.123456Z, two seconds before streams.evaluation.REFERENCE_MS.
EPOCH_S = 1_748_779_198.123456
ISO = "2025-06-01T11:59:58.123456"

_MONTHS = "|".join(re.escape(name) for name in (*MONTHS, *LOCAL_MONTHS))
_TAG = r"[^\s:\[\]]{1,64}(?:\[\d{1,10}\])?: ?"
#: One header at the start of a line; stripped repeatedly ("<3>May 7 ... kernel: [123.4] msg").
_HEADER = re.compile(
    "|".join(
        (
            r"\ufeff",
            r"<\d{1,3}>",  # syslog / kmsg priority
            r"1 \S+ \S+ \S+ \S+ \S+ (?:-|(?:\[[^\]]*\])+) ?",  # RFC 5424 after <PRI>
            r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d,\d{6}[+-]\d\d:\d\d ",  # dmesg --time-format iso
            r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z (?:std(?:out|err) [FP] )?",  # CRI, kubectl --timestamps
            rf"(?:{_MONTHS}) +\d{{1,2}} \d\d:\d\d:\d\d(?:\.\d+)? (?:[^\s:\[\]]+ )?{_TAG}",  # RFC 3164
            rf"\d{{4}}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)? (?:[^\s:\[\]]+ )?{_TAG}",
            r"\[ *\+?\d+\.\d+\] ?",  # dmesg seconds since boot, or a delta
            r"\[ *[TC]\d+\] ?",  # kernel caller id (CONFIG_PRINTK_CALLER)
            r"\[\w{2,4}\.? \w{3,5}\.? +\d{1,2} \d\d:\d\d:\d\d \d{4}\] ?",  # dmesg -T, any locale
            r"[a-z]{2,8} *:[a-z]{3,6} *: ?",  # dmesg -x facility and level
            r"kernel: ?",
            r"\[pod/[^\]\s]{1,200}\] ",  # kubectl logs --prefix
            r" {0,4}\d{1,5}: ",  # srun --label
        )
    )
)


def bare_message(line: str) -> str:
    """What the program printed: the line without the envelope headers it came in."""
    for _ in range(8):
        match = _HEADER.match(line)
        if match is None or match.end() == 0 or match.end() >= len(line):
            return line
        line = line[match.end() :]
    return line


@dataclass(frozen=True)
class Envelope:
    """``render(message)`` gives the Kafka record value; ``names_host`` says whether that value
    names ``HOST`` (else the Kafka key names the node); ``in_header`` whether it does so in the
    line's own header (a user-written applog line's header names no node)."""

    name: str
    render: Callable[[str], object]
    names_host: bool
    in_header: bool = False


def _json(record: dict) -> bytes:
    return orjson.dumps(record)


def _kubernetes() -> dict:
    return {
        "pod_name": "train-workers-0-3-x7k2p", "namespace_name": "ml", "host": HOST,
        "container_name": "trainer", "docker_id": "c0ffee", "container_image": "nvcr.io/nvidia/pytorch:24.05",
    }  # fmt: skip


def _docker_line(message: str) -> str:
    return orjson.dumps({"log": message + "\n", "stream": "stderr", "time": ISO + "789Z"}).decode()


def _rsyslog_escapes(message: str) -> str:
    """rsyslog's ``$EscapeControlCharactersOnReceive``: control characters as ``#ooo``; here a
    coloured line (ANSI SGR) as a Python logger prints it."""
    coloured = f"\x1b[1;31m{message}\x1b[0m"
    return "".join(f"#{ord(c):03o}" if ord(c) < 32 else c for c in coloured)


ENVELOPES: tuple[Envelope, ...] = (
    Envelope("plain", lambda m: m, False),
    Envelope("dmesg", lambda m: f"[ 8123.456789] {m}", False),
    Envelope("dmesg priority", lambda m: f"<3>[ 8123.456789] {m}", False),
    Envelope("dmesg caller id", lambda m: f"[ 8123.456789] [  T291] {m}", False),
    Envelope("dmesg -T", lambda m: f"[Sun Jun  1 11:59:58 2025] {m}", False),
    Envelope("dmesg -T de", lambda m: f"[So Dez  7 11:59:58 2024] {m}", False),
    Envelope("dmesg -x", lambda m: f"kern  :err   : [ 8123.456789] {m}", False),
    Envelope("dmesg -x iso", lambda m: f"kern  :err   : 2025-06-01T11:59:58,123456+00:00 {m}", False),
    Envelope("rfc3164 kernel", lambda m: f"<3>Jun  1 11:59:58 {HOST} kernel: [ 8123.456789] {m}", True, True),
    Envelope("rfc3164 prog[pid]", lambda m: f"Jun  1 11:59:58 {HOST} python3[4711]: {m}", True, True),
    Envelope("rfc5424", lambda m: f"<11>1 {ISO}+00:00 {HOST} python3 4711 - - {m}", True, True),
    Envelope("rfc5424 bom", lambda m: f'<11>1 {ISO}Z {HOST} kernel - - [meta x="1"] \ufeff{m}', True, True),
    Envelope("journald short-iso", lambda m: f"2025-06-01T11:59:58+0000 {HOST} kernel: {m}", True, True),
    Envelope("journald short-iso-precise", lambda m: f"{ISO}+00:00 {HOST} kernel: {m}", True, True),
    Envelope("journald short-precise", lambda m: f"Jun 01 11:59:58.123456 {HOST} kernel: {m}", True, True),
    Envelope("journald de", lambda m: f"Dez 07 11:59:58 {HOST} kernel: {m}", True, True),
    Envelope("journald fr", lambda m: f"déc. 07 11:59:58 {HOST} kernel: {m}", True, True),
    Envelope("journald es", lambda m: f"dic 07 11:59:58 {HOST} kernel: {m}", True, True),
    Envelope(
        "journalctl -o json",
        lambda m: _json(
            {
                "MESSAGE": m,
                "_HOSTNAME": HOST,
                "__REALTIME_TIMESTAMP": "1748779198123456",
                "_TRANSPORT": "kernel",
                "PRIORITY": "3",
                "SYSLOG_IDENTIFIER": "kernel",
            }
        ),
        True,
    ),
    Envelope(
        "journalctl -o json bytes",
        lambda m: _json(
            {
                "MESSAGE": list(m.encode()),
                "_HOSTNAME": HOST,
                "__REALTIME_TIMESTAMP": "1748779198123456",
                "_TRANSPORT": "stdout",
                "PRIORITY": "6",
                "SYSLOG_IDENTIFIER": "python3",
            }
        ),
        True,
    ),
    Envelope(
        "rsyslog escapes", lambda m: f"Jun  1 11:59:58 {HOST} python3[4711]: {_rsyslog_escapes(m)}", True, True
    ),
    Envelope("fluent-bit tail", lambda m: _json({"@timestamp": EPOCH_S, "log": m, "hostname": HOST}), True),
    Envelope(
        "fluent-bit kubernetes",
        lambda m: _json(
            {
                "@timestamp": EPOCH_S,
                "log": m + "\n",
                "stream": "stderr",
                "time": ISO + "789Z",
                "kubernetes": _kubernetes(),
            }
        ),
        True,
    ),
    Envelope(
        "fluent-bit systemd",
        lambda m: _json(
            {
                "@timestamp": EPOCH_S,
                "MESSAGE": m,
                "_HOSTNAME": HOST,
                "_TRANSPORT": "kernel",
                "PRIORITY": "3",
                "SYSLOG_IDENTIFIER": "kernel",
            }
        ),
        True,
    ),
    Envelope(
        "fluent-bit kmsg",
        lambda m: _json(
            {
                "@timestamp": EPOCH_S,
                "priority": 3,
                "sequence": 812,
                "sec": 8123,
                "usec": 456789,
                "msg": m,
                "hostname": HOST,
            }
        ),
        True,
    ),
    Envelope(
        "vector file",
        lambda m: _json(
            {
                "file": "/var/log/train/rank0.log",
                "host": HOST,
                "message": m,
                "source_type": "file",
                "timestamp": ISO + "Z",
            }
        ),
        True,
    ),
    Envelope(
        "vector journald",
        lambda m: _json(
            {
                "host": HOST,
                "message": m,
                "source_type": "journald",
                "timestamp": ISO + "Z",
                "_HOSTNAME": HOST,
                "_TRANSPORT": "kernel",
                "PRIORITY": "3",
            }
        ),
        True,
    ),
    Envelope(
        "docker json-file record",
        lambda m: _json({"log": m + "\n", "stream": "stderr", "time": ISO + "789Z", "hostname": HOST}),
        True,
    ),
    Envelope(
        "docker json-file line in vector file",
        lambda m: _json(
            {
                "file": "/var/lib/docker/containers/c0ffee/c0ffee-json.log",
                "host": HOST,
                "message": _docker_line(m),
                "source_type": "file",
                "timestamp": ISO + "Z",
            }
        ),
        True,
    ),
    Envelope("cri-o / containerd line", lambda m: f"{ISO}789Z stderr F {m}", False),
    Envelope(
        "cri line in fluent-bit tail",
        lambda m: _json({"@timestamp": EPOCH_S, "log": f"{ISO}789Z stdout F {m}", "kubernetes": _kubernetes()}),
        True,
    ),
    Envelope("kubectl logs --timestamps", lambda m: f"{ISO}789Z {m}", False),
    Envelope("kubectl logs --prefix", lambda m: f"[pod/train-workers-0-3-x7k2p/trainer] {m}", False),
    Envelope("srun --label", lambda m: f"  3: {m}", False),
    Envelope("crlf", lambda m: f"{m}\r\n", False),
    Envelope(
        "crlf in fluent-bit tail",
        lambda m: _json({"@timestamp": EPOCH_S, "log": m + "\r\n", "hostname": HOST}),
        True,
    ),
    Envelope("nul padded", lambda m: f"{m}\x00\x00\x00\x00", False),
    Envelope(
        "nul run before the line", lambda m: f"\x00\x00\x00\x00Jun  1 11:59:58 {HOST} kernel: {m}", True, True
    ),
)


@dataclass(frozen=True)
class Rendering:
    """One row in one envelope, as the normalizer and the matcher read it."""

    row: LabelledLine
    envelope: Envelope
    lines: tuple[LogLine, ...]
    dead: str | None
    #: the matched symptoms as the engine reads them (captures, workload, a node the text names)
    signature: tuple


def render(rows: list[LabelledLine], matcher: HyperscanMatcher) -> list[Rendering]:
    """Every row in every envelope, normalized as its topic's records are and matched in one batch
    (the path ``faultstream eval`` takes: streams/evaluation.py)."""
    pending: list[tuple[LabelledLine, Envelope, list[LogLine], str | None]] = []
    for number, row in enumerate(rows):
        message = bare_message(row.line)
        topic = TOPIC_OF_SOURCE.get(row.arrives_on, "logs.syslog")
        for envelope in ENVELOPES:
            out = normalize_record(
                topic, envelope.render(message), EVAL_NODE, REFERENCE_MS, f"{topic}:@{number}"
            )
            lines = [replace(line, source=row.arrives_on) for line in out.lines]  # k8s rows ride logs.syslog
            pending.append((row, envelope, lines, out.dead[0].reason if out.dead else None))
    flat = [line for _, _, lines, _ in pending for line in lines]
    found: dict[int, list[Symptom]] = {}
    for index, symptom in matcher.match_batch(flat):
        if symptom.role != "benign":
            found.setdefault(index, []).append(symptom)
    renderings, start = [], 0
    for row, envelope, lines, dead in pending:
        signature = sorted(
            {_evidence(symptom, line) for k, line in enumerate(lines, start) for symptom in found.get(k, ())}
        )
        renderings.append(Rendering(row, envelope, tuple(lines), dead, tuple(signature)))
        start += len(lines)
    return renderings


def _evidence(symptom: Symptom, line: LogLine) -> tuple:
    named_node = symptom.node if symptom.node != line.host else None
    return symptom.rule_id, tuple(sorted(symptom.captures.items())), symptom.workload_id, named_node


class EngineVerdicts:
    """The symptom ids of the verdict of the one-line failed job ``faultstream eval`` builds
    (``LineJudge.judge_line``). Two renderings of a row with the same matched evidence get the same
    verdict, so the engine runs once per row and distinct evidence, not once per envelope."""

    def __init__(self, judge: LineJudge) -> None:
        self.judge = judge
        self._seen: dict[tuple, tuple[str, ...]] = {}

    def symptoms(self, rendering: Rendering) -> tuple[str, ...]:
        key = (rendering.row.id, rendering.signature)
        if key not in self._seen:
            [line] = rendering.lines
            outcome = self.judge.judge_line(rendering.row, line, len(self._seen) + 1)
            self._seen[key] = tuple(sorted(outcome.symptoms))
        return self._seen[key]
