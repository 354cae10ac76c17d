"""Which structure the built-in agent uses for a task, decided by what the reference computes.

A hand-written template (a stronger structure for its family) applies when the reference
computes the same function as the template's operator: same number and shapes of inputs,
and the same outputs on random inputs at a small workload (checked here in plain PyTorch,
for every order of the inputs the operator's shape pattern allows and every epsilon found
in the traced graph). Anything else the built-in agent can trace gets a candidate
generated from the reference itself (:mod:`builtin_generated`). Names play no part.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from forgekernel import templates
from forgekernel.agents.base import AgentError
from forgekernel.records import TaskSpec

LLM_HINT = "use an LLM agent: --agent claude-code|anthropic|openai"

Shape = tuple[int, ...]


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
    return len(q) >= 3 and c == s == (q[-3], q[-1]) and q[-1] % 2 == 0


# ------------------------------------------------------------------ what each operator computes


def _rmsnorm(x: Any, w: Any, eps: float) -> Any:
    import torch

    h = x.to(torch.float32)
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return w * h.to(x.dtype)


def _fused_add_rmsnorm(x: Any, r: Any, w: Any, eps: float) -> Any:
    h = x + r
    return _rmsnorm(h, w, eps), h


def _layernorm(x: Any, w: Any, b: Any, eps: float) -> Any:
    import torch

    h = x.to(torch.float32)
    c = h - h.mean(-1, keepdim=True)
    y = c * torch.rsqrt(c.pow(2).mean(-1, keepdim=True) + eps)
    return (y * w.to(torch.float32) + b.to(torch.float32)).to(x.dtype)


def _softmax(x: Any) -> Any:
    import torch

    return torch.softmax(x.to(torch.float32), -1).to(x.dtype)


def _log_softmax(x: Any) -> Any:
    import torch

    return torch.log_softmax(x.to(torch.float32), -1).to(x.dtype)


def _swiglu(g: Any, u: Any) -> Any:
    import torch.nn.functional as F

    return F.silu(g) * u


def _matmul_fn(a: Any, b: Any) -> Any:
    return a @ b


def _cross_entropy(logits: Any, targets: Any) -> Any:
    import torch
    import torch.nn.functional as F

    return F.cross_entropy(logits.to(torch.float32), targets)


def _rope_fn(q: Any, cos: Any, sin: Any) -> Any:
    import torch

    half = q.shape[-1] // 2
    rot = torch.cat((-q[..., half:], q[..., :half]), dim=-1)
    return q * cos[:, None, :] + rot * sin[:, None, :]


@dataclass(frozen=True)
class OpSpec:
    """An operator some template implements: its arity, input shape pattern and meaning."""

    name: str
    family: str
    arity: int
    shapes: Callable[[list[Shape]], bool]
    fn: Callable[..., Any]
    eps: float | None = None
    """Default epsilon, for operators that take one (others are tried first)."""


OPS: tuple[OpSpec, ...] = (
    OpSpec("rmsnorm", "rownorm", 2, _same_last(1), _rmsnorm, 1e-6),
    OpSpec("fused_add_rmsnorm", "rownorm", 3, _residual, _fused_add_rmsnorm, 1e-6),
    OpSpec("layernorm", "rownorm", 3, _same_last(1, 2), _layernorm, 1e-5),
    OpSpec("softmax", "softmax", 1, lambda s: len(s[0]) >= 1, _softmax),
    OpSpec("log_softmax", "softmax", 1, lambda s: len(s[0]) >= 1, _log_softmax),
    OpSpec("swiglu", "elementwise", 2, _all_same, _swiglu),
    OpSpec("matmul", "matmul", 2, _matmul, _matmul_fn),
    OpSpec("cross_entropy", "cross_entropy", 2, _xent, _cross_entropy),
    OpSpec("rope", "rope", 3, _rope, _rope_fn),
)


@dataclass(frozen=True)
class OpMatch:
    """A task resolved to a structure: the template operator (or ``generated``), the
    reference's parameter names, constants, the structures available, and the order in
    which the operator takes the reference's parameters."""

    op: str
    params: tuple[str, ...]
    constants: dict[str, Any]
    templates: tuple[templates.Template, ...]
    call: tuple[str, ...] = ()
    graph: str = ""
    """What the traced graph says the reference computes (for the plan and the report)."""
    notes: tuple[str, ...] = field(default_factory=tuple)
    """What the structure leaves to a library (generated candidates), one line each."""
    launches: int = 1
    """Kernel launches one call of the structure makes."""


def equivalent(got: Any, want: Any) -> bool:
    """Outputs agree in structure, dtype and (within rounding) value."""
    import torch

    gs = got if isinstance(got, (tuple, list)) else (got,)
    ws = want if isinstance(want, (tuple, list)) else (want,)
    if len(gs) != len(ws):
        return False
    for g, w in zip(gs, ws, strict=True):
        if not (isinstance(g, torch.Tensor) and isinstance(w, torch.Tensor)) \
                or g.shape != w.shape or g.dtype != w.dtype:
            return False
        g64, w64 = g.double(), w.double()
        scale = float(w64.abs().mean()) + 1e-6
        tol = 2e-2 if w.dtype in (torch.bfloat16, torch.float16) else 1e-3
        if not bool(torch.isfinite(g64).all()) or float((g64 - w64).abs().max()) > tol * 8 * scale:
            return False
    return True


def semantic_match(run: Callable[..., Any], draws: list[list[Any]], params: tuple[str, ...],
                   eps_found: list[float]) -> tuple[OpSpec, tuple[int, ...], float | None] | None:
    """The operator whose function equals ``run`` on every draw, with the input order and eps."""
    want = [run(*args) for args in draws]
    shapes = [tuple(a.shape) if hasattr(a, "shape") else () for a in draws[0]]
    for op in OPS:
        if op.arity != len(params):
            continue
        for order in itertools.permutations(range(op.arity)):
            if not op.shapes([shapes[i] for i in order]):
                continue
            for eps in ([*eps_found, op.eps] if op.eps is not None else [None]):
                extra = (eps,) if eps is not None else ()
                try:
                    got = [op.fn(*[args[i] for i in order], *extra) for args in draws]
                except (RuntimeError, ValueError, IndexError, TypeError):
                    continue
                if all(equivalent(g, w) for g, w in zip(got, want, strict=True)):
                    return op, order, eps
    return None


def template_match(op: OpSpec, order: tuple[int, ...], eps: float | None, params: tuple[str, ...],
                   graph: str, languages: tuple[str, ...] = ("triton",)) -> OpMatch:
    constants = {"EPS": eps} if eps is not None else {}
    found = tuple(t for lang in languages for t in templates.for_op(op.name, lang))
    return OpMatch(op.name, params, constants, found,
                   call=tuple(params[i] for i in order), graph=graph,
                   launches=2 if op.name == "cross_entropy" else 1)


def unsupported(task: TaskSpec, why: str) -> AgentError:
    return AgentError(f"the built-in agent cannot make a kernel for '{task.name}': {why}; {LLM_HINT}")


def reference_params(source: str) -> tuple[str, ...] | None:
    """Positional parameter names of the reference's ``run`` (None without one)."""
    import ast

    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name == "run":
            if node.args.vararg or node.args.kwonlyargs:
                return None
            return tuple(a.arg for a in (*node.args.posonlyargs, *node.args.args))
    return None
