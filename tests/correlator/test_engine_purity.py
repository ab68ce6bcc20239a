"""The engine is pure: no file system, no environment, no clock of its own (docs/architecture.md).

Building the matcher and loading the rules are the adapters' steps: they read files, and the
matcher keeps its compiled database in a directory the adapter names. Everything after that,
normalize -> extract -> correlate -> decide, must work with every door to the outside locked;
the golden recordings prove it gives the same verdicts there as ``faultstream backtest``.
"""

from __future__ import annotations

import ast
import builtins
import datetime as dt
import io
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from correlator.engine import AttributionEngine
from correlator.settings import CorrelatorSettings
from streams.backtest import latest_revisions
from streams.normalize import normalize_record
from streams.recording import parse_recording_line
from streams.records import DeadLetter
from tests.conftest import REPO
from tests.golden.stories import RECORDINGS, SCHEDULER_HOSTS

EXPECTED = REPO / "tests" / "golden" / "expected"
#: A hardware fault among healthy peers, a user's OOM amid NCCL noise, two independent causes,
#: a Kubernetes job, an operator's cancel: each path through the decision once.
STORIES = (
    "xid79_one_of_sixteen",
    "cuda_oom_amid_nccl_noise",
    "hardware_and_user_independent",
    "k8s_jobset_oomkilled",
    "scancel_by_user",
)
#: Packages the engine's (and the normalizers') code lives in: their module-level aliases of
#: ``datetime`` / ``date`` are swapped for clock-less ones too.
ENGINE_PACKAGES = ("correlator", "extractors", "streams.normalize")


CLOCK_DATETIME, CLOCK_DATE = dt.datetime, dt.date


class OutsideTouched(AssertionError):
    """Raised by every locked door. Recorded as well, since a broad ``except`` (the normalizers
    turn any error into a dead letter) could otherwise swallow it."""


class _ClocklessDateTime(dt.datetime):
    @classmethod
    def now(cls, tz=None):  # type: ignore[override]
        raise _touched("datetime.now")

    @classmethod
    def utcnow(cls):  # type: ignore[override]
        raise _touched("datetime.utcnow")

    @classmethod
    def today(cls):  # type: ignore[override]
        raise _touched("datetime.today")


class _ClocklessDate(dt.date):
    @classmethod
    def today(cls):  # type: ignore[override]
        raise _touched("date.today")


class _LockedEnviron(dict):
    def __getitem__(self, key):
        raise _touched(f"os.environ[{key!r}]")

    def get(self, key, default=None):
        raise _touched(f"os.environ.get({key!r})")

    def __contains__(self, key):
        raise _touched(f"{key!r} in os.environ")

    def __iter__(self):
        raise _touched("iter(os.environ)")


TOUCHED: list[str] = []


def _touched(what: str) -> OutsideTouched:
    TOUCHED.append(what)
    return OutsideTouched(f"the engine reached outside: {what}")


def _door(name: str):
    def locked(*args, **kwargs):
        raise _touched(name)

    return locked


def _lock_the_doors(patch: pytest.MonkeyPatch) -> None:
    for owner, name in ((builtins, "open"), (io, "open")):
        patch.setattr(owner, name, _door(f"{owner.__name__}.{name}"))
    for name in ("time", "time_ns", "monotonic", "monotonic_ns"):
        patch.setattr(time, name, _door(f"time.{name}"))
    patch.setattr(os, "environ", _LockedEnviron())
    patch.setattr(dt, "datetime", _ClocklessDateTime)
    patch.setattr(dt, "date", _ClocklessDate)
    for module_name, module in list(sys.modules.items()):
        if module is None or not module_name.startswith(ENGINE_PACKAGES):
            continue
        for attribute, value in list(vars(module).items()):
            if value is CLOCK_DATETIME:  # from datetime import datetime
                patch.setattr(module, attribute, _ClocklessDateTime)
            elif value is CLOCK_DATE:
                patch.setattr(module, attribute, _ClocklessDate)


def _verdicts_of(recording: bytes, engine: AttributionEngine) -> list[dict]:
    """The backtest's engine path, minus its adapters: records -> normalize -> one batch into the
    engine -> flush; the recording is small enough to be one backtest batch."""
    lines, events = [], []
    for number, raw in enumerate(recording.split(b"\n"), start=1):
        record = parse_recording_line(raw, number) if raw.strip() else None
        if record is None or isinstance(record, DeadLetter):
            continue
        out = normalize_record(record.topic, record.value, record.key, record.timestamp_ms, record.origin)
        lines += out.lines
        events += out.events
    verdicts = engine.feed(lines, events) + engine.flush()
    return [_comparable(verdict) for verdict in latest_revisions(verdicts)]


def _comparable(verdict) -> dict:
    as_json = orjson.loads(orjson.dumps(verdict.model_dump(mode="json")))
    return {**as_json, "ruleset_version": "<ruleset>"}  # as the golden files store it


