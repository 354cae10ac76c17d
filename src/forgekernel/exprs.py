"""A small safe expression evaluator for cost formulas and gate lines.

Supports numbers, names, + - * / // % **, unary -, comparisons (== != < <= > >=, chained),
``and``/``or``/``not``, parentheses and the functions min, max, abs, log2, ceil, floor.
Anything else (attributes, subscripts, calls to other names, lambdas) is refused.
Parsing uses :mod:`ast`; nothing is ever passed to ``eval``.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Mapping

_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
        ast.Pow: operator.pow}
_CMP = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
        ast.Gt: operator.gt, ast.GtE: operator.ge}
_FUNCS = {"min": min, "max": max, "abs": abs, "log2": math.log2, "ceil": math.ceil,
          "floor": math.floor}


class ExprError(ValueError):
    """The expression is malformed, refers to an unknown name, or uses a refused construct."""


class MissingName(ExprError):
    """A name in the expression has no value (for gates: the metric is unavailable)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"'{name}' is not available")
        self.name = name


def parse(text: str) -> ast.Expression:
    """Parse and check an expression; raise ExprError naming what is not allowed."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExprError(f"cannot parse '{text}': {exc.msg}") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCS or node.keywords:
                raise ExprError(f"'{text}': only calls to {', '.join(_FUNCS)} are allowed")
        elif not isinstance(node, (ast.Expression, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare,
                                   ast.Name, ast.Constant, ast.Load, ast.USub, ast.UAdd, ast.Not,
                                   ast.And, ast.Or, *_BIN, *_CMP)):
            raise ExprError(f"'{text}': {type(node).__name__} is not allowed")
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float, bool)):
            raise ExprError(f"'{text}': only numeric constants are allowed")
    return tree


def names(text: str) -> set[str]:
    """The variable names an expression refers to."""
    return {n.id for n in ast.walk(parse(text)) if isinstance(n, ast.Name) and n.id not in _FUNCS}


def evaluate(text: str, env: Mapping[str, float | int | bool]):
    """Evaluate ``text`` with variables from ``env``."""
    return _eval(parse(text).body, env)


def _eval(node: ast.AST, env: Mapping):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise MissingName(node.id)
        return env[node.id]
    if isinstance(node, ast.UnaryOp):
        val = _eval(node.operand, env)
        return -val if isinstance(node.op, ast.USub) else (+val if isinstance(node.op, ast.UAdd) else not val)
    if isinstance(node, ast.BinOp):
        try:
            return _BIN[type(node.op)](_eval(node.left, env), _eval(node.right, env))
        except ZeroDivisionError:
            raise ExprError("division by zero") from None
    if isinstance(node, ast.BoolOp):
        vals = (_eval(v, env) for v in node.values)
        return all(vals) if isinstance(node.op, ast.And) else any(vals)
    if isinstance(node, ast.Compare):
        left = _eval(node.left, env)
        for op, comp in zip(node.ops, node.comparators, strict=True):
            right = _eval(comp, env)
            if not _CMP[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.Call):
        return _FUNCS[node.func.id](*(_eval(a, env) for a in node.args))
    raise ExprError(f"{type(node).__name__} is not allowed")
