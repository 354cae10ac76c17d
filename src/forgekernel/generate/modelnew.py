"""The text a generated KernelBench candidate builds ``ModelNew`` from: ``Model.__init__``, the
file's imports, the classes and functions it defines besides ``Model``, and the module-level
names those read (a lookup table), never a workload's constants (the judge lends those)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from forgekernel.task import TaskSpec


def model_source(task: TaskSpec) -> tuple[str, tuple[str, ...]]:
    """KernelBench: the text of ``Model.__init__`` (with the file's other classes and
    functions it may use) and the file's import lines."""
    text = (Path(task.root) / "reference.py").read_text()
    tree = ast.parse(text)
    imports = tuple(ast.get_source_segment(text, n) or "" for n in tree.body
                    if isinstance(n, (ast.Import, ast.ImportFrom)))
    helper_nodes = [n for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))
                    and n.name not in ("Model", "get_inputs", "get_init_inputs")]
    model = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
    init = next((n for n in (model.body if model else []) if isinstance(n, ast.FunctionDef)
                 and n.name == "__init__"), None)
    source = ast.get_source_segment(text, init) if init is not None else (
        "def __init__(self, *args):\n    super().__init__()")
    used = set().union(*(_free(node) for node in [init, *helper_nodes] if node is not None))
    used -= set(task.axes)  # a workload's constants: the judge lends them to the candidate
    kept = [ast.get_source_segment(text, n) or "" for n in tree.body  # in the file's order
            if n in helper_nodes or _assigns(n) & used]
    return source or "", (*imports, *kept)


def _free(node: Any) -> set[str]:
    """Names ``node`` reads but neither takes as an argument nor assigns itself."""
    names = list(ast.walk(node))
    bound = {a.arg for n in names if isinstance(n, ast.arguments)
             for a in (*n.posonlyargs, *n.args, *n.kwonlyargs, n.vararg, n.kwarg) if a is not None}
    bound |= {n.id for n in names if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    return {n.id for n in names if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - bound


def _assigns(node: Any) -> set[str]:
    """The names a module-level assignment binds (a table ``NF4 = [...]`` __init__ reads)."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
        if isinstance(node, ast.AnnAssign) and node.value is not None else []
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