@pytest.fixture
def locked_engine(bundled_ruleset, bundled_matcher, monkeypatch) -> Iterator[dict[str, list[dict]]]:
    """Each story's verdicts, computed with the doors locked (rules and matcher built before)."""
    recordings = {name: (RECORDINGS / f"{name}.jsonl").read_bytes() for name in STORIES}
    settings = CorrelatorSettings(scheduler_hosts=SCHEDULER_HOSTS)
    TOUCHED.clear()
    with monkeypatch.context() as patch:
        _lock_the_doors(patch)
        verdicts = {
            name: _verdicts_of(recording, AttributionEngine(bundled_ruleset, settings, matcher=bundled_matcher))
            for name, recording in recordings.items()
        }
    yield verdicts


def test_the_engine_gives_the_golden_verdicts_with_no_file_environment_or_clock(locked_engine):
    assert TOUCHED == []
    for name, verdicts in locked_engine.items():
        golden = orjson.loads((EXPECTED / f"{name}.json").read_bytes())
        assert verdicts == [golden], name


def test_the_locked_doors_do_lock(monkeypatch):
    """Without this, a patch that silently failed to apply would make the test above vacuous."""
    TOUCHED.clear()
    with monkeypatch.context() as patch:
        _lock_the_doors(patch)
        for door in (
            lambda: open(__file__),  # noqa: SIM115
            lambda: Path(__file__).read_bytes(),
            lambda: time.time(),
            lambda: os.environ.get("HOME"),
            lambda: dt.datetime.now(dt.UTC),
            lambda: dt.date.today(),  # noqa: DTZ011
            lambda: sys.modules["correlator.timefmt"].datetime.now(dt.UTC),
        ):
            with pytest.raises(OutsideTouched):
                door()
    assert len(TOUCHED) == 7


# The static half: no module of the engine (nor a normalizer) even names a way out, so a path the goldens do not
# take cannot reach outside either.

ENGINE_DIRS = ("correlator", "extractors", "streams/normalize")
#: Calls that read or write files, the environment or the clock.
FILE_METHODS = frozenset({"open", "read_text", "read_bytes", "write_text", "write_bytes"})
CLOCK_CALLS = frozenset({
    ("time", "time"), ("time", "time_ns"), ("time", "monotonic"), ("time", "monotonic_ns"),
    ("datetime", "now"), ("datetime", "utcnow"), ("datetime", "today"), ("date", "today"),
    ("os", "getenv"), ("Path", "home"), ("Path", "cwd"),
})  # fmt: skip
#: The adapters' steps that live in extractors/, each reaching only where its caller points it.
ALLOWED = {
    # the rule loader: reads the rule files of the directory it is given (load_ruleset(path))
    ("extractors/loader.py", "_load_meta"): "reads ruleset.yaml",
    ("extractors/loader.py", "_load_one"): "reads one rule file",
    ("extractors/loader.py", "_declares"): "re-reads a rule file to name a duplicate id",
    ("extractors/loader.py", "_digest"): "hashes the rule files into the ruleset version",
    # the matcher's cache: reads and writes the compiled database in the directory it is given
    ("extractors/hyperscan_db.py", "_read_cache"): "loads a cached database",
    ("extractors/hyperscan_db.py", "_write_cache"): "stores a compiled database",
    # the clock for `faultstream replay --since 7d`, called by that command only, never by a normalizer
    ("streams/normalize/times.py", "now_ms"): "the replay command's 'now'",
}


def _reaches_outside(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name) and func.id == "open":
        return "open()"
    if not isinstance(func, ast.Attribute):
        return None
    owner = func.value.id if isinstance(func.value, ast.Name) else None
    if (owner, func.attr) in CLOCK_CALLS:
        return f"{owner}.{func.attr}()"
    if func.attr in FILE_METHODS:
        return f".{func.attr}()"
    return None


def _way_out(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        return _reaches_outside(node)
    if isinstance(node, ast.Attribute) and node.attr in ("environ", "environb"):
        return f"os.{node.attr}"
    if isinstance(node, ast.ImportFrom) and node.module in ("os", "time"):
        names = {alias.name for alias in node.names} & {"environ", "getenv", *(n for _, n in CLOCK_CALLS)}
        return f"from {node.module} import {', '.join(sorted(names))}" if names else None
    return None


def _outside_uses(node: ast.AST, function: str = "<module>") -> Iterator[tuple[str, str]]:
    """(innermost enclosing function, what) for every way out the module names."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        function = node.name
    what = _way_out(node)
    if what:
        yield function, what
    for child in ast.iter_child_nodes(node):
        yield from _outside_uses(child, function)


def test_no_engine_module_reaches_for_files_environment_or_clock_outside_the_allowed_steps():
    found = set()
    for package in ENGINE_DIRS:
        for path in sorted((REPO / package).rglob("*.py")):
            relative = path.relative_to(REPO).as_posix()
            tree = ast.parse(path.read_text(encoding="utf-8"))
            found |= {(relative, function, what) for function, what in _outside_uses(tree)}
    unexpected = sorted(use for use in found if (use[0], use[1]) not in ALLOWED)
    assert unexpected == []
    # and the allow-list holds no stale entry: each allowed step still does what it is allowed for
    assert {(use[0], use[1]) for use in found} == set(ALLOWED)
