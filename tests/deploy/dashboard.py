"""Load deploy/grafana/dashboard.py (a script, not a package) for the tests."""

from __future__ import annotations

import importlib.util
from types import ModuleType

from tests.conftest import REPO


def dashboard_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("faultstream_dashboard", REPO / "deploy/grafana/dashboard.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
