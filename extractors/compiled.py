"""A ruleset compiled for matching: ``re`` programs per rule, shared by both matchers.

The Hyperscan database finds *candidate* (line, rule) pairs fast; :meth:`CompiledRule.confirm`
then runs the rule's ``re`` programs on that one line to apply ``exclude`` and read the named
captures (Hyperscan has no capture groups). The ``re`` reference matcher calls the same
``confirm`` on every (line, rule), so both matchers emit identical symptoms whenever Hyperscan
reports every line a rule matches — which is what the tests check.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from extractors.hostlist import expand_hostlist
from extractors.loader import RuleError, RuleProblem, Ruleset
from extractors.rule_model import SymptomRule
from extractors.symptom import LineLike, Symptom

__all__ = ["CONFIRM_CHARS", "CompiledRule", "compile_rules", "job_reference"]

#: How much of a line the ``re`` confirm step reads. Real log lines are far shorter; a rule's
#: message that starts past this point in a giant line is not recognized (tests/extractors
#: test_regex_safety.py times every pattern on hostile lines of this length).
CONFIRM_CHARS = 8192

#: At most this many nodes from one captured node list (``Nodes gpu[001-064] not responding``): a
#: line is one event, and a larger list is a switch or a partition, which the runs' own lines show.
MAX_NODES_PER_LINE = 256

#: Sources of the lines synthesized from the scheduler topic: what they name is the scheduler's
#: word, never a claim (correlator/claims.py).
SCHEDULER_FEED_SOURCES = frozenset({"scheduler", "k8s"})

_JOB_REF = re.compile(
    r"\b(?:JobId=|JOB |STEP |StepId=|job_id=|SLURM_JOB_ID=)(?:\d+_\d+\((?P<raw>\d+)\)|(?P<id>\d+))", re.ASCII
)


def job_reference(text: str) -> str | None:
    """The Slurm job a line names (``JobId=12``, ``JOB 12``, ``STEP 12.0``, an array task's
    ``JobId=10_3(12)``), as its own job id, if any."""
    found = _JOB_REF.search(text)
    return (found.group("raw") or found.group("id")) if found else None


@dataclass(frozen=True, slots=True)
class CompiledRule:
    rule: SymptomRule
    include: tuple[re.Pattern[str], ...]
    exclude: tuple[re.Pattern[str], ...]
    sources: frozenset[str]

    def confirm(self, text: str, patterns: int = -1) -> dict[str, str] | None:
        """Captures if this rule fires on ``text`` (any include, no exclude), else ``None``.

        ``patterns``: a mask of the include patterns worth trying (bit i: pattern i), those the
        Hyperscan scan reported on the line; the others cannot match. Default: all of them.
        Only the first :data:`CONFIRM_CHARS` characters are read: ``re`` is a backtracking
        engine, and a hostile multi-megabyte line must not cost seconds per rule."""
        if len(text) > CONFIRM_CHARS:
            text = text[:CONFIRM_CHARS]
        for index, program in enumerate(self.include):
            if not patterns >> index & 1:
                continue
            found = program.search(text)
            if found is not None:
                if any(x.search(text) for x in self.exclude):
                    return None
                return {k: v for k, v in found.groupdict().items() if v is not None}
        return None

    def symptoms(self, line: LineLike, captures: dict[str, str]) -> list[Symptom]:
        """The symptom of this match, once per node when the node capture is a Slurm node list
        (slurmctld prints ``Nodes gpu[010-011] not responding`` for several nodes at once)."""
        symptom = self.symptom(line, captures)
        nodes = _node_list(captures.get(self.rule.node_capture) if self.rule.node_capture else None)
        if len(nodes) < 2:
            return [replace(symptom, node=nodes[0])] if nodes else [symptom]
        return [replace(symptom, node=node) for node in nodes]

    def symptom(self, line: LineLike, captures: dict[str, str]) -> Symptom:
        rule = self.rule
        node = captures.get(rule.node_capture) if rule.node_capture else None
        workload_id, named_in_text = line.workload_id, False
        if not workload_id:
            workload_id = job_reference(line.text)
            named_in_text = workload_id is not None
        named_in_text = named_in_text or bool(node and node != line.host)
        trusted_feed = line.source in SCHEDULER_FEED_SOURCES
        claimed_from = (line.host or "") if named_in_text and not trusted_feed else None
        return Symptom(
            rule_id=rule.id,
            symptom=rule.symptom,
            domain=rule.domain,
            role=rule.role,
            priority=rule.priority,
            catalog_id=rule.catalog_id,
            marker=rule.marker,
            node=node or line.host,
            time_ms=line.time_ms,
            source=line.source,
            line=line.text,
            origin=line.origin,
            workload_id=workload_id,
            captures=captures,
            entity=tuple(captures.get(name, "") for name in rule.entity),
            claimed_from=claimed_from,
        )


def _node_list(captured: str | None) -> list[str]:
    """The nodes a captured node list names, if it is one (brackets or commas); empty otherwise,
    and for a malformed or oversized list (the captured text then stays the node, as before)."""
    if not captured or not ("[" in captured or "," in captured):
        return []
    try:
        nodes = expand_hostlist(captured)
    except ValueError:
        return []
    return nodes if len(nodes) <= MAX_NODES_PER_LINE else []


def re_flags(rule: SymptomRule) -> int:
    return re.ASCII | (re.IGNORECASE if rule.case_insensitive else 0)


def compile_rules(ruleset: Ruleset) -> list[CompiledRule]:
    compiled: list[CompiledRule] = []
    problems: list[RuleProblem] = []
    for rule in ruleset.symptom_rules:
        path = ruleset.paths.get(rule.id, rule.id)
        programs: list[list[re.Pattern[str]]] = [[], []]
        for kind, patterns in enumerate((rule.patterns, rule.exclude)):
            for pattern in patterns:
                try:
                    programs[kind].append(re.compile(pattern, re_flags(rule)))
                except re.error as exc:
                    problems.append(RuleProblem(path, None, rule.id, f"pattern {pattern!r}: {exc}"))
        compiled.append(CompiledRule(rule, tuple(programs[0]), tuple(programs[1]), frozenset(rule.sources)))
    if problems:
        raise RuleError(problems)
    return compiled
