"""The verdict: one per terminated workload run (docs/verdict.md is written from these models).

Besides Faultstream's own fields, :class:`AttributionBlock` keeps the shape NVIDIA
Attribution's v2 API returns (``root_symptom`` with ``source``, ``attribution_outcome`` such as
"Fail User", ``terminal_states``, ``failure_domains``, ``cancellation_actors``,
``uncertainty_type``), so its users can read ours.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

from extractors.vocabulary import VerdictDomain

__all__ = [
    "AttributionBlock",
    "ChainElement",
    "JobFacts",
    "NodeSource",
    "ObservationSource",
    "RootSymptom",
    "Verdict",
]

TerminalState = Literal["fail", "cancel", "timeout", "success"]
Uncertainty = Literal[
    "multiple_nodes", "competing_domains", "secondary_only", "no_evidence", "weak_evidence", "corrected_only"
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RootSymptom(_Model):
    symptom: str
    rule_id: str
    catalog_id: str | None
    domain: str
    node: str | None
    time: str  # RFC 3339, UTC
    time_ms: int
    source: str  # dmesg | syslog | applog | k8s | scheduler
    origin: str  # topic:partition:offset[#line] of the record that carried the line
    line: str
    captures: dict[str, str]


class ChainElement(_Model):
    symptom: str
    rule_id: str
    domain: str
    role: Literal["root", "downstream", "context"]
    nodes: list[str]  # every node, or for a downstream/context element on many, a sample
    first: str
    last: str
    count: int
    explained_by: str | None = None
    #: set only when ``nodes`` is a sample: how many nodes logged the element
    nodes_total: int | None = None

    @model_serializer(mode="wrap")
    def _without_absent_total(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        if data.get("nodes_total") is None:
            data.pop("nodes_total", None)  # a complete node list: the field is not written at all
        return data


class JobFacts(_Model):
    scheduler: str | None
    state: str | None  # the scheduler's own terminal state (Slurm-style)
    start: str | None
    end: str | None
    nodes: list[str]
    user: str | None
    name: str | None
    exit_code: int | None
    signal: int | None


class ObservationSource(_Model):
    observation_id: str
    source: str
    pos: int
    line: str
    rule: str
    time: str


class RootSymptomCompat(_Model):
    symptom: str
    source: ObservationSource
    catalog_id: str | None


class AttributionBlock(_Model):
    """NVIDIA Attribution v2 ``verdict`` shape."""

    root_symptom: RootSymptomCompat | None
    attribution_outcome: str
    detail: str
    terminal_states: list[str]
    failure_domains: list[str]
    cancellation_actors: list[str]
    uncertainty_type: str | None


class NodeSource(_Model):
    type: Literal["NodeSource"] = "NodeSource"
    node: str
    status: Literal["bad", "interesting"]
    source: ObservationSource


class Verdict(_Model):
    schema_version: Literal[1] = 1
    workload_id: str
    run_start: str | None
    terminal_state: TerminalState
    sub_domain: VerdictDomain | None
    failure_domains: list[str]
    responsible_nodes: list[str]
    root_symptom: RootSymptom | None
    chain: list[ChainElement]
    uncertainty_type: Uncertainty | None
    cancellation_actor: str | None
    detail: str
    job: JobFacts
    ruleset_version: str
    lines_seen: int
    symptoms_seen: int
    revision: int
    verdict: AttributionBlock
    symptoms: dict[str, list[NodeSource]]
