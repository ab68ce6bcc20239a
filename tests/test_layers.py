"""The layers run one way: extractors <- correlator <- streams, sinks (the engine never imports
its adapters), and no two modules import each other, not even inside a function."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ENGINE = ("extractors", "correlator")
ADAPTERS = ("streams", "sinks")


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def modules() -> dict[str, Path]:
    out = {}
    for package in (*ENGINE, *ADAPTERS):
        for path in (REPO / package).rglob("*.py"):
            name = ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
            out[name] = path
    return out


def test_the_engine_never_imports_its_adapters():
    wrong = [
        f"{name} imports {target}"
        for name, path in modules().items()
        if name.startswith(ENGINE)
        for target in imports_of(path)
        if target.split(".")[0] in ADAPTERS
    ]
    assert not wrong, "\n".join(wrong)


def test_the_extractors_never_import_the_correlator():
    wrong = [f"{n} imports {t}" for n, p in modules().items() if n.startswith("extractors")
             for t in imports_of(p) if t.startswith("correlator")]  # fmt: skip
    assert not wrong, "\n".join(wrong)


def test_no_two_engine_modules_import_each_other():
    graph = {name: {t for t in imports_of(path) if t in modules()} for name, path in modules().items()}
    cycles = sorted(
        {tuple(sorted((a, b))) for a, targets in graph.items() for b in targets if a in graph.get(b, ())}
    )
    assert not [c for c in cycles if c[0].startswith(ENGINE)], cycles
