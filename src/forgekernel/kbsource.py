"""A KernelBench reference's module-level size constants, and the module at other values.

A KernelBench problem fixes its sizes in module-level constants (``batch_size = 16``,
``input_shape = (4096,)``) that ``get_inputs()`` and ``get_init_inputs()`` read when they
are called. :func:`constants` finds the integer constants that depend on no other name
(the roots; a constant computed from others, ``bias_shape = (out_channels, 1, 1)``,
follows them). :func:`variant` re-executes the file's source with some of them replaced,
so everything computed from them at import time follows too; the module object the task
loaded is never changed.
"""

from __future__ import annotations

import ast
import functools
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

_RESERVED = {"min", "max", "abs", "log2", "ceil", "floor", "and", "or", "not"}
_CACHE: dict[tuple[str, tuple], ModuleType] = {}
_CACHE_MAX = 64
"""Variant modules kept (each is a few classes and functions)."""


@dataclass(frozen=True)
class Constant:
    """One module-level integer: a plain ``name = 16`` or element ``index`` of a tuple."""

    axis: str
    """The axis name it would get: ``name``, or ``name_<index>`` for a tuple element."""
    name: str
    index: int | None
    value: int

    @property
    def ref(self) -> str:
        """How task.toml names it: ``name`` or ``name[index]``."""
        return self.name if self.index is None else f"{self.name}[{self.index}]"


_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
        ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
        ast.Pow: lambda a, b: a ** b if 0 <= b <= 64 else None,
        ast.LShift: lambda a, b: a << b if 0 <= b <= 64 else None,
        ast.RShift: lambda a, b: a >> b if b >= 0 else None}


def _int_value(node: ast.AST) -> int | None:
    """The value of an integer expression made of literals only (``16384 * 2``, ``1 << 24``)."""
    if isinstance(node, ast.Constant):
        return node.value if type(node.value) is int else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _int_value(node.operand)
        return None if v is None else -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        a, b = _int_value(node.left), _int_value(node.right)
        if a is None or b is None:
            return None
        try:
            return _OPS[type(node.op)](a, b)
        except ZeroDivisionError:
            return None
    return None


def _assigned(tree: ast.Module) -> dict[str, int]:
    """How often each module-level name is assigned (a name bound twice is left alone)."""
    counts: dict[str, int] = {}
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name):
                    counts[n.id] = counts.get(n.id, 0) + 1
    return counts


def _pairs(node: ast.stmt) -> list[tuple[str, ast.expr]]:
    """(name, value) of a plain, chained (``a = b = 8``) or unpacking (``D, H = 8, 16``)
    module-level assignment; [] for anything else."""
    if not isinstance(node, ast.Assign):
        return []
    if all(isinstance(t, ast.Name) for t in node.targets):
        return [(t.id, node.value) for t in node.targets]
    if (len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple)
            and isinstance(node.value, ast.Tuple) and len(node.value.elts) == len(node.targets[0].elts)
            and all(isinstance(t, ast.Name) for t in node.targets[0].elts)):
        return [(t.id, v) for t, v in zip(node.targets[0].elts, node.value.elts, strict=True)]
    return []


def constants(source: str) -> list[Constant]:
    """The root integer constants of a module's source, in file order."""
    tree = ast.parse(source)
    counts = _assigned(tree)
    taken = set(counts)
    found: list[Constant] = []
    for node in tree.body:
        for name, value in _pairs(node):
            if counts.get(name) != 1 or name.startswith("_") or name in _RESERVED or not name.isascii():
                continue
            found.extend(_of(name, value, taken))
    return found


def _of(name: str, value: ast.AST, taken: set[str]) -> list[Constant]:
    single = _int_value(value)
    if single is not None:
        return [Constant(axis=name, name=name, index=None, value=single)]
    if not isinstance(value, ast.Tuple):
        return []
    out = []
    for i, elt in enumerate(value.elts):
        v = _int_value(elt)
        if v is None:
            continue
        axis = f"{name}_{i}"
        while axis in taken:
            axis += "_"
        taken.add(axis)
        out.append(Constant(axis=axis, name=name, index=i, value=v))
    return out


def parse_ref(ref: str) -> tuple[str, int | None]:
    """``"name"`` -> (name, None); ``"name[2]"`` -> (name, 2)."""
    if ref.endswith("]") and "[" in ref:
        name, index = ref[:-1].split("[", 1)
        return name, int(index)
    return ref, None


def _rewrite(tree: ast.Module, overrides: Mapping[tuple[str, int | None], int]) -> ast.Module:
    names = {name for name, _ in overrides}
    body: list[ast.stmt] = []
    for node in tree.body:
        pairs = _pairs(node)
        if not any(name in names for name, _ in pairs):
            body.append(node)
            continue
        for name, value in pairs:  # a = b = 8 (or a, b = 8, 8) becomes a = 8; b = 8
            body.append(ast.copy_location(ast.Assign(targets=[ast.Name(name, ast.Store())],
                                                     value=_replaced(name, value, overrides)), node))
    return ast.fix_missing_locations(ast.Module(body=body, type_ignores=[]))


