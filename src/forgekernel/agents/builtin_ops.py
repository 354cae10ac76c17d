"""Which operator a task's reference computes, as far as the built-in templates know.

A task matches an operator when its family agrees, its name is one the operator answers
to, its inputs have the operator's shape pattern, and its reference source shows the
operator's markers. Constants (eps) are read from the reference source with :mod:`ast`.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from forgekernel import templates
from forgekernel.agents.base import AgentError
from forgekernel.records import TaskSpec

LLM_HINT = "use an LLM agent: --agent claude-code|anthropic|openai"

Shape = tuple[str | int, ...]


def _same_last(*idx: int) -> Callable[[list[Shape]], bool]:
    """Inputs at ``idx`` are 1-D and run along input 0's last axis."""
    def ok(shapes: list[Shape]) -> bool:
        return len(shapes[0]) >= 1 and all(len(shapes[i]) == 1 and shapes[i][0] == shapes[0][-1]
                                           for i in idx)
    return ok


def _all_same(shapes: list[Shape]) -> bool:
    return all(s == shapes[0] for s in shapes)


def _residual(shapes: list[Shape]) -> bool:
    return shapes[0] == shapes[1] and _same_last(2)(shapes)


def _matmul(shapes: list[Shape]) -> bool:
    return len(shapes[0]) == 2 and len(shapes[1]) == 2 and shapes[0][1] == shapes[1][0]


def _xent(shapes: list[Shape]) -> bool:
    return len(shapes[0]) == 2 and shapes[1] == shapes[0][:1]


def _rope(shapes: list[Shape]) -> bool:
    q, c, s = shapes
    return len(q) >= 3 and c == s == (q[-3], q[-1])


@dataclass(frozen=True)
class OpSpec:
    """An operator some template implements, and how to recognise a task computing it."""

    name: str
    family: str
    names: tuple[str, ...]
    arity: int
    shapes: Callable[[list[Shape]], bool]
    markers: tuple[str, ...] = ()
    """Each must appear in the reference source (any one of a '|'-separated group)."""
    constants: dict[str, float] = field(default_factory=dict)


OPS: tuple[OpSpec, ...] = (
    OpSpec("rmsnorm", "rownorm", ("rmsnorm", "rms_norm", "llama_rmsnorm"), 2, _same_last(1),
           ("rsqrt|sqrt", "mean|sum"), {"EPS": 1e-6}),
    OpSpec("fused_add_rmsnorm", "rownorm", ("fused_add_rmsnorm", "add_rmsnorm", "residual_rmsnorm"),
           3, _residual, ("rsqrt|sqrt", "+"), {"EPS": 1e-6}),
    OpSpec("layernorm", "rownorm", ("layernorm", "layer_norm"), 3, _same_last(1, 2),
           ("rsqrt|sqrt", "mean"), {"EPS": 1e-5}),
    OpSpec("softmax", "softmax", ("softmax", "row_softmax"), 1, lambda s: len(s[0]) >= 1,
           ("exp",)),
    OpSpec("log_softmax", "softmax", ("log_softmax", "logsoftmax"), 1, lambda s: len(s[0]) >= 1,
           ("exp", "log")),
    OpSpec("swiglu", "elementwise", ("swiglu", "silu_mul", "silu_and_mul"), 2, _all_same,
           ("silu|sigmoid",)),
    OpSpec("matmul", "matmul", ("matmul", "gemm", "mm"), 2, _matmul, ("matmul|mm|@",)),
    OpSpec("cross_entropy", "cross_entropy", ("cross_entropy", "xent", "ce_loss"), 2, _xent,
           ("mean",)),
    OpSpec("rope", "rope", ("rope", "rotary", "rotary_embedding"), 3, _rope,
           ("rotate_half|cat",)),
)


@dataclass(frozen=True)
class OpMatch:
    """A task resolved to an operator: the reference's parameter names and its constants."""

    op: str
    params: tuple[str, ...]
    constants: dict[str, Any]
    templates: tuple[templates.Template, ...]


def reference_params(source: str) -> tuple[str, ...] | None:
    """Positional parameter names of the reference's ``run`` (None without one)."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name == "run":
            if node.args.vararg or node.args.kwonlyargs:
                return None
            return tuple(a.arg for a in (*node.args.posonlyargs, *node.args.args))
    return None


def read_constants(source: str, defaults: dict[str, float]) -> dict[str, float]:
    """Module-level numeric constants of the reference (EPS = 1e-6), else the defaults."""
    found = dict(defaults)
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id.upper()
            if name in ("EPS", "EPSILON", "VARIANCE_EPSILON") and "EPS" in found:
                value = node.value
                if isinstance(value, ast.Constant) and isinstance(value.value, (int, float)):
                    found["EPS"] = float(value.value)
    return found


def _shape(spec) -> Shape:
    return tuple(spec.shape)


def _fits(op: OpSpec, task: TaskSpec, source: str, params: tuple[str, ...] | None) -> bool:
    name = task.name.lower().replace("-", "_")
    if not any(name == n or name.endswith("_" + n) for n in op.names):
        return False
    if params is None or len(params) != op.arity or len(task.inputs) != op.arity:
        return False
    if not op.shapes([_shape(s) for s in task.inputs.values()]):
        return False
    return all(any(m in source for m in group.split("|")) for group in op.markers)


def match(task: TaskSpec, source: str) -> OpMatch:
    """The operator ``task`` computes, or AgentError saying an LLM agent is needed."""
    if task.format != "forge" or task.language != "triton":
        raise AgentError(f"the built-in agent has no template for {task.format} {task.language} "
                         f"task '{task.name}'; {LLM_HINT}")
    family_ops = [op for op in OPS if op.family == task.family]
    if not family_ops:
        raise AgentError(f"the built-in agent has no template for family '{task.family}' "
                         f"(task '{task.name}'); {LLM_HINT}")
    try:
        params = reference_params(source)
    except SyntaxError:
        params = None
    for op in family_ops:
        if _fits(op, task, source, params):
            assert params is not None
            return OpMatch(op.name, params, read_constants(source, op.constants),
                           tuple(templates.for_op(op.name)))
    known = ", ".join(sorted({n for op in family_ops for n in op.names[:1]}))
    raise AgentError(f"the built-in agent has no template for {task.family}/{task.name} (its "
                     f"templates implement {known}); {LLM_HINT}")
