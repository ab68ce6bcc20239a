"""The remediation policy file (``faultstream remediate --policy FILE``): which verdicts lead to
which actions on the blamed nodes, and the limits that keep a bad rule from draining a cluster.
docs/integrations.md, "Acting on verdicts", shows a complete file."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

__all__ = ["PLACEHOLDERS", "Action", "Match", "Policy", "PolicyRule", "load_policy", "substitute"]

#: What a command item or a reason may name, e.g. ``NodeName={node}``.
PLACEHOLDERS = frozenset({"node", "reason", "workload_id", "revision", "symptom", "domain", "rule"})
_PLACEHOLDER = re.compile(r"\{(\w+)\}")
# docs/verdict.md: act only on hardware blamed without doubt, or on several nodes in one domain.
_DEFAULT_UNCERTAINTY: list[str | None] = [None, "multiple_nodes"]


def substitute(template: str, values: dict[str, str]) -> str:
    """``{name}`` replaced by its value; nothing else is interpreted (no format spec, no
    attribute access), and the result is one argv item: no shell ever sees it."""
    return _PLACEHOLDER.sub(lambda match: values[match.group(1)], template)


def _check_placeholders(template: str, allowed: frozenset[str]) -> str:
    unknown = sorted(set(_PLACEHOLDER.findall(template)) - allowed)
    if unknown:
        raise ValueError(f"unknown placeholder(s) {unknown} in {template!r}; known: {sorted(allowed)}")
    return template


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Match(_Strict):
    """Which verdicts a rule takes. Defaults: hardware, blamed without doubt, any root symptom."""

    sub_domain: list[str] = ["hardware"]
    root_symptom: list[str] | None = None  # None: any
    uncertainty: list[str | None] = Field(default_factory=lambda: list(_DEFAULT_UNCERTAINTY))
    #: a verdict blaming more nodes than this at once is refused: many nodes failing together
    #: is more likely one shared cause (a switch, a filesystem) than many broken nodes. None: any
    max_responsible_nodes: int | None = Field(None, ge=1)
    #: act once this many distinct workloads blamed the node within ``repeat_window_s`` (this one included)
    min_repeats: int = Field(1, ge=1)
    repeat_window_s: float = Field(86400.0, gt=0)


class Exclude(_Strict):
    ttl_s: int = Field(86400, gt=0)


class Action(_Strict):
    """Exactly one of: put the node in the Redis exclusion set, or run a command (argv list)."""

    exclude: Exclude | None = None
    command: list[str] | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Action:
        if (self.exclude is None) == (self.command is None):
            raise ValueError("an action is either 'exclude: {ttl_s: N}' or 'command: [argv, ...]'")
        return self

    @field_validator("command")
    @classmethod
    def _argv(cls, argv: list[str] | None) -> list[str] | None:
        if argv is not None:
            if not argv or not argv[0]:
                raise ValueError("a command needs at least the program")
            for item in argv:
                _check_placeholders(item, PLACEHOLDERS)
        return argv

    @property
    def kind(self) -> str:
        return "exclude" if self.exclude else "command"


class PolicyRule(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    match: Match = Match()
    reason: str = "faultstream: {symptom} in job {workload_id}"
    actions: list[Action] = Field(min_length=1)

    @field_validator("reason")
    @classmethod
    def _reason(cls, reason: str) -> str:
        return _check_placeholders(reason, PLACEHOLDERS - {"reason"})


class Policy(_Strict):
    """The first rule whose ``match`` takes a verdict decides for it; later rules are not tried."""

    rules: list[PolicyRule] = Field(min_length=1)
    #: at most this many distinct nodes acted on per ``window_s``, whatever the rules say
    max_nodes_per_window: int = Field(3, ge=1)
    window_s: float = Field(3600.0, gt=0)
    #: a verdict whose job ended longer ago than this is refused (a replay, a consumer catching up)
    max_verdict_age_s: float = Field(3600.0, gt=0)

    @field_validator("rules")
    @classmethod
    def _unique_names(cls, rules: list[PolicyRule]) -> list[PolicyRule]:
        names = [rule.name for rule in rules]
        if len(names) != len(set(names)):
            raise ValueError(f"rule names must be unique: {names}")
        return rules


def load_policy(path: Path) -> Policy:
    """The policy in ``path``; ``ValueError`` with the file name and the problem otherwise."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise ValueError(f"cannot read policy {path}: {error}") from None
    try:
        return Policy.model_validate(data)
    except ValidationError as error:
        raise ValueError(f"invalid policy {path}:\n{error}") from None
