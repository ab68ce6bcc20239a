"""The API's OpenAPI 3.1 description, served at /v2/openapi.json and checked into docs/api.md."""

from __future__ import annotations

from typing import Any

__all__ = ["OPENAPI"]


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json_body(schema: dict[str, Any]) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": schema}}}


def _answer(description: str, schema: dict[str, Any] | None) -> dict[str, Any]:
    if schema is None:
        return {"description": description}
    return {"description": description, "content": {"application/json": {"schema": schema}}}


ERRORS = {
    "400": _answer("malformed JSON or observation body", _ref("Error")),
    "404": _answer("unknown attributor", _ref("Error")),
    "413": _answer("request body over 8 MiB", _ref("Error")),
    "422": _answer("a field of the wrong type or value", _ref("Error")),
}
ID = {
    "name": "id",
    "in": "path",
    "required": True,
    "schema": {"type": "string"},
    "description": "attributor id (int64); for GET .../attribution also a workload id the stream decided",
}
TIME = {"type": ["string", "null"], "format": "date-time"}
STRING_OR_NULL = {"type": ["string", "null"]}

SCHEMAS: dict[str, Any] = {
    "Error": {
        "type": "object",
        "required": ["detail", "status"],
        "properties": {"detail": {"type": "string"}, "status": {"type": "integer"}},
    },
    "Workload": {
        "type": "object",
        "required": ["id"],
        "properties": {
            "id": {"type": ["string", "integer"]},
            "type": {"type": "string", "description": "slurm, kueue, ... (the scheduler)"},
            "job_start_time": TIME,
            "job_end_time": TIME,
            "interest_start_time": TIME,
            "interest_end_time": TIME,
            "timezone": STRING_OR_NULL,
            "status": {
                "type": ["string", "null"],
                "description": "failed, completed, cancelled, timeout, "
                "node_fail, out_of_memory, preempted, ... (any case)",
            },
            "nodes": {
                "type": "object",
                "additionalProperties": {"type": "array", "items": {}},
                "description": "host -> GPU indices",
            },
            "name": STRING_OR_NULL,
            "username": STRING_OR_NULL,
            "framework": STRING_OR_NULL,
        },
    },
    "Metadata": {
        "type": "object",
        "properties": {k: STRING_OR_NULL for k in ("cluster", "agent", "tenant", "ruleset")},
    },
    "AttributorRequest": {
        "type": "object",
        "required": ["workload"],
        "properties": {"workload": _ref("Workload"), "metadata": _ref("Metadata")},
    },
    "AttributorResponseV2": {
        "type": "object",
        "required": ["attributor_id"],
        "properties": {
            "attributor_id": {"type": "integer", "format": "int64"},
            "model_type": {"const": "AttributorResponseV2"},
        },
    },
    "Attributor": {
        "type": "object",
        "required": ["attributor_id", "workload"],
        "properties": {
            "attributor_id": {"type": "integer", "format": "int64"},
            "workload": _ref("Workload"),
            "metadata": _ref("Metadata"),
            "created_ms": {"type": "integer"},
            "observation_context": {"type": "array", "items": {"type": "integer"}},
        },
    },
    "AttributorListResponseV2": {
        "type": "object",
        "required": ["attributors", "total", "next_offset"],
        "properties": {
            "attributors": {"type": "array", "items": _ref("Attributor")},
            "total": {"type": "integer"},
            "offset": {"type": "integer"},
            "limit": {"type": "integer"},
            "next_offset": {"type": ["integer", "null"]},
            "model_type": {"const": "AttributorListResponseV2"},
        },
    },
    "ObservationRequest": {
        "type": "object",
        "required": ["context", "body"],
        "properties": {
            "context": {
                "type": "object",
                "properties": {
                    "time_interval": {"type": "object", "properties": {"start": TIME, "end": TIME}},
                    "source": {"type": "string", "description": "applog, syslog, dmesg, scheduler, ..."},
                },
            },
            "body": {"type": "string", "description": "JSON string: a list of ObservationLine"},
        },
    },
    "ObservationLine": {
        "type": "object",
        "required": ["body"],
        "properties": {
            "body": {"type": "string"},
            "time": TIME,
            "resources": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"kind": {"type": "string"}, "hostname": {"type": "string"}},
                },
            },
        },
    },
    "ObservationResponseV2": {
        "type": "object",
        "required": ["observation_id", "model_type"],
        "properties": {
            "observation_id": {"type": "integer", "format": "int64"},
            "model_type": {"const": "ObservationResponseV2"},
        },
    },
    "Source": {
        "type": "object",
        "required": ["observation_id", "source", "pos", "line", "rule", "time"],
        "properties": {
            "observation_id": {
                "type": ["integer", "string"],
                "description": "observation id; topic:partition:offset for a stream verdict",
            },
            "source": {"type": "string"},
            "pos": {"type": "integer"},
            "line": {"type": "string"},
            "rule": {"type": "string"},
            "time": {"type": "string"},
        },
    },
    "Verdict": {
        "type": "object",
        "required": [
            "root_symptom",
            "attribution_outcome",
            "detail",
            "terminal_states",
            "failure_domains",
            "cancellation_actors",
            "uncertainty_type",
        ],
        "properties": {
            "root_symptom": {
                "type": ["object", "null"],
                "properties": {
                    "symptom": {"type": "string"},
                    "source": _ref("Source"),
                    "catalog_id": STRING_OR_NULL,
                },
            },
            "attribution_outcome": {"type": "string", "description": "Fail User, Fail Hardware, ..., Success"},
            "detail": {"type": "string"},
            "terminal_states": {"type": "array", "items": {"type": "string"}},
            "failure_domains": {"type": "array", "items": {"type": "string"}},
            "cancellation_actors": {"type": "array", "items": {"type": "string"}},
            "uncertainty_type": STRING_OR_NULL,
        },
    },
    "AttributionResponseV2": {
        "type": "object",
        "required": ["verdict", "symptoms", "observation_context", "collectors", "model_type"],
        "properties": {
            "verdict": _ref("Verdict"),
            "symptoms": {
                "type": "object",
                "additionalProperties": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "type": {"const": "NodeSource"},
                            "node": {"type": "string"},
                            "status": {"enum": ["bad", "interesting"]},
                            "source": _ref("Source"),
                        },
                    },
                },
            },
            "observation_context": {"type": "array", "items": {"type": "integer"}},
            "collectors": {
                "type": "object",
                "description": 'what the logs say; "NA" where they are silent',
                "properties": {
                    k: {}
                    for k in (
                        "nccl_version",
                        "cuda_version",
                        "watchdog_error_time",
                        "watchdog_timeout_seconds",
                        "bad_pairs",
                        "xid_pci_mappings",
                        "recovery_actions",
                        "investigatory_actions",
                    )
                },
            },
            "workload_id": {"type": "string"},
            "faultstream": {"type": "object", "description": "the full Faultstream verdict (docs/verdict.md)"},
            "model_type": {"const": "AttributionResponseV2"},
        },
    },
}

