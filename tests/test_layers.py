"""The layering rules of docs/architecture.md, read from the source (every import, the lazy
ones inside functions included) so that they cannot drift from the code."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "forgekernel"
RUN_RECORDS = {"ledger", "rundir", "runstate", "seal", "workspace", "steps", "engine", "report", "status",
               "decisions"}
LIBRARIES = {"judge", "agents", "delivery", "sandbox", "kb", "generate", "profile", "cli"}


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
    ("protocols", LIBRARIES - {"agents", "delivery"} | RUN_RECORDS),  # shapes, not parts
    ("decisions", LIBRARIES | RUN_RECORDS - {"runstate"}),  # pure: the state, never the run dir
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


def test_protocols_import_forgekernel_only_for_type_checking():
    """Every layer may import forgekernel.protocols, so it imports no part of forgekernel
    at run time (no cycle can start there)."""
    tree = ast.parse((SRC / "protocols.py").read_text())
    guarded = {id(n) for node in tree.body if isinstance(node, ast.If)
               and getattr(node.test, "id", "") == "TYPE_CHECKING" for n in ast.walk(node)}
    at_run_time = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                   and (n.module or "").startswith("forgekernel") and id(n) not in guarded]
    assert at_run_time == []
