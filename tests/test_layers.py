"""The layering rules of docs/architecture.md, read from the source (every import, the lazy
ones inside functions included) so that they cannot drift from the code."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "forgekernel"
RUN_RECORDS = {"ledger", "rundir", "runstate", "seal", "workspace", "steps", "engine", "report", "status"}


def _modules() -> dict[str, tuple[str, ...]]:
    """Each module (path under forgekernel/) -> the forgekernel modules it imports."""
    out = {}
    for path in SRC.rglob("*.py"):
        names = []
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        out[str(path.relative_to(SRC))] = tuple(n for n in names if n.startswith("forgekernel."))
    return out


MODULES = _modules()


def _layer(name: str) -> str:
    """``forgekernel.judge.api`` -> ``judge``; ``judge/api.py`` -> ``judge``."""
    parts = name.replace("/", ".").removesuffix(".py").split(".")
    parts = parts[1:] if parts[0] == "forgekernel" else parts
    return parts[0] if parts else ""


def _crossings(src: str, dst: set[str]) -> list[str]:
    return sorted(f"{m} imports {n}" for m, names in MODULES.items() if _layer(m) == src
                  for n in names if _layer(n) in dst)


@pytest.mark.parametrize("src,dst", [
    ("judge", {"agents", "cli"} | RUN_RECORDS),  # the judge never sees the run's records or agents
    ("agents", {"judge", "cli"}),                # an agent reaches the judge only through forge check
    ("sandbox", {"judge", "agents", "delivery", "cli", "config"} | RUN_RECORDS),  # a leaf library
    ("delivery", {"judge", "agents", "cli"} | RUN_RECORDS),
    ("kb", {"judge", "agents", "cli"} | RUN_RECORDS),
    ("generate", {"judge", "agents", "cli"} | RUN_RECORDS),
])
def test_layers_import_only_what_they_may(src, dst):
    assert _crossings(src, dst) == []


def test_nothing_imports_the_cli():
    assert sorted(m for m, names in MODULES.items() if _layer(m) != "cli"
                  and any(_layer(n) == "cli" for n in names)) == []


def test_nothing_outside_the_cli_prints():
    found = []
    for rel in MODULES:
        if _layer(rel) == "cli":
            continue
        for node in ast.walk(ast.parse((SRC / rel).read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "print":
                found.append(f"{rel}:{node.lineno}")
    assert found == []