OPENAPI: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "Faultstream attribution API (NVIDIA Attribution v2 compatible)", "version": "2"},
    "paths": {
        "/v2/healthz": {
            "get": {"summary": "liveness", "responses": {"200": _answer("the body is null", {"type": "null"})}}
        },
        "/v2/openapi.json": {
            "get": {
                "summary": "this document",
                "responses": {"200": _answer("OpenAPI 3.1", {"type": "object"})},
            }
        },
        "/v2/attributor": {
            "post": {
                "summary": "create an attributor for a workload",
                "requestBody": _json_body(_ref("AttributorRequest")),
                "responses": {"200": _answer("created", _ref("AttributorResponseV2")), **ERRORS},
            },
            "get": {
                "summary": "list attributors, oldest first",
                "parameters": [
                    {"name": "offset", "in": "query", "schema": {"type": "integer", "minimum": 0}},
                    {
                        "name": "limit",
                        "in": "query",
                        "schema": {"type": "integer", "minimum": 1, "maximum": 500},
                    },
                ],
                "responses": {"200": _answer("a page", _ref("AttributorListResponseV2")), "400": ERRORS["400"]},
            },
        },
        "/v2/attributor/{id}": {
            "get": {
                "summary": "one attributor",
                "parameters": [ID],
                "responses": {"200": _answer("the attributor", _ref("Attributor")), "404": ERRORS["404"]},
            },
            "delete": {
                "summary": "delete an attributor and its observations",
                "parameters": [ID],
                "responses": {"200": _answer("deleted", {"type": "object"}), "404": ERRORS["404"]},
            },
        },
        "/v2/attributor/{id}/observation": {
            "post": {
                "summary": "add log lines",
                "parameters": [ID],
                "requestBody": _json_body(_ref("ObservationRequest")),
                "responses": {"200": _answer("accepted", _ref("ObservationResponseV2")), **ERRORS},
            },
        },
        "/v2/attributor/{id}/attribution": {
            "get": {
                "summary": "the verdict on every observation accepted so far",
                "parameters": [ID],
                "responses": {
                    "200": _answer("the attribution", _ref("AttributionResponseV2")),
                    "404": ERRORS["404"],
                    "409": _answer("the workload has not ended", _ref("Error")),
                },
            },
        },
        "/v2/attributor/{id}/recording": {
            "get": {
                "summary": "the evidence as a recording for faultstream backtest",
                "parameters": [ID],
                "responses": {
                    "200": {"description": "JSON Lines", "content": {"application/x-ndjson": {}}},
                    "404": ERRORS["404"],
                },
            },
        },
    },
    "components": {"schemas": SCHEMAS},
}
