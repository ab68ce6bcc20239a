"""docs/api.md carries the OpenAPI document the API serves, and a curl example per endpoint."""

from __future__ import annotations

import json
import re

from streams.api.app import api_app
from streams.api.openapi import OPENAPI
from tests.conftest import REPO

DOC = (REPO / "docs" / "api.md").read_text()


def _documented_schema() -> dict:
    block = DOC.split("<!-- openapi:begin -->", 1)[1].split("<!-- openapi:end -->", 1)[0]
    return json.loads(block.strip().removeprefix("```json").removesuffix("```"))


def test_the_openapi_document_in_the_docs_is_the_one_the_code_serves():
    assert _documented_schema() == OPENAPI, (
        "regenerate the block at the end of docs/api.md from streams/api/openapi.py"
    )


def test_every_route_is_in_the_openapi_document_and_every_operation_has_a_heading_and_a_curl_example():
    app = api_app(store=None, ruleset=None, prefix="x:")  # type: ignore[arg-type]  # routes only
    routes = {(r.method.lower(), r.resource.canonical) for r in app.router.routes() if r.method != "HEAD"}
    documented = {(method, path) for path, item in OPENAPI["paths"].items() for method in item}
    assert routes == documented

    sections = re.split(r"\n### ", DOC.split("## OpenAPI document", 1)[0])
    for method, path in documented:
        [section] = [s for s in sections if s.startswith(f"`{method.upper()} {path}`")]
        assert "curl -s" in section, f"{method.upper()} {path} has no curl example"
