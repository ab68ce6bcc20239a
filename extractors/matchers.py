"""The two matchers: batch Hyperscan (production) and pure ``re`` (reference for tests).

Both take a batch of normalized lines and return one :class:`Symptom` per (line, rule) that
matched, in (line, rule) order.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from itertools import accumulate
from pathlib import Path
from typing import Protocol

from extractors.compiled import CompiledRule, compile_rules
from extractors.hyperscan_db import HyperscanDatabase, build_database
from extractors.loader import Ruleset
from extractors.symptom import LineLike, Symptom

__all__ = ["BatchMatcher", "HyperscanMatcher", "ReferenceMatcher"]


class BatchMatcher(Protocol):
    """What the engine needs of a matcher: a batch of lines in, its symptoms out."""

    def extract_batch(self, lines: Sequence[LineLike]) -> list[Symptom]: ...


class HyperscanMatcher:
    """Scans a whole batch with one ``scan`` call on the lines joined by newlines.

    Match end offsets map back to lines by bisection; each candidate (line, rule) is confirmed
    by the rule's ``re`` programs on that single line, so a match that would straddle two lines
    is dropped and captures come out exactly as the reference matcher's.
    """

    def __init__(self, ruleset: Ruleset, cache_dir: Path | None = None) -> None:
        """``cache_dir``: where the compiled database is kept between processes (the adapters pass
        the ``matcher_cache_dir`` setting); None compiles it here and writes nothing."""
        self.rules = compile_rules(ruleset)
        self._db: HyperscanDatabase = build_database(ruleset, self.rules, cache_dir)
        self._scratch = None

    def candidates(self, texts: Sequence[str]) -> list[tuple[int, int]]:
        """Sorted, distinct (line index, rule index) pairs Hyperscan reports for ``texts``."""
        if not texts:
            return []
        # surrogatepass: a str may hold a lone surrogate ("\ud800") and the database scans bytes
        # without UTF-8 checks; surrogateescape raised on it and lost the whole batch
        encoded = [t.encode("utf-8", "surrogatepass") for t in texts]
        ends = list(accumulate(len(b) + 1 for b in encoded))
        hits: list[tuple[int, int]] = []
        append = hits.append

        def on_match(pattern_id: int, start: int, end: int, flags: int, context: object) -> None:
            append((pattern_id, end))

        self._db.database.scan(b"\n".join(encoded), match_event_handler=on_match)
        owner = self._db.owner
        return sorted({(bisect_left(ends, end), owner[pid]) for pid, end in hits})

    def match_batch(self, lines: Sequence[LineLike]) -> list[tuple[int, Symptom]]:
        """(line index, symptom) for every rule that fires, in (line, rule) order."""
        found: list[tuple[int, Symptom]] = []
        for line_index, rule_index in self.candidates([line.text for line in lines]):
            line, compiled = lines[line_index], self.rules[rule_index]
            if line.source not in compiled.sources:
                continue
            captures = compiled.confirm(line.text)
            if captures is not None:
                found.append((line_index, compiled.symptom(line, captures)))
        return found

    def extract_batch(self, lines: Sequence[LineLike]) -> list[Symptom]:
        return [symptom for _, symptom in self.match_batch(lines)]


class ReferenceMatcher:
    """Every rule's ``re`` programs on every line: slow, obviously correct, for tests."""

    def __init__(self, ruleset: Ruleset) -> None:
        self.rules: list[CompiledRule] = compile_rules(ruleset)

    def match_batch(self, lines: Sequence[LineLike]) -> list[tuple[int, Symptom]]:
        found: list[tuple[int, Symptom]] = []
        for line_index, line in enumerate(lines):
            for compiled in self.rules:
                if line.source not in compiled.sources:
                    continue
                captures = compiled.confirm(line.text)
                if captures is not None:
                    found.append((line_index, compiled.symptom(line, captures)))
        return found

    def extract_batch(self, lines: Sequence[LineLike]) -> list[Symptom]:
        return [symptom for _, symptom in self.match_batch(lines)]
