"""Rules and matching: YAML rules → one Hyperscan database → symptoms. Pure; no Kafka here."""

from extractors.compiled import job_reference
from extractors.loader import RuleError, Ruleset, default_rules_dir, load_ruleset
from extractors.matchers import HyperscanMatcher, ReferenceMatcher
from extractors.symptom import Symptom

__all__ = [
    "HyperscanMatcher",
    "ReferenceMatcher",
    "RuleError",
    "Ruleset",
    "Symptom",
    "default_rules_dir",
    "job_reference",
    "load_ruleset",
]
