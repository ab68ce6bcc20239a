"""Load a ruleset directory: YAML files → typed rules, with ``path:line`` errors.

Layout (see docs/rules.md)::

    rules/ruleset.yaml                    name and semver of the ruleset
    rules/symptoms/<family>/<id>.yaml     one symptom rule per file, file name == id
    rules/refiners/<id>.yaml              one refiner rule per file

Every problem in every file is collected before failing, so a rule author sees all of them at once.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from extractors.rule_model import RefinerRule, SymptomRule

__all__ = ["RuleError", "RuleProblem", "Ruleset", "default_rules_dir", "load_ruleset"]


@dataclass(frozen=True)
class RuleProblem:
    path: str
    line: int | None
    rule_id: str | None
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        rule = f" [{self.rule_id}]" if self.rule_id else ""
        return f"{where}{rule}: {self.message}"


class RuleError(Exception):
    """The ruleset cannot be used; ``problems`` says where and why."""

    def __init__(self, problems: list[RuleProblem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


@dataclass(frozen=True)
class Ruleset:
    name: str
    semver: str
    digest: str
    symptom_rules: tuple[SymptomRule, ...]
    refiners: tuple[RefinerRule, ...]
    paths: dict[str, str] = field(default_factory=dict)

    @property
    def version(self) -> str:
        """What every verdict reports: the semver plus a hash of every rule file's bytes."""
        return f"{self.semver}+{self.digest}"


def default_rules_dir() -> Path:
    """The bundled ruleset: ``rules/`` beside the code in a checkout, else the copy a wheel
    installs as the data package ``faultstream_rules``."""
    checkout = Path(__file__).resolve().parent.parent / "rules"
    if (checkout / "ruleset.yaml").is_file():
        return checkout
    from importlib.util import find_spec

    spec = find_spec("faultstream_rules")  # a namespace package: data files, no __init__
    return Path(next(iter(spec.submodule_search_locations))) if spec else checkout


def load_ruleset(directory: Path | str | None = None) -> Ruleset:
    root = Path(directory) if directory is not None else default_rules_dir()
    if not root.is_dir():
        raise RuleError([RuleProblem(str(root), None, None, "rules directory not found")])
    problems: list[RuleProblem] = []
    meta = _load_meta(root, problems)
    _check_requires(root / "ruleset.yaml", meta.get("requires"), problems)
    symptom_files = sorted((root / "symptoms").rglob("*.yaml"))
    refiner_files = sorted((root / "refiners").rglob("*.yaml"))
    symptom_rules = [r for p in symptom_files if (r := _load_one(p, SymptomRule, problems))]
    refiners = [r for p in refiner_files if (r := _load_one(p, RefinerRule, problems))]
    paths = _check_ids(root, symptom_files, symptom_rules, refiner_files, refiners, problems)
    _check_references(symptom_rules, refiners, paths, problems)
    if not symptom_rules and not problems:
        problems.append(RuleProblem(str(root), None, None, "no symptom rules found"))
    if problems:
        raise RuleError(problems)
    digest = _digest(root, [root / "ruleset.yaml", *symptom_files, *refiner_files])
    return Ruleset(
        name=str(meta.get("name", "faultstream")),
        semver=str(meta.get("version", "0.0.0")),
        digest=digest,
        symptom_rules=tuple(sorted(symptom_rules, key=lambda r: r.id)),
        refiners=tuple(sorted(refiners, key=lambda r: (r.order, r.id))),
        paths=paths,
    )


#: libyaml's loader when PyYAML was built with it (ten times faster on a few hundred rule files);
#: the node tree for line numbers is composed only for a file that fails validation.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _load_meta(root: Path, problems: list[RuleProblem]) -> dict[str, Any]:
    path = root / "ruleset.yaml"
    if not path.exists():
        return {}
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        problems.append(RuleProblem(str(path), _yaml_line(exc), None, f"invalid YAML: {exc}"))
        return {}
    return data if isinstance(data, dict) else {}


#: What a ruleset's ``requires:`` may name, and the distribution whose version answers.
_REQUIREMENTS = {"engine": "faultstream", "hyperscan": "hyperscan"}


