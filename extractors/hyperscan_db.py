"""One Hyperscan database for every pattern of every rule, compiled once per ruleset version.

Compiling a few hundred patterns takes seconds, so the serialized database can be cached on disk
under the ruleset digest and loaded with ``loadb`` next time. The cache directory is the caller's
(the adapters pass the ``matcher_cache_dir`` setting); given none, nothing touches the disk.
"""

from __future__ import annotations

import os
from pathlib import Path

import hyperscan

from extractors.compiled import CompiledRule
from extractors.loader import RuleError, RuleProblem, Ruleset

__all__ = ["HyperscanDatabase", "build_database", "cache_file"]


class HyperscanDatabase:
    """The compiled database plus the map from Hyperscan pattern id to rule index."""

    def __init__(self, database: hyperscan.Database, owner: list[int]) -> None:
        self.database = database
        self.owner = owner


def _flags(case_insensitive: bool) -> int:
    # MULTILINE: a batch is the lines joined by newlines, so ^ and $ must mean "line start/end",
    # exactly what they mean to ``re`` on the single line.
    return hyperscan.HS_FLAG_MULTILINE | (hyperscan.HS_FLAG_CASELESS if case_insensitive else 0)


def _expressions(rules: list[CompiledRule]) -> tuple[list[bytes], list[int], list[int]]:
    expressions: list[bytes] = []
    flags: list[int] = []
    owner: list[int] = []
    for index, compiled in enumerate(rules):
        flag = _flags(compiled.rule.case_insensitive)
        for pattern in compiled.rule.patterns:
            expressions.append(pattern.encode("utf-8"))
            flags.append(flag)
            owner.append(index)
    return expressions, flags, owner


def _compile(expressions: list[bytes], flags: list[int]) -> hyperscan.Database:
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    database.compile(
        expressions=expressions,
        ids=list(range(len(expressions))),
        elements=len(expressions),
        flags=flags,
    )
    return database


def _locate_error(ruleset: Ruleset, rules: list[CompiledRule]) -> RuleError:
    """Compile pattern by pattern to name the rule and file Hyperscan refused."""
    problems: list[RuleProblem] = []
    for compiled in rules:
        rule = compiled.rule
        flag = _flags(rule.case_insensitive)
        for pattern in rule.patterns:
            try:
                _compile([pattern.encode("utf-8")], [flag])
            except hyperscan.error as exc:
                path = ruleset.paths.get(rule.id, rule.id)
                problems.append(RuleProblem(path, None, rule.id, f"Hyperscan: {exc} in pattern {pattern!r}"))
    return RuleError(problems or [RuleProblem("rules", None, None, "Hyperscan refused the ruleset")])


def cache_file(cache_dir: Path, ruleset: Ruleset) -> Path:
    return cache_dir / f"{ruleset.digest}-{hyperscan.__version__}.db"


def build_database(
    ruleset: Ruleset, rules: list[CompiledRule], cache_dir: Path | None = None
) -> HyperscanDatabase:
    """Load the database from ``cache_dir`` or compile it (and store it there); no directory, no disk."""
    expressions, flags, owner = _expressions(rules)
    cache = None if cache_dir is None else cache_file(cache_dir, ruleset)
    if cache is not None:
        cached = _read_cache(cache)
        if cached is not None:
            return HyperscanDatabase(cached, owner)
    try:
        database = _compile(expressions, flags)
    except hyperscan.error:
        raise _locate_error(ruleset, rules) from None
    if cache is not None:
        _write_cache(cache, database)
    return HyperscanDatabase(database, owner)


def _read_cache(cache: Path) -> hyperscan.Database | None:
    try:
        database = hyperscan.loadb(cache.read_bytes(), hyperscan.HS_MODE_BLOCK)
        database.scratch = hyperscan.Scratch(database)  # loadb leaves no scratch space
        return database
    except (hyperscan.error, OSError, TypeError):
        return None  # absent, stale or truncated: compiled again by the caller


def _write_cache(cache: Path, database: hyperscan.Database) -> None:
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(hyperscan.dumpb(database))
        tmp.replace(cache)
    except OSError:
        pass  # the cache only saves start-up time
