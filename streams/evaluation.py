"""Accuracy on labelled real lines: each line is one failed workload, judged by the real engine.

A labelled line (``tests/corpus/lines/*.jsonl``, ``tests/corpus/healthy/*.jsonl``) goes through
the same path a live line takes: the normalizer of its source's topic, the matcher, the node and
workload correlators, refiners and the decision. The workload around it is a failed job on the
line's node (and on any node the line names), from one minute before the line to one minute
after; a line that names its Slurm job becomes evidence of that job. What the verdict says is
then compared with the label:

* **recognized**: the verdict holds a symptom (root or chain) or a marker changed its outcome;
* **right domain**: ``sub_domain`` equals the label's domain (rows with a known domain only);
* **false hardware**: ``sub_domain`` is hardware but the label is not (a healthy node drained);
* **benign false positive**: a healthy line produced any symptom.

The dev / test split is a function of the row's ``source_url`` (all lines of one thread fall on
the same side), so rules are written from the dev side and the test side stays unseen.
"""

from __future__ import annotations

import hashlib
import heapq
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from correlator.engine import AttributionEngine
from correlator.settings import CorrelatorSettings
from correlator.verdict import Verdict
from extractors.loader import Ruleset
from extractors.matchers import HyperscanMatcher
from extractors.vocabulary import Domain
from streams.normalize import normalize_record
from streams.records import DEFAULT_TOPICS, JobEvent, LogLine
from streams.settings import DEFAULT_MATCHER_CACHE_DIR

__all__ = [
    "DOMAINS",
    "EvaluationReport",
    "LabelError",
    "LabelledLine",
    "LineOutcome",
    "evaluate",
    "load_labels",
    "split_of",
]

#: The failure domains a label may name; ``unknown`` marks an echo whose owner the line does not tell.
DOMAINS = (Domain.HARDWARE, Domain.SYSTEM_SOFTWARE, Domain.INFRASTRUCTURE, Domain.USER)
TEST_PERCENT = 30
#: The node a line is attributed to when it names none itself.
EVAL_NODE = "eval-node"
#: Reference time for lines without a date of their own (Kafka timestamp of the record).
REFERENCE_MS = 1_748_779_200_000  # 2025-06-01T12:00:00Z
WINDOW_MS = 60_000
#: Survivor nodes of a cascade are named ``peer00``, ``peer01``, ...
PEER_PREFIX = "peer"
#: How many survivors a cascade has, and where their lines come from.
SURVIVORS = 7
SURVIVOR_FAMILIES = ("nccl", "pytorch_distributed")
NOISE_TAGS = frozenset({"transport", "collective_hang", "process_teardown"})

#: Where a family's lines arrive when the row does not say.
FAMILY_SOURCE = {
    "nccl": "applog",
    "pytorch_distributed": "applog",
    "training_progress": "applog",
    "torchrun": "applog",
    "tricky": "applog",
}
#: A labelled line goes to its source's log topic (the scheduler's topic holds events, not lines).
TOPIC_OF_SOURCE = {source: topic for topic, source in DEFAULT_TOPICS.items() if source != "scheduler"}


class LabelError(ValueError):
    """A labels file that cannot be read: every problem with its file and line."""


