"""A Faultstream verdict in the shape NVIDIA Attribution's v2 API answers (AttributionResponseV2)."""

from __future__ import annotations

from typing import Any

from streams.api.collectors import EvidenceLine, collect

__all__ = ["attribution_response", "observation_ref"]


def observation_ref(source: dict[str, Any]) -> dict[str, Any]:
    """Provenance of an attributor's line: ``logs.applog:<observation id>:<pos>`` becomes the
    observation id and the line's 1-based position in it. A line the stream read from Kafka keeps
    its ``topic:partition:offset`` string (there is no observation behind it)."""
    topic, _, rest = source["observation_id"].partition(":")
    partition, _, offset = rest.partition(":")
    if topic.startswith(("logs.", "events.")) and partition.isdigit() and offset.isdigit():
        return {**source, "observation_id": int(partition), "pos": int(offset)}
    return source


def attribution_response(
    verdict: dict[str, Any], observation_ids: list[int], lines: list[EvidenceLine], from_attributor: bool
) -> dict[str, Any]:
    block = dict(verdict["verdict"])
    symptoms = verdict["symptoms"]
    if from_attributor:
        if block.get("root_symptom"):
            root = block["root_symptom"]
            block["root_symptom"] = {**root, "source": observation_ref(root["source"])}
        symptoms = {
            name: [{**entry, "source": observation_ref(entry["source"])} for entry in entries]
            for name, entries in symptoms.items()
        }
    root = verdict.get("root_symptom") or {}
    return {
        "verdict": block,
        "symptoms": symptoms,
        "observation_context": observation_ids,
        "collectors": collect(lines, root.get("catalog_id")),
        "workload_id": verdict["workload_id"],
        "faultstream": verdict,  # the whole verdict: chain, responsible nodes, revision, job facts
        "model_type": "AttributionResponseV2",
    }
