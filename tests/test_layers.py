"""The layering rules of docs/architecture.md, read from the source (every import, the lazy
ones inside functions included; imports under ``if TYPE_CHECKING:`` never run and are left
out) so that they cannot drift from the code."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "forgekernel"
LIBRARIES = {"judge", "agents", "delivery", "sandbox", "kb", "generate", "profile", "native", "cli"}
ABOVE_LIBRARIES = {"run", "evolve", "report", "cli", "bench", "bench_summary"}
JUDGE_PUBLIC = {"judge", "judge.api", "judge.batch"}
"""What of the judge the run may import: ``judge()`` and the batch judging of candidates."""
KNOWN_CYCLES: list[list[str]] = []  # none left: a new cycle fails the test


def _type_checking_only(tree: ast.Module) -> set[int]:
    return {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
            and getattr(node.test, "id", "") == "TYPE_CHECKING" for n in ast.walk(node)}


def _dotted(name: str) -> str:
    """``forgekernel.run.engine`` or ``run/engine.py`` -> ``run.engine`` (a package: its name)."""
    parts = name.replace("/", ".").removesuffix(".py").split(".")
    parts = parts[1:] if parts[0] == "forgekernel" else parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layer(name: str) -> str:
    """``forgekernel.judge.api`` -> ``judge``; ``run/engine.py`` -> ``run``."""
    return _dotted(name).split(".")[0]


EXISTING = {_dotted(str(p.relative_to(SRC))) for p in SRC.rglob("*.py")}


def _modules() -> dict[str, tuple[str, ...]]:
    """Each module (path under forgekernel/) -> the forgekernel modules it imports at run time
    (``from a import b``: ``a.b`` when that is a module, else ``a``)."""
    out = {}
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text())
        guarded, names = _type_checking_only(tree), []
        for node in ast.walk(tree):
            if id(node) in guarded:
                continue
            if isinstance(node, ast.Import):
                names += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names += [f"{node.module}.{a.name}" if _dotted(f"{node.module}.{a.name}") in EXISTING
                          else node.module for a in node.names]
        out[str(path.relative_to(SRC))] = tuple(n for n in names if n.startswith("forgekernel."))
    return out


MODULES = _modules()


def _graph() -> dict[str, set[str]]:
    """Module -> the modules it imports (``from a import b``: ``a.b`` when that is a module)."""
    return {_dotted(m): {_dotted(n) for n in names if _dotted(n) in EXISTING} - {_dotted(m)}
            for m, names in MODULES.items()}


def _crossings(src: str, dst: set[str]) -> list[str]:
    return sorted(f"{m} imports {n}" for m, names in MODULES.items() if _layer(m) == src
                  for n in names if _layer(n) in dst)


@pytest.mark.parametrize("src,dst", [
    ("judge", {"agents"} | ABOVE_LIBRARIES),       # the judge never sees the run's records or agents
    ("agents", {"judge", "cli", "evolve", "report"}),  # an agent reaches the judge only through forge check
    ("sandbox", {"judge", "agents", "delivery", "config"} | ABOVE_LIBRARIES),  # a leaf library
    ("delivery", {"judge", "agents"} | ABOVE_LIBRARIES),
    ("kb", {"judge", "agents"} | ABOVE_LIBRARIES),
    ("generate", {"judge", "agents"} | ABOVE_LIBRARIES),
    ("profile", {"judge", "agents"} | ABOVE_LIBRARIES),
    ("native", {"judge", "agents", "profile"} | ABOVE_LIBRARIES),  # compiles; judges nothing
    ("protocols", LIBRARIES | ABOVE_LIBRARIES),    # shapes, not parts
    ("run", {"evolve", "cli", "bench", "bench_summary", "delivery", "kb", "generate", "sandbox"}),
    ("report", {"evolve", "cli", "judge", "agents", "delivery", "kb", "generate", "sandbox"}),
    ("evolve", {"cli", "bench", "bench_summary"}),
])
def test_layers_import_only_what_they_may(src, dst):
    assert _crossings(src, dst) == []


def test_the_run_imports_only_the_judges_public_api():
    assert sorted(f"{m} imports {n}" for m, names in MODULES.items() if _layer(m) == "run"
                  for n in names if _layer(n) == "judge" and _dotted(n) not in JUDGE_PUBLIC) == []


def test_the_run_reaches_the_report_only_to_write_it_at_the_end():
    """run/session.py writes report.md when a run ends (lazily, in finish); nothing else of
    the run imports report/, which reads the run's records."""
    assert sorted(m for m, names in MODULES.items() if _layer(m) == "run"
                  and any(_layer(n) == "report" for n in names)) == ["run/session.py"]


def test_the_run_package_keeps_the_records_below_the_drivers():
    """decisions: the state and the curriculum only; the records (ledger, state, run dir,
    seal, workspace, config, lock) never import the drivers (engine, session, record)."""
    graph = _graph()
    assert {n for n in graph["run.decisions"] if _layer(n) == "run"} <= {"run.state"}
    assert not {n for n in graph["run.decisions"] if _layer(n) in LIBRARIES}
    drivers = {"run.engine", "run.session", "run.record", "run.agent_views", "run.analysis"}
    below = {"run.ledger", "run.state", "run.rundir", "run.seal", "run.workspace", "run.runconfig",
             "run.lockfile", "run.parts", "run.explain"}
    assert sorted(f"{m} imports {n}" for m in below for n in graph[m] if n in drivers) == []


def test_nothing_imports_the_cli():
    assert sorted(m for m, names in MODULES.items() if _layer(m) != "cli"
                  and any(_layer(n) == "cli" for n in names)) == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return sorted(found)


def test_no_import_cycle_eager_or_lazy():
    """Every import counts, the ones inside functions too; the few cycles listed in
    KNOWN_CYCLES are in packages this map does not own, and the list only shrinks."""
    assert _cycles(_graph()) == KNOWN_CYCLES


def test_the_cycle_check_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


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
    guarded = _type_checking_only(tree)
    at_run_time = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                   and (n.module or "").startswith("forgekernel") and id(n) not in guarded]
    assert at_run_time == []
