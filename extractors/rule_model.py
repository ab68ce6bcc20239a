"""Typed rule models: what a file under ``rules/`` may say, validated at load.

Two kinds of rules live in the ruleset:

* :class:`SymptomRule` (``symptom-rule/v1``) tags one log line with a *symptom*;
* :class:`RefinerRule` (``refiner/v1``) carries cascade knowledge as data: which symptoms are
  only the echo, companion or context of another one.

The models are the source of truth for ``docs/rules.md``; ``extra="forbid"`` makes a typo in a
key an error instead of a silently ignored field.
"""

from __future__ import annotations

import re
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from extractors.vocabulary import CAUSE_ROLES, Domain, RefinedRole, Role, RuleDomain, RuleRole

__all__ = [
    "DOMAINS",
    "ROLES",
    "SOURCES",
    "Example",
    "Examples",
    "RefinerRule",
    "Selector",
    "SymptomRule",
]

#: Failure domains a rule may name; ``none`` is for benign and marker rules.
DOMAINS: tuple[Domain, ...] = get_args(RuleDomain)
#: What a symptom can be in a cascade (see docs/rules.md).
ROLES: tuple[Role, ...] = get_args(RuleRole)
#: Where a line came from; a rule looks only at the sources it lists.
SOURCES = ("dmesg", "syslog", "applog", "k8s", "scheduler")
#: Tags refiners select on (docs/rules.md explains each); rules may only use these.
TAGS = (
    "xid",
    "xid_companion",
    "sxid",
    "transport",
    "collective_hang",
    "gpu_app_echo",
    "process_teardown",
    "reboot",
    "node_loss",
    "crash_consequence",
    "nic",
    "storage",
    "memory",
    "pcie",
    "thermal",
    "fabric",
    "driver",
    "preemption",
    "cancellation",
    "timeout",
    "condition",
    "corrected",
)
#: Job-end facts a marker rule may state.
MARKERS = ("timeout", "preempted", "cancelled", "node_failure", "success", "oom")

Source = Literal["dmesg", "syslog", "applog", "k8s", "scheduler"]
Marker = Literal["timeout", "preempted", "cancelled", "node_failure", "success", "oom"]

_ID = re.compile(r"^[a-z0-9]+(?:[._-][a-z0-9]+)*$")
_SYMPTOM = re.compile(r"^[a-z0-9]+(?:_[a-z0-9]+)*$")


def _check_id(value: str) -> str:
    if not _ID.match(value):
        msg = f"id {value!r} must be lowercase words joined by '.', '_' or '-'"
        raise ValueError(msg)
    return value


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Example(_Strict):
    """One line a rule must (or must not) match, run by CI and ``faultstream rules check``."""

    line: str
    source: Source | None = None
    captures: dict[str, str] = Field(default_factory=dict)
    note: str | None = None


class Examples(_Strict):
    match: list[Example] = Field(default_factory=list)
    no_match: list[Example] = Field(default_factory=list)

    @field_validator("match", "no_match", mode="before")
    @classmethod
    def _plain_strings_are_lines(cls, value: object) -> object:
        if isinstance(value, list):
            return [{"line": v} if isinstance(v, str) else v for v in value]
        return value


class SymptomRule(_Strict):
    """Tags a line with a symptom when any ``patterns`` and no ``exclude`` pattern matches."""

    schema_: Literal["symptom-rule/v1"] = Field(alias="schema")
    id: str
    title: str
    status: Literal["experimental", "test", "stable", "deprecated"] = "test"
    description: str
    why: str
    domain: RuleDomain
    symptom: str
    catalog_id: str | None = None
    role: RuleRole = Role.CAUSE
    priority: int = Field(ge=0, le=100)
    sources: list[Source] = Field(default_factory=lambda: list(SOURCES))
    case_insensitive: bool = False
    patterns: list[str] = Field(min_length=1)
    exclude: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    entity: list[str] = Field(default_factory=list)
    node_capture: str | None = None
    marker: Marker | None = None
    references: list[str] = Field(default_factory=list)
    examples: Examples

    _dotted_lowercase_id = field_validator("id")(classmethod(lambda cls, value: _check_id(value)))

    @field_validator("tags")
    @classmethod
    def _known_tags(cls, value: list[str]) -> list[str]:
        unknown = sorted(set(value) - set(TAGS))
        if unknown:
            msg = f"unknown tags {unknown}; known: {', '.join(TAGS)}"
            raise ValueError(msg)
        return value

    @field_validator("symptom")
    @classmethod
    def _snake_case_symptom(cls, value: str) -> str:
        if not _SYMPTOM.match(value):
            msg = f"symptom {value!r} must be snake_case"
            raise ValueError(msg)
        return value

    @model_validator(mode="after")
    def _coherent(self) -> SymptomRule:
        groups = self.capture_names()
        for name in [*self.entity, *([self.node_capture] if self.node_capture else [])]:
            if name not in groups:
                msg = f"'{name}' is not a named group (?P<{name}>...) of any pattern"
                raise ValueError(msg)
        if self.role == Role.MARKER and self.marker is None:
            raise ValueError("a rule with role 'marker' must say which 'marker' it states")
        if self.role in CAUSE_ROLES and self.domain == Domain.NONE:
            raise ValueError("a cause or companion needs a failure domain, not 'none'")
        if self.status in ("test", "stable") and not (self.examples.match and self.examples.no_match):
            msg = f"status '{self.status}' needs at least one 'match' and one 'no_match' example"
            raise ValueError(msg)
        return self

    def capture_names(self) -> set[str]:
        names: set[str] = set()
        for pattern in self.patterns:
            names.update(re.findall(r"\(\?P<([A-Za-z_][A-Za-z0-9_]*)>", pattern))
        return names


class Selector(_Strict):
    """Picks symptoms in a refiner; every field given must hold (a list means any of)."""

    symptoms: list[str] = Field(default_factory=list)
    symptom_prefixes: list[str] = Field(default_factory=list)
    rules: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    exclude_tags: list[str] = Field(default_factory=list)
    catalog_prefixes: list[str] = Field(default_factory=list)
    domains: list[RuleDomain] = Field(default_factory=list)
    roles: list[RuleRole] = Field(default_factory=lambda: list(CAUSE_ROLES))
    sources: list[Source] = Field(default_factory=list)
    min_priority: int = 0


class RefinerRule(_Strict):
    """Demotes a *target* symptom that stands in ``relation`` to a *cause* symptom."""

    schema_: Literal["refiner/v1"] = Field(alias="schema")
    id: str
    title: str
    description: str
    why: str
    order: int = 100
    target: Selector
    cause: Selector
    relation: Literal["after", "before", "any"] = "after"
    within_s: float | None = None
    scope: Literal["any_node", "same_node", "other_node", "same_entity"] = "any_node"
    #: a target of no node (a NODE_FAIL job record that does not name the failed node) under a
    #: same_node / same_entity scope: skipped, or matched against the causes of every node
    nodeless: Literal["skip", "any_node"] = "skip"
    set_role: RefinedRole
    references: list[str] = Field(default_factory=list)

    _dotted_lowercase_id = field_validator("id")(classmethod(lambda cls, value: _check_id(value)))
