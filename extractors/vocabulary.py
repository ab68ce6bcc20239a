"""The words rules, the engine and verdicts share: failure domains and the roles evidence plays.

Declared once here, in the bottom layer, so the rule loader, the correlator and the adapters
name the same members (docs/rules.md explains each role, docs/verdict.md each domain). They are
``StrEnum``s: a member equals its string, and JSON holds the plain string.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

__all__ = [
    "CAUSE_ROLES",
    "FOLLOWER_ROLES",
    "NODE_DOMAINS",
    "Domain",
    "RefinedRole",
    "Role",
    "RuleDomain",
    "RuleRole",
    "VerdictDomain",
]


class Domain(StrEnum):
    HARDWARE = "hardware"
    SYSTEM_SOFTWARE = "system_software"
    INFRASTRUCTURE = "infrastructure"
    USER = "user"
    NONE = "none"  # a rule's: the symptom blames nothing (benign lines, markers, context)
    AMBIGUOUS = "ambiguous"  # a verdict's: independent causes of several domains
    UNATTRIBUTED = "unattributed"  # a verdict's: no evidence of a cause


class Role(StrEnum):
    CAUSE = "cause"
    COMPANION = "companion"
    ECHO = "echo"
    CONTEXT = "context"
    BENIGN = "benign"
    MARKER = "marker"
    DOWNSTREAM = "downstream"  # given by a refiner: it followed from a cause


#: The domains a rule may name.
RuleDomain = Literal[Domain.HARDWARE, Domain.SYSTEM_SOFTWARE, Domain.INFRASTRUCTURE, Domain.USER, Domain.NONE]
#: The domains a verdict may name.
VerdictDomain = Literal[
    Domain.HARDWARE,
    Domain.SYSTEM_SOFTWARE,
    Domain.INFRASTRUCTURE,
    Domain.USER,
    Domain.AMBIGUOUS,
    Domain.UNATTRIBUTED,
]
#: The roles a rule may give its symptom.
RuleRole = Literal[Role.CAUSE, Role.COMPANION, Role.ECHO, Role.CONTEXT, Role.BENIGN, Role.MARKER]
#: The roles a refiner may demote a symptom to.
RefinedRole = Literal[Role.DOWNSTREAM, Role.COMPANION, Role.CONTEXT]

#: Domains whose cause is the node's own: its nodes are the responsible ones.
NODE_DOMAINS = (Domain.HARDWARE, Domain.SYSTEM_SOFTWARE, Domain.INFRASTRUCTURE)
#: Roles that can decide a verdict's domain.
CAUSE_ROLES = (Role.CAUSE, Role.COMPANION)
#: Roles of evidence that followed from another cause (a verdict's downstream chain).
FOLLOWER_ROLES = (Role.ECHO, Role.DOWNSTREAM, Role.COMPANION)