def _check_requires(path: Path, requires: Any, problems: list[RuleProblem]) -> None:
    """``requires: {engine: ">=0.1", hyperscan: ">=0.9"}``: a ruleset written for a newer engine
    fails to load here with a reason, instead of misbehaving."""
    from importlib.metadata import PackageNotFoundError, version

    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    for name, spec in (requires or {}).items():
        where = f"requires.{name}"
        if name not in _REQUIREMENTS:
            known = ", ".join(_REQUIREMENTS)
            problems.append(RuleProblem(str(path), None, None, f"{where}: unknown; known: {known}"))
            continue
        try:
            wanted = SpecifierSet(str(spec))
            installed = version(_REQUIREMENTS[name])
        except InvalidSpecifier:
            problems.append(RuleProblem(str(path), None, None, f"{where}: not a version specifier: {spec!r}"))
            continue
        except PackageNotFoundError:
            continue  # running from a checkout that was never installed: nothing to compare
        if not wanted.contains(installed, prereleases=True):
            message = f"{where}: this ruleset needs {_REQUIREMENTS[name]} {spec}, found {installed}"
            problems.append(RuleProblem(str(path), None, None, message))


def _load_one(path: Path, model: type[SymptomRule] | type[RefinerRule], problems: list[RuleProblem]):
    text = path.read_text(encoding="utf-8")
    try:
        data = yaml.load(text, Loader=_SAFE_LOADER)
    except yaml.YAMLError as exc:
        problems.append(RuleProblem(str(path), _yaml_line(exc), None, f"invalid YAML: {exc}"))
        return None
    if not isinstance(data, dict):
        problems.append(RuleProblem(str(path), 1, None, "a rule file must hold one mapping"))
        return None
    rule_id = data.get("id") if isinstance(data.get("id"), str) else None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        for err in exc.errors():
            loc = tuple(err["loc"])
            where = ".".join(str(p) for p in loc) or "(rule)"
            message = f"{where}: {err['msg']}"
            problems.append(RuleProblem(str(path), _node_line(yaml.compose(text), loc), rule_id, message))
        return None


def _check_ids(root, symptom_files, symptom_rules, refiner_files, refiners, problems):
    paths: dict[str, str] = {}
    loaded = {r.id: r for r in [*symptom_rules, *refiners]}
    for path in [*symptom_files, *refiner_files]:
        rule_id = path.stem
        if rule_id not in loaded:
            continue
        if rule_id in paths:
            problems.append(RuleProblem(str(path), 1, rule_id, f"duplicate id, also in {paths[rule_id]}"))
        paths[rule_id] = str(path.relative_to(root))
    for rule in [*symptom_rules, *refiners]:
        if rule.id not in paths:
            where = next((str(p) for p in [*symptom_files, *refiner_files] if _declares(p, rule.id)), str(root))
            problems.append(RuleProblem(where, 1, rule.id, "file name must equal the rule id"))
    return paths


def _declares(path: Path, rule_id: str) -> bool:
    return f"id: {rule_id}" in path.read_text(encoding="utf-8")


def _check_references(symptom_rules, refiners, paths, problems) -> None:
    known_symptoms = {r.symptom for r in symptom_rules}
    known_rules = {r.id for r in symptom_rules}
    for refiner in refiners:
        for part in (refiner.target, refiner.cause):
            for name in part.symptoms:
                if name not in known_symptoms:
                    problems.append(
                        RuleProblem(
                            paths.get(refiner.id, refiner.id), None, refiner.id, f"unknown symptom '{name}'"
                        )
                    )
            for name in part.rules:
                if name not in known_rules:
                    problems.append(
                        RuleProblem(
                            paths.get(refiner.id, refiner.id), None, refiner.id, f"unknown rule '{name}'"
                        )
                    )


def _digest(root: Path, files: list[Path]) -> str:
    sha = hashlib.sha256()
    for path in files:
        if path.exists():
            sha.update(str(path.relative_to(root)).encode())
            sha.update(b"\0")
            sha.update(path.read_bytes())
            sha.update(b"\0")
    return sha.hexdigest()[:12]


def _yaml_line(exc: yaml.YAMLError) -> int | None:
    mark = getattr(exc, "problem_mark", None)
    return mark.line + 1 if mark is not None else None


def _node_line(node: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """Walk the composed YAML tree along a pydantic error location to the line it points at."""
    if node is None:
        return None
    line = node.start_mark.line + 1
    for part in loc:
        child = None
        if isinstance(node, yaml.MappingNode):
            child = next((v for k, v in node.value if k.value == part), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            child = node.value[part]
        if child is None:
            break
        node, line = child, child.start_mark.line + 1
    return line
