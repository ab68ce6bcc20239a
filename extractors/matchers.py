"""The two matchers: batch Hyperscan (production) and pure ``re`` (reference for tests).

Both take a batch of normalized lines and return one :class:`Symptom` per (line, rule) that
matched, in (line, rule) order.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from itertools import accumulate, count
from operator import add
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
        self._bit = _pattern_bits(self._db.owner)

    def candidates(self, texts: Sequence[str]) -> list[tuple[int, int]]:
        """Sorted, distinct (line index, rule index) pairs Hyperscan reports for ``texts``."""
        return sorted(self._hits(texts))

    def _hits(self, texts: Sequence[str]) -> dict[tuple[int, int], int]:
        """(line index, rule index) → mask of the rule's include patterns Hyperscan reported there.
        ``confirm`` runs only those: Hyperscan reports every pattern ``re`` would find on the line
        (the same assumption the rule-level candidates make, checked against the ``re`` matcher by
        tests/extractors/test_matchers_agree.py), so a rule's sixth pattern costs one search, not six."""
        if not texts:
            return {}
        data, ends = _joined(texts)
        hits: list[tuple[int, int]] = []
        append = hits.append

        def on_match(pattern_id: int, start: int, end: int, flags: int, context: object) -> None:
            append((pattern_id, end))

        self._db.database.scan(data, match_event_handler=on_match)
        owner, bit = self._db.owner, self._bit
        found: dict[tuple[int, int], int] = {}
        for pid, end in hits:
            key = (bisect_left(ends, end), owner[pid])
            found[key] = found.get(key, 0) | bit[pid]
        return found

    def hits(self, texts: Sequence[str]) -> dict[tuple[int, int], int]:
        """(line index, rule index) → mask of the rule's include patterns Hyperscan reported on
        that line: what ``match_hits`` confirms (the extractor's prefilter scans once for both)."""
        return self._hits(texts)

    def match_batch(self, lines: Sequence[LineLike]) -> list[tuple[int, Symptom]]:
        """(line index, symptom) for every rule that fires, in (line, rule) order."""
        return self.match_hits(lines, self._hits([line.text for line in lines]))

    def match_hits(
        self, lines: Sequence[LineLike], hits: dict[tuple[int, int], int]
    ) -> list[tuple[int, Symptom]]:
        """``match_batch`` of lines already scanned: ``hits`` as ``hits`` gave them for their texts."""
        found: list[tuple[int, Symptom]] = []
        for line_index, rule_index in sorted(hits):
            line, compiled = lines[line_index], self.rules[rule_index]
            if line.source not in compiled.sources:
                continue
            captures = compiled.confirm(line.text, hits[line_index, rule_index])
            if captures is not None:
                found.extend((line_index, symptom) for symptom in compiled.symptoms(line, captures))
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
                    found.extend((line_index, symptom) for symptom in compiled.symptoms(line, captures))
        return found

    def extract_batch(self, lines: Sequence[LineLike]) -> list[Symptom]:
        return [symptom for _, symptom in self.match_batch(lines)]


def _joined(texts: Sequence[str]) -> tuple[bytes, list[int]]:
    """The texts as one buffer, a newline after each but the last, and each line's end offset + 1
    in it (where its newline is). A batch of ASCII lines (nearly all) is encoded in one call, and
    its offsets come from the texts' lengths without a Python step per line."""
    # surrogatepass: a str may hold a lone surrogate ("\ud800") and the database scans bytes
    # without UTF-8 checks; surrogateescape raised on it and lost the whole batch
    joined = "\n".join(texts)
    if joined.isascii():
        return joined.encode("ascii"), list(map(add, accumulate(map(len, texts)), count(1)))
    encoded = [t.encode("utf-8", "surrogatepass") for t in texts]
    return b"\n".join(encoded), list(accumulate(len(b) + 1 for b in encoded))


def _pattern_bits(owner: list[int]) -> list[int]:
    """Pattern id → its bit among its rule's include patterns: ids run rule by rule, each rule's
    patterns in order (extractors/hyperscan_db.py), the order ``CompiledRule.include`` has."""
    bits: list[int] = []
    seen: dict[int, int] = {}
    for rule in owner:
        bits.append(1 << seen.get(rule, 0))
        seen[rule] = seen.get(rule, 0) + 1
    return bits
