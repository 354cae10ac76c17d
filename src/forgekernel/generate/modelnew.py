"""The text a generated KernelBench candidate builds ``ModelNew`` from: ``Model``'s members but
``forward`` (``__init__`` and the helpers it calls), the file's imports, the classes and
functions it defines besides ``Model``, and the module-level names those read (a lookup
table), never a workload's constants (the judge lends those)."""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path
from typing import Any

from forgekernel.task import TaskSpec


def model_source(task: TaskSpec) -> tuple[str, tuple[str, ...]]:
    """KernelBench: the text of ``Model``'s members but ``forward`` (``__init__`` and the
    methods and class attributes it may use, decorators kept, dedented to the class body's
    level), with the file's other classes and functions it may use, and the import lines."""
    text = (Path(task.root) / "reference.py").read_text()
    tree = ast.parse(text)
    imports = tuple(ast.get_source_segment(text, n) or "" for n in tree.body
                    if isinstance(n, (ast.Import, ast.ImportFrom)))
    helper_nodes = [n for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))
                    and n.name not in ("Model", "get_inputs", "get_init_inputs")]
    model = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
    members = [n for n in (model.body if model else []) if _member(n)]
    lines = text.splitlines()
    source = "\n\n".join(textwrap.dedent("\n".join(lines[_first_line(n) - 1:n.end_lineno])) for n in members)
    if not any(isinstance(n, ast.FunctionDef) and n.name == "__init__" for n in members):
        source = "def __init__(self, *args):\n    super().__init__()\n\n" + source
    source = re.sub(r"\bModel\s*\.", "ModelNew.", source)  # Model._helper(...) inside its own methods
    used = set().union(*(_free(node) for node in [*members, *helper_nodes]))
    used -= set(task.axes)  # a workload's constants: the judge lends them to the candidate
    kept = [ast.get_source_segment(text, n) or "" for n in tree.body  # in the file's order
            if n in helper_nodes or _assigns(n) & used]
    return source.strip("\n"), (*imports, *kept)


def _member(node: Any) -> bool:
    """A member of Model that ModelNew keeps: methods but ``forward`` (generated), class attributes."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return node.name != "forward"
    return isinstance(node, (ast.Assign, ast.AnnAssign))


def _first_line(node: Any) -> int:
    return min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])


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