def _replaced(name: str, value: ast.expr, overrides: Mapping[tuple[str, int | None], int]) -> ast.expr:
    if (name, None) in overrides:
        return ast.Constant(overrides[(name, None)])
    if isinstance(value, ast.Tuple):
        elts = [ast.Constant(overrides[(name, i)]) if (name, i) in overrides else e
                for i, e in enumerate(value.elts)]
        return ast.Tuple(elts=elts, ctx=ast.Load())
    return value


LITERAL = "get_inputs:"
"""Ref prefix of an integer literal written in get_inputs() (``get_inputs:2``: the third)."""


def _literal_nodes(tree: ast.Module) -> list[ast.Constant]:
    """Integer literals >= 2 passed positionally (or in a shape tuple) to calls in get_inputs()."""
    found: list[ast.Constant] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "get_inputs":
            for call in ast.walk(node):
                if not isinstance(call, ast.Call):
                    continue
                for arg in call.args:
                    items = arg.elts if isinstance(arg, (ast.Tuple, ast.List)) else [arg]
                    found += [a for a in items if isinstance(a, ast.Constant) and type(a.value) is int
                              and a.value >= 2]
    return found


def literals(source: str) -> list[Constant]:
    """The sizes get_inputs() writes as literals (``torch.rand(n, 3, 224, 224)``), as constants
    that :func:`variant` can set: a last resort when the module constants cannot make a
    problem small."""
    nodes = _literal_nodes(ast.parse(source))
    return [Constant(axis=f"get_inputs_{k}", name=f"{LITERAL}{k}", index=None, value=n.value)
            for k, n in enumerate(nodes)]


def _lift(tree: ast.Module) -> ast.Module:
    """get_inputs()'s literals replaced by module constants ``_fk_literal_<k>``."""
    nodes = _literal_nodes(tree)
    names = {id(n): f"_fk_literal_{k}" for k, n in enumerate(nodes)}

    class Lift(ast.NodeTransformer):
        def visit_Constant(self, node: ast.Constant) -> ast.AST:
            return ast.Name(names[id(node)], ast.Load()) if id(node) in names else node

    assigns = [ast.Assign(targets=[ast.Name(f"_fk_literal_{k}", ast.Store())], value=ast.Constant(n.value))
               for k, n in enumerate(nodes)]
    body = [Lift().visit(node) if isinstance(node, ast.FunctionDef) and node.name == "get_inputs"
            else node for node in tree.body]
    return ast.fix_missing_locations(ast.Module(body=assigns + body, type_ignores=[]))


@functools.lru_cache(maxsize=32)
def _literal_values(path: str) -> tuple[int, ...]:
    return tuple(n.value for n in _literal_nodes(ast.parse(Path(path).read_text())))


def _literal_value(module: ModuleType, name: str) -> int | None:
    values = _literal_values(module.__file__ or "")
    k = int(name[len(LITERAL):])
    return values[k] if k < len(values) else None


def current(module: ModuleType, name: str, index: int | None) -> Any:
    if name.startswith(LITERAL):
        return _literal_value(module, name)
    value = getattr(module, name, None)
    if index is None:
        return value
    return value[index] if isinstance(value, tuple) and index < len(value) else None


def variant(module: ModuleType, overrides: Mapping[tuple[str, int | None], int]) -> ModuleType:
    """``module`` with the given constants replaced (itself when they already have those values).

    ``overrides`` maps (name, tuple index or None) to a value. The source is executed again
    under a fresh module name; results are cached per module and values.
    """
    changed = {k: v for k, v in overrides.items() if current(module, *k) != v}
    if not changed:
        return module
    key = (module.__name__, tuple(sorted(changed.items(), key=lambda kv: (kv[0][0], kv[0][1] or -1))))
    if key in _CACHE:
        return _CACHE[key]
    path = Path(module.__file__ or "")
    tree = ast.parse(path.read_text(), filename=str(path))
    if any(n.startswith(LITERAL) for n, _ in changed):
        tree = _lift(tree)
        changed = {((f"_fk_literal_{n[len(LITERAL):]}", i) if n.startswith(LITERAL) else (n, i)): v
                   for (n, i), v in changed.items()}
    tree = _rewrite(tree, changed)
    name = f"{module.__name__}__at{len(_CACHE)}_{abs(hash(key)):x}"
    fresh = ModuleType(name)
    fresh.__file__ = str(path)
    sys.modules[name] = fresh
    try:
        exec(compile(tree, str(path), "exec"), fresh.__dict__)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    if len(_CACHE) >= _CACHE_MAX:
        old = next(iter(_CACHE))
        sys.modules.pop(_CACHE.pop(old).__name__, None)
    _CACHE[key] = fresh
    return fresh