class LabelledLine(BaseModel):
    """One row of a labels file."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: str
    family: str
    line: str
    source_url: str
    label: Literal["symptom", "echo", "benign"]
    domain: Literal["hardware", "system_software", "infrastructure", "user", "unknown"] | None = None
    symptom: str | None = None
    source: Literal["dmesg", "syslog", "applog", "k8s", "scheduler"] | None = None
    why: str | None = None

    @property
    def split(self) -> str:
        return split_of(self.source_url)

    @property
    def known_domain(self) -> str | None:
        return self.domain if self.domain in DOMAINS else None

    @property
    def arrives_on(self) -> str:
        return self.source or FAMILY_SOURCE.get(self.family, "syslog")


def split_of(source_url: str) -> str:
    """``test`` for about 30 % of sources, chosen by a hash of the URL; ``dev`` for the rest."""
    digest = int(hashlib.sha256(source_url.encode()).hexdigest(), 16)
    return "test" if digest % 100 < TEST_PERCENT else "dev"


def _label_files(paths: Iterable[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(path.rglob("*.jsonl"))
        elif path.is_file():
            files.append(path)
        else:
            raise LabelError(f"{path}: labels file not found")
    return files


def load_labels(paths: Iterable[Path]) -> list[LabelledLine]:
    """Every row of the files (directories are searched for ``*.jsonl``); ids must be unique."""
    rows: list[LabelledLine] = []
    problems: list[str] = []
    seen: dict[str, str] = {}
    for path in _label_files(paths):
        for number, raw in enumerate(path.read_bytes().splitlines(), start=1):
            if not raw.strip():
                continue
            where = f"{path}:{number}"
            try:
                row = LabelledLine.model_validate(orjson.loads(raw))
            except (orjson.JSONDecodeError, ValidationError) as exc:
                problems.append(f"{where}: {str(exc).splitlines()[0]}")
                continue
            if row.id in seen:
                problems.append(f"{where}: id {row.id!r} already used at {seen[row.id]}")
                continue
            if row.label == "symptom" and row.known_domain is None:
                problems.append(f"{where}: a symptom row needs a domain of {', '.join(DOMAINS)}")
            seen[row.id] = where
            rows.append(row)
    if problems:
        raise LabelError("\n".join(problems))
    return rows


@dataclass(frozen=True)
class LineOutcome:
    """What the engine made of one labelled line."""

    row: LabelledLine
    recognized: bool
    domain: str | None
    terminal_state: str | None
    symptoms: tuple[str, ...]
    rules: tuple[str, ...]
    problem: str | None = None
    blamed_peer: bool = False  # in a cascade: a survivor was named responsible

    @property
    def right_domain(self) -> bool:
        return self.row.known_domain is not None and self.domain == self.row.known_domain

    @property
    def false_hardware(self) -> bool:
        return self.domain == "hardware" and self.row.known_domain != "hardware"

    @property
    def benign_false_positive(self) -> bool:
        return self.row.label == "benign" and bool(self.symptoms or self.rules)

    def to_dict(self) -> dict:
        return {
            "id": self.row.id,
            "family": self.row.family,
            "split": self.row.split,
            "label": self.row.label,
            "expected_domain": self.row.domain,
            "recognized": self.recognized,
            "domain": self.domain,
            "terminal_state": self.terminal_state,
            "symptoms": list(self.symptoms),
            "rules": list(self.rules),
            "problem": self.problem,
            "line": self.row.line,
        }


class LineJudge:
    """Runs one labelled line through a fresh engine; the matcher is built once and shared."""

    def __init__(
        self,
        ruleset: Ruleset,
        settings: CorrelatorSettings | None = None,
        matcher_cache_dir: Path | None = DEFAULT_MATCHER_CACHE_DIR,
    ) -> None:
        self.ruleset = ruleset
        self.settings = settings or CorrelatorSettings(grace_s=1.0, tail_s=1.0)
        self.matcher = HyperscanMatcher(ruleset, matcher_cache_dir)

    def judge(self, row: LabelledLine, number: int, survivors: Sequence[LabelledLine] = ()) -> LineOutcome:
        """The line alone on its node; with ``survivors``, each of them logged by one more node of
        the job a second apart after it, as the peers of a dying rank do."""
        line, problem = self._normalize(row, number)
        if line is None:
            return LineOutcome(row, False, None, None, (), (), problem)
        return self.judge_line(row, line, number, survivors)

    def judge_line(
        self, row: LabelledLine, line: LogLine, number: int, survivors: Sequence[LabelledLine] = ()
    ) -> LineOutcome:
        """``judge`` of a line already normalized (the row's text in another envelope, say)."""
        found = [s for s in self.matcher.extract_batch([line]) if s.role != "benign"]
        workload = next((s.workload_id for s in found if s.workload_id), f"eval-{number}")
        own = {line.host or EVAL_NODE, *(s.node for s in found if s.node)}
        peers = [
            LogLine(
                echo.line, f"{PEER_PREFIX}{k:02d}", line.time_ms + (k + 1) * 1000, echo.arrives_on, f"peer:{k}"
            )
            for k, echo in enumerate(survivors)
        ]
        nodes = tuple(sorted(own | {peer.host for peer in peers if peer.host}))
        engine = AttributionEngine(self.ruleset, self.settings, matcher=self.matcher)
        verdicts = engine.feed([line, *peers], self._job(workload, nodes, line.time_ms))
        verdicts += engine.flush()
        mine = [v for v in verdicts if v.workload_id == workload]
        if not mine:
            return LineOutcome(row, False, None, None, (), tuple(s.rule_id for s in found), "no verdict")
        return self._outcome(row, max(mine, key=lambda v: v.revision), found)

    def is_survivor_noise(self, row: LabelledLine) -> bool:
        """What a surviving rank logs about a dead peer: every symptom of the line an echo or a
        transport / hang / teardown symptom (and at least one)."""
        probe = LogLine(row.line, EVAL_NODE, REFERENCE_MS, row.arrives_on, "probe")
        found = [s for s in self.matcher.extract_batch([probe]) if s.role != "benign"]
        tags = {rule.id: set(rule.tags) for rule in self.ruleset.symptom_rules}
        return bool(found) and all(s.role == "echo" or NOISE_TAGS & tags[s.rule_id] for s in found)

    def _normalize(self, row: LabelledLine, number: int) -> tuple[LogLine | None, str | None]:
        source = row.arrives_on
        topic = TOPIC_OF_SOURCE.get(source, "logs.syslog")
        out = normalize_record(topic, row.line, EVAL_NODE, REFERENCE_MS, f"{topic}:@{number}")
        if not out.lines:
            reason = out.dead[0].reason if out.dead else "no line"
            return None, f"normalizer: {reason}"
        line = out.lines[0]
        if line.source != source:  # k8s and scheduler text arrives through a syslog-shaped record
            line = LogLine(line.text, line.host, line.time_ms, source, line.origin, line.workload_id, line.rank)
        return line, None

    @staticmethod
    def _job(workload: str, nodes: tuple[str, ...], at_ms: int) -> list[JobEvent]:
        start, end = at_ms - WINDOW_MS, at_ms + WINDOW_MS
        return [
            JobEvent("job_start", workload, start, nodes=nodes, origin="eval:start"),
            JobEvent("job_end", workload, end, nodes=nodes, state="FAILED", start_ms=start, exit_code=1,
                     origin="eval:end"),
        ]  # fmt: skip

    @staticmethod
    def _outcome(row: LabelledLine, verdict: Verdict, found: list) -> LineOutcome:
        symptoms = [verdict.root_symptom.symptom] if verdict.root_symptom else []
        symptoms += [element.symptom for element in verdict.chain]
        markers = [s.rule_id for s in found if s.role == "marker"]
        recognized = bool(symptoms or markers)
        return LineOutcome(
            row,
            recognized,
            verdict.sub_domain,
            verdict.terminal_state,
            tuple(dict.fromkeys(symptoms)),
            tuple(dict.fromkeys(s.rule_id for s in found)),
            blamed_peer=any(node.startswith(PEER_PREFIX) for node in verdict.responsible_nodes),
        )


@dataclass
class FamilyFigures:
    failures: int = 0
    recognized: int = 0
    with_domain: int = 0
    right_domain: int = 0
    false_hardware: int = 0
    healthy: int = 0
    benign_false_positives: int = 0

    def add(self, outcome: LineOutcome) -> None:
        if outcome.row.label == "benign":
            self.healthy += 1
            self.benign_false_positives += outcome.benign_false_positive
        else:
            self.failures += 1
            self.recognized += outcome.recognized
            if outcome.row.known_domain:
                self.with_domain += 1
                self.right_domain += outcome.right_domain
        self.false_hardware += outcome.false_hardware

    @property
    def recognized_pct(self) -> float:
        return 100.0 * self.recognized / self.failures if self.failures else 100.0

    @property
    def domain_pct(self) -> float:
        return 100.0 * self.right_domain / self.with_domain if self.with_domain else 100.0

    def to_dict(self) -> dict:
        return {
            "failures": self.failures,
            "recognized": self.recognized,
            "recognized_pct": round(self.recognized_pct, 1),
            "with_domain": self.with_domain,
            "right_domain": self.right_domain,
            "domain_pct": round(self.domain_pct, 1),
            "false_hardware": self.false_hardware,
            "healthy": self.healthy,
            "benign_false_positives": self.benign_false_positives,
        }


@dataclass
class EvaluationReport:
    outcomes: list[LineOutcome]
    total: FamilyFigures = field(default_factory=FamilyFigures)
    by_family: dict[str, FamilyFigures] = field(default_factory=dict)
    confusion: Counter = field(default_factory=Counter)  # (expected, got) → rows
    cascades: list[LineOutcome] = field(default_factory=list)  # failure lines amid survivors' noise

    @classmethod
    def of(cls, outcomes: list[LineOutcome]) -> EvaluationReport:
        report = cls(outcomes)
        for outcome in outcomes:
            report.total.add(outcome)
            report.by_family.setdefault(outcome.row.family, FamilyFigures()).add(outcome)
            if outcome.row.known_domain:
                report.confusion[(outcome.row.known_domain, outcome.domain or "-")] += 1
        return report

    def misses(self) -> list[LineOutcome]:
        """Failure rows not recognized or in the wrong domain, false hardware, benign hits."""
        return [
            o
            for o in self.outcomes
            if (o.row.label != "benign" and not o.recognized)
            or (o.row.known_domain and not o.right_domain)
            or o.false_hardware
            or o.benign_false_positive
        ]

    def cascade_figures(self) -> dict[str, dict[str, int]]:
        """Per family (and ``TOTAL``): stories, right (domain, and no survivor blamed), survivors
        blamed, false hardware."""
        figures: dict[str, dict[str, int]] = {}
        for outcome in self.cascades:
            for name in (outcome.row.family, "TOTAL"):
                entry = figures.setdefault(
                    name, {"stories": 0, "right": 0, "blamed_peer": 0, "false_hardware": 0}
                )
                entry["stories"] += 1
                entry["right"] += outcome.right_domain and not outcome.blamed_peer
                entry["blamed_peer"] += outcome.blamed_peer
                entry["false_hardware"] += outcome.false_hardware
        return figures

    def cascade_misses(self) -> list[LineOutcome]:
        return [o for o in self.cascades if not o.right_domain or o.blamed_peer]

    def to_dict(self) -> dict:
        cascades = {"cascades": self.cascade_figures()} if self.cascades else {}
        return cascades | {
            "total": self.total.to_dict(),
            "by_family": {name: figures.to_dict() for name, figures in sorted(self.by_family.items())},
            "confusion": [
                {"expected": expected, "got": got, "rows": rows}
                for (expected, got), rows in sorted(self.confusion.items())
            ],
        }


def evaluate(
    rows: list[LabelledLine],
    ruleset: Ruleset,
    split: str = "all",
    families: Iterable[str] = (),
    cascades: bool = False,
    matcher_cache_dir: Path | None = DEFAULT_MATCHER_CACHE_DIR,
) -> EvaluationReport:
    """Judge every row of ``split`` (dev, test or all), optionally of some families only; with
    ``cascades``, also every failure line with a known domain amid survivors' noise."""
    wanted = set(families)
    chosen = [
        row for row in rows if (split == "all" or row.split == split) and (not wanted or row.family in wanted)
    ]
    judge = LineJudge(ruleset, matcher_cache_dir=matcher_cache_dir)
    report = EvaluationReport.of([judge.judge(row, number) for number, row in enumerate(chosen, start=1)])
    if cascades:
        noise = [
            r
            for r in rows
            if r.label == "echo" and r.family in SURVIVOR_FAMILIES and judge.is_survivor_noise(r)
        ]
        report.cascades = [
            judge.judge(row, number, _survivors(noise, row))
            for number, row in enumerate(chosen, start=1)
            if row.known_domain and noise
        ]
    return report


def _survivors(noise: list[LabelledLine], row: LabelledLine) -> list[LabelledLine]:
    """The same survivors for a story whatever else the corpus holds and in whatever order it is
    read: the noise lines ranked by a hash of the story's id and theirs (rendezvous hashing), so a
    new noise line changes only the stories that draw it. A pick by position reshuffled every
    story when one line was added, and the figure moved by ±0.8 points with no engine change."""
    return heapq.nsmallest(SURVIVORS, noise, key=lambda echo: _draw(row.id, echo.id))


def _draw(story: str, line: str) -> bytes:
    return hashlib.blake2b(f"{story}\t{line}".encode(), digest_size=8).digest()
