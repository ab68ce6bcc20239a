"""Shared fixtures. Every test is checked for leaked (non-daemon) threads and environment variables."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _no_leaks():
    env_before = dict(os.environ)
    threads_before = set(threading.enumerate())
    yield
    leaked_env = {k for k in set(os.environ) ^ set(env_before)}
    assert not leaked_env, f"test leaked environment variables: {sorted(leaked_env)}"
    leaked = [t for t in set(threading.enumerate()) - threads_before if t.is_alive() and not t.daemon]
    assert not leaked, f"test leaked threads: {leaked}"


@pytest.fixture(scope="session")
def bundled_ruleset():
    from extractors.loader import load_ruleset

    return load_ruleset(REPO / "rules")


@pytest.fixture(scope="session")
def bundled_matcher(bundled_ruleset):
    """The Hyperscan matcher of the bundled rules, from the default cache (compiling takes seconds)."""
    from extractors.matchers import HyperscanMatcher
    from streams.settings import DEFAULT_MATCHER_CACHE_DIR

    return HyperscanMatcher(bundled_ruleset, DEFAULT_MATCHER_CACHE_DIR)


def write_ruleset(root: Path, files: dict[str, str]) -> Path:
    """Lay out an inline ruleset (``relative path -> YAML``) under ``root``."""
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root
