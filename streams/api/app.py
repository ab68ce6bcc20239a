"""The v2 API (aiohttp): attributors, observations, attributions; errors are JSON with a reason."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web
from pydantic import ValidationError

from extractors.loader import Ruleset
from sinks.redis_keys import VerdictKeys
from streams.api.collectors import EvidenceLine
from streams.api.evidence import AttributorEvidence, NotAttributable, attribute, line_time_ms, recording_jsonl
from streams.api.models import (
    ApiInputError,
    AttributorRequest,
    ObservationRequest,
    Workload,
    parse_observation_lines,
)
from streams.api.openapi import OPENAPI
from streams.api.response import attribution_response
from streams.api.store import ATTRIBUTOR_ID_BASE, AttributorStore, StoredAttributor
from streams.settings import DEFAULT_MATCHER_CACHE_DIR

__all__ = ["MAX_REQUEST_BYTES", "api_app"]

log = logging.getLogger("faultstream.api")

#: Largest request body accepted (an observation of about 20,000 log lines); larger is a 413.
MAX_REQUEST_BYTES = 8 << 20
MAX_PAGE = 500

STORE = web.AppKey("store", AttributorStore)
RULESET = web.AppKey("ruleset", Ruleset)
PREFIX = web.AppKey("prefix", str)
MATCHER_CACHE_DIR = web.AppKey("matcher_cache_dir", Path)


def _json(body: Any, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=status, content_type="application/json")


def _error(status: int, message: str) -> web.Response:
    return _json({"detail": message, "status": status}, status)


@web.middleware
async def json_errors(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]):
    """Every failure answers JSON: the client reads ``detail``, whatever went wrong."""
    try:
        return await handler(request)
    except ApiInputError as exc:
        return _error(exc.status, str(exc))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        return _error(422, f"{where}: {first['msg']}")
    except web.HTTPRequestEntityTooLarge:
        return _error(413, f"request body over {MAX_REQUEST_BYTES} bytes")
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return _error(exc.status, exc.reason)
    except Exception:  # a bug must not leak a traceback page to a client
        log.exception("request %s %s failed", request.method, request.path)
        return _error(500, "internal error")


async def _body(request: web.Request) -> Any:
    raw = await request.read()
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ApiInputError(f"request body is not JSON: {exc}") from exc


def _attributor_id(request: web.Request) -> int:
    raw = request.match_info["id"]
    if not raw.isdigit():
        raise ApiInputError(f"unknown attributor {raw!r}", 404)
    return int(raw)


async def _existing(request: web.Request) -> StoredAttributor:
    attributor_id = _attributor_id(request)
    found = await request.app[STORE].get(attributor_id)
    if found is None:
        raise ApiInputError(f"unknown attributor {attributor_id}", 404)
    return found


def _summary(attributor: StoredAttributor) -> dict[str, Any]:
    return {
        "attributor_id": attributor.attributor_id,
        **attributor.request,
        "created_ms": attributor.created_ms,
    }


async def healthz(request: web.Request) -> web.Response:
    return _json(None)


async def openapi(request: web.Request) -> web.Response:
    return _json(OPENAPI)


async def create_attributor(request: web.Request) -> web.Response:
    create = AttributorRequest.model_validate(await _body(request))
    stored = await request.app[STORE].create(create.model_dump(mode="json"))
    return _json({"attributor_id": stored.attributor_id, "model_type": "AttributorResponseV2"})


async def list_attributors(request: web.Request) -> web.Response:
    offset, limit = _page_args(request)
    total, page = await request.app[STORE].page(offset, limit)
    after = offset + len(page)
    return _json(
        {
            "attributors": [_summary(a) for a in page],
            "total": total,
            "offset": offset,
            "limit": limit,
            "next_offset": after if after < total else None,
            "model_type": "AttributorListResponseV2",
        }
    )


def _page_args(request: web.Request) -> tuple[int, int]:
    try:
        offset = int(request.query.get("offset", "0"))
        limit = int(request.query.get("limit", "50"))
    except ValueError as exc:
        raise ApiInputError("offset and limit must be integers") from exc
    if offset < 0 or not 1 <= limit <= MAX_PAGE:
        raise ApiInputError(f"offset must be >= 0 and limit between 1 and {MAX_PAGE}")
    return offset, limit


async def get_attributor(request: web.Request) -> web.Response:
    attributor = await _existing(request)
    observations = await request.app[STORE].observations(attributor.attributor_id)
    return _json({**_summary(attributor), "observation_context": [o.observation_id for o in observations]})


async def delete_attributor(request: web.Request) -> web.Response:
    attributor_id = _attributor_id(request)
    if not await request.app[STORE].delete(attributor_id):
        raise ApiInputError(f"unknown attributor {attributor_id}", 404)
    return _json({"attributor_id": attributor_id, "deleted": True, "model_type": "DeleteResponseV2"})


async def post_observation(request: web.Request) -> web.Response:
    attributor_id = _attributor_id(request)
    observation = ObservationRequest.model_validate(await _body(request))
    lines = parse_observation_lines(observation.body)
    interval = observation.context.time_interval
    stored = await request.app[STORE].add_observation(
        attributor_id,
        observation.context.source,
        (
            interval.start.isoformat() if interval and interval.start else None,
            interval.end.isoformat() if interval and interval.end else None,
        ),
        [
            {"body": line.body, "hostname": line.hostname, "time": line.time.isoformat() if line.time else None}
            for line in lines
        ],
    )
    if stored is None:
        raise ApiInputError(f"unknown attributor {attributor_id}", 404)
    return _json({"observation_id": stored.observation_id, "model_type": "ObservationResponseV2"})


async def _evidence(request: web.Request, attributor: StoredAttributor) -> AttributorEvidence:
    workload = Workload.model_validate(attributor.request["workload"])
    return AttributorEvidence(workload, await request.app[STORE].observations(attributor.attributor_id))


async def get_attribution(request: web.Request) -> web.Response:
    raw = request.match_info["id"]
    attributor = await request.app[STORE].get(int(raw)) if raw.isdigit() else None
    if attributor is None:
        if raw.isdigit() and int(raw) >= ATTRIBUTOR_ID_BASE:
            raise ApiInputError(f"unknown attributor {raw}", 404)
        return await _stream_attribution(request, raw)
    evidence = await _evidence(request, attributor)
    try:
        app = request.app
        verdict = await asyncio.to_thread(attribute, evidence, app[RULESET], app[MATCHER_CACHE_DIR])
    except NotAttributable as exc:
        raise ApiInputError(str(exc), 409) from exc
    lines = [
        EvidenceLine(line["body"], line.get("hostname"), line_time_ms(line, observation, evidence.workload))
        for observation in evidence.observations
        for line in observation.lines
    ]
    ids = [o.observation_id for o in evidence.observations]
    return _json(attribution_response(verdict.model_dump(mode="json"), ids, lines, from_attributor=True))


async def _stream_attribution(request: web.Request, workload_id: str) -> web.Response:
    """A verdict the stream decided, read from Redis by its workload id (latest revision)."""
    store = request.app[STORE]
    blob = await store.client.hget(VerdictKeys(request.app[PREFIX]).verdict(workload_id), "json")
    if blob is None:
        raise ApiInputError(f"unknown attributor or workload {workload_id!r}", 404)
    verdict = orjson.loads(blob)
    root = verdict.get("root_symptom")
    lines = [EvidenceLine(root["line"], root["node"], root["time_ms"])] if root else []
    return _json(attribution_response(verdict, [], lines, from_attributor=False))


async def get_recording(request: web.Request) -> web.Response:
    """The attributor's evidence as a recording: ``faultstream backtest -i`` gives the same verdict."""
    attributor = await _existing(request)
    body = recording_jsonl(await _evidence(request, attributor))
    return web.Response(body=body, content_type="application/x-ndjson")


def api_app(
    store: AttributorStore, ruleset: Ruleset, prefix: str, matcher_cache_dir: Path = DEFAULT_MATCHER_CACHE_DIR
) -> web.Application:
    app = web.Application(middlewares=[json_errors], client_max_size=MAX_REQUEST_BYTES)
    app[STORE], app[RULESET], app[PREFIX] = store, ruleset, prefix
    app[MATCHER_CACHE_DIR] = matcher_cache_dir
    app.router.add_get("/v2/healthz", healthz)
    app.router.add_get("/v2/openapi.json", openapi)
    app.router.add_post("/v2/attributor", create_attributor)
    app.router.add_get("/v2/attributor", list_attributors)
    app.router.add_get("/v2/attributor/{id}", get_attributor)
    app.router.add_delete("/v2/attributor/{id}", delete_attributor)
    app.router.add_post("/v2/attributor/{id}/observation", post_observation)
    app.router.add_get("/v2/attributor/{id}/attribution", get_attribution)
    app.router.add_get("/v2/attributor/{id}/recording", get_recording)
    return app
