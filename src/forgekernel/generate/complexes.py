"""Complex arithmetic rewritten as real arithmetic before Inductor lowers it.

Inductor generates no code for complex tensors: it hands every op on them to ATen (a
LLaMA-style rotary embedding, ``view_as_complex(q) * polar(1, angles)``, then runs in eager
PyTorch). :func:`as_real` is a post-grad graph pass: each complex value inside the graph is
carried as a real tensor with a trailing dimension of 2 (real part, imaginary part), which
is how ``view_as_real`` lays it out, and each op on it is written with real ops Inductor
lowers (a complex product as four real products). It applies only where every op that
touches a complex value is one it knows, and no graph input or output is complex; otherwise
the graph is left as it was (Inductor's own handling, ATen, stands).
"""

from __future__ import annotations

import functools
from typing import Any


def as_real(graph: Any) -> None:
    """Inductor's ``post_grad_custom_pre_pass``: rewrite ``graph`` in place (see module doc)."""
    import torch

    touched = [n for n in graph.nodes if _complex(n) or any(_complex(a) for a in n.all_input_nodes)]
    if not touched or any(n.op != "call_function" or _rule(n) is None for n in touched):
        return
    fake = torch._guards.detect_fake_mode([n.meta.get("val") for n in graph.nodes if n.op == "placeholder"])
    if fake is None:  # no fake values to give the new nodes: left as it was
        return
    pairs: dict[Any, Any] = {}
    with fake:
        for n in touched:
            with graph.inserting_before(n):
                out = _rule(n)(_Emit(graph, pairs), n)
            if _complex(n):
                pairs[n] = out
            else:
                n.replace_all_uses_with(out)
    graph.eliminate_dead_code()


def _complex(x: Any) -> bool:
    val = getattr(x, "meta", {}).get("val")
    return getattr(val, "dtype", None) is not None and val.dtype.is_complex


class _Emit:
    """Adds nodes (with their fake values, which Inductor's lowering reads) to the graph."""

    def __init__(self, graph: Any, pairs: dict[Any, Any]) -> None:
        self.graph, self.pairs = graph, pairs

    def __call__(self, op: Any, *args: Any, **kwargs: Any) -> Any:
        import torch

        node = self.graph.call_function(op, args, kwargs)
        val = torch.fx.node.map_arg((args, kwargs), lambda a: a.meta["val"])
        node.meta["val"] = op(*val[0], **val[1])
        return node

    def pair(self, x: Any) -> Any:
        """The real [..., 2] form of a complex node."""
        return self.pairs[x]

    def parts(self, x: Any) -> tuple[Any, Any]:
        import torch

        p = self.pair(x)
        aten = torch.ops.aten
        return self(aten.select.int, p, -1, 0), self(aten.select.int, p, -1, 1)

    def join(self, re: Any, im: Any) -> Any:
        import torch

        aten = torch.ops.aten
        # a select between the parts by position (one element-wise op: it fuses with what
        # computes them, where a concatenation would be a kernel of its own)
        val = re.meta["val"]
        position = self(torch.ops.prims.iota.default, 2, start=0, step=1, dtype=torch.int64,
                        device=val.device, requires_grad=False)
        first = self(aten.eq.Scalar, position, 0)
        return self(aten.where.self, first, self(aten.unsqueeze.default, re, -1),
                    self(aten.unsqueeze.default, im, -1))


def _dim(n: Any, d: int, extra: int = 0) -> int:
    """A dimension index of complex node ``n``'s first argument, made non-negative (so that it
    still names the same dimension once the trailing pair dimension is added)."""
    rank = n.args[0].meta["val"].dim() + extra
    return d + rank if d < 0 else d


def _product(e: _Emit, n: Any) -> Any:
    import torch

    aten = torch.ops.aten
    a, b = n.args
    if _complex(a) and _complex(b):
        ar, ai = e.parts(a)
        br, bi = e.parts(b)
        return e.join(e(aten.sub.Tensor, e(aten.mul.Tensor, ar, br), e(aten.mul.Tensor, ai, bi)),
                      e(aten.add.Tensor, e(aten.mul.Tensor, ar, bi), e(aten.mul.Tensor, ai, br)))
    c, r = (a, b) if _complex(a) else (b, a)
    return e(aten.mul.Tensor, e.pair(c), _scalar_or_last(e, r))


def _scalar_or_last(e: _Emit, r: Any) -> Any:
    """A real operand broadcast against a pair: a tensor gains the trailing dimension."""
    import torch

    return e(torch.ops.aten.unsqueeze.default, r, -1) if hasattr(r, "meta") else r


def _sum_or_difference(e: _Emit, n: Any) -> Any:
    import torch

    aten = torch.ops.aten
    a, b = n.args[:2]
    alpha = n.kwargs.get("alpha", 1)
    sign = -alpha if n.target == aten.sub.Tensor else alpha

    def scaled(x: Any, k: Any) -> Any:
        return x if k == 1 else e(aten.mul.Tensor, x, k) if hasattr(x, "meta") else x * k

    if _complex(a) and _complex(b):
        return e(aten.add.Tensor, e.pair(a), scaled(e.pair(b), sign))
    if _complex(a):
        ar, ai = e.parts(a)
        return e.join(e(aten.add.Tensor, ar, scaled(b, sign)), ai)
    br, bi = e.parts(b)  # a real operand (tensor or number) and a complex one
    return e.join(e(aten.add.Tensor, scaled(br, sign), a), scaled(bi, sign))


def _quotient(e: _Emit, n: Any) -> Any:
    import torch

    aten = torch.ops.aten
    a, b = n.args
    if not _complex(b):
        return e(aten.div.Tensor, e.pair(a), _scalar_or_last(e, b))
    br, bi = e.parts(b)
    den = e(aten.add.Tensor, e(aten.mul.Tensor, br, br), e(aten.mul.Tensor, bi, bi))
    if not _complex(a):
        return e.join(e(aten.div.Tensor, e(aten.mul.Tensor, br, a), den),
                      e(aten.div.Tensor, e(aten.mul.Tensor, e(aten.neg.default, bi), a), den))
    ar, ai = e.parts(a)
    re = e(aten.add.Tensor, e(aten.mul.Tensor, ar, br), e(aten.mul.Tensor, ai, bi))
    im = e(aten.sub.Tensor, e(aten.mul.Tensor, ai, br), e(aten.mul.Tensor, ar, bi))
    return e.join(e(aten.div.Tensor, re, den), e(aten.div.Tensor, im, den))


def _exp(e: _Emit, n: Any) -> Any:
    import torch

    aten = torch.ops.aten
    ar, ai = e.parts(n.args[0])
    scale = e(aten.exp.default, ar)
    return e.join(e(aten.mul.Tensor, scale, e(aten.cos.default, ai)),
                  e(aten.mul.Tensor, scale, e(aten.sin.default, ai)))


def _polar(e: _Emit, n: Any) -> Any:
    import torch

    aten = torch.ops.aten
    r, theta = n.args
    return e.join(e(aten.mul.Tensor, r, e(aten.cos.default, theta)),
                  e(aten.mul.Tensor, r, e(aten.sin.default, theta)))


def _magnitude(e: _Emit, n: Any) -> Any:
    import torch

    aten = torch.ops.aten
    ar, ai = e.parts(n.args[0])
    return e(aten.sqrt.default, e(aten.add.Tensor, e(aten.mul.Tensor, ar, ar), e(aten.mul.Tensor, ai, ai)))


PART = {"complex32": "float16", "complex64": "float32", "complex128": "float64"}
"""The real dtype of each complex dtype's parts."""


def _cast(e: _Emit, n: Any) -> Any:
    """A complex value converted to another complex dtype: its parts to the matching real one."""
    import torch

    real = getattr(torch, PART[str(n.meta["val"].dtype).removeprefix("torch.")])
    return e(torch.ops.prims.convert_element_type.default, e.pair(n.args[0]), real)


def _retype(e: _Emit, n: Any) -> Any:
    """``view(dtype)`` between a complex dtype and its parts' (Inductor's decomposition of a
    complex sum): the parts interleaved along the last dimension, as the pair holds them."""
    import torch

    aten = torch.ops.aten
    x = n.args[0]
    source = e.pair(x) if _complex(x) else x
    rank = source.meta["val"].dim()
    lead = [e(aten.sym_size.int, source, i) for i in range(rank - (2 if _complex(x) else 1))]
    return e(aten.reshape.default, source, [*lead, -1] if _complex(x) else [*lead, -1, 2])


def _retype_ok(n: Any) -> bool:
    x, dtype = n.args
    value = x.meta["val"].dtype if _complex(x) else dtype
    other = dtype if _complex(x) else x.meta["val"].dtype
    return str(other).removeprefix("torch.") == PART.get(str(value).removeprefix("torch."))


def _shape(n: Any) -> list[Any]:
    """A view's shape argument with the pair dimension added."""
    return [*n.args[1], 2]


def _conj(e: _Emit, n: Any) -> Any:
    import torch

    ar, ai = e.parts(n.args[0])
    return e.join(ar, e(torch.ops.aten.neg.default, ai))


def _same(e: _Emit, n: Any) -> Any:
    return e.pair(n.args[0])


_WITH_SECOND_ARG = {"view", "reshape", "_unsafe_view", "expand", "unsqueeze", "squeeze", "permute",
                    "select", "slice", "sum", "sym_size"}
"""Ops (by overload packet) whose rule reads their second argument (a shape or a dimension)."""


@functools.cache
def _rules() -> dict[Any, Any]:
    import torch

    aten, prims = torch.ops.aten, torch.ops.prims
    return {
        aten.view_as_complex.default: lambda e, n: n.args[0],
        aten.view_as_real.default: _same,
        aten.polar.default: _polar,
        aten.complex.default: lambda e, n: e.join(*n.args),
        aten.real.default: lambda e, n: e.parts(n.args[0])[0],
        aten.imag.default: lambda e, n: e.parts(n.args[0])[1],
        aten.abs.default: _magnitude,
        aten.angle.default: lambda e, n: e(aten.atan2.default, *reversed(e.parts(n.args[0]))),
        aten.mul.Tensor: _product,
        aten.add.Tensor: _sum_or_difference,
        aten.sub.Tensor: _sum_or_difference,
        aten.div.Tensor: _quotient,
        aten.exp.default: _exp,
        aten.neg.default: lambda e, n: e(aten.neg.default, e.pair(n.args[0])),
        aten.conj_physical.default: _conj,
        aten._conj.default: _conj,
        aten.resolve_conj.default: _same,
        aten.resolve_neg.default: _same,
        aten.clone.default: lambda e, n: e(aten.clone.default, e.pair(n.args[0])),
        aten.view.default: lambda e, n: e(aten.reshape.default, e.pair(n.args[0]), _shape(n)),
        aten.reshape.default: lambda e, n: e(aten.reshape.default, e.pair(n.args[0]), _shape(n)),
        aten._unsafe_view.default: lambda e, n: e(aten.reshape.default, e.pair(n.args[0]), _shape(n)),
        aten.expand.default: lambda e, n: e(aten.expand.default, e.pair(n.args[0]), _shape(n)),
        aten.unsqueeze.default: lambda e, n: e(aten.unsqueeze.default, e.pair(n.args[0]),
                                               _dim(n, n.args[1], extra=1)),
        aten.squeeze.dim: lambda e, n: e(aten.squeeze.dim, e.pair(n.args[0]), _dim(n, n.args[1])),
        aten.permute.default: lambda e, n: e(aten.permute.default, e.pair(n.args[0]),
                                             [*(_dim(n, d) for d in n.args[1]), len(n.args[1])]),
        aten.select.int: lambda e, n: e(aten.select.int, e.pair(n.args[0]), _dim(n, n.args[1]), n.args[2]),
        aten.slice.Tensor: lambda e, n: e(aten.slice.Tensor, e.pair(n.args[0]), _dim(n, n.args[1]),
                                          *n.args[2:]),
        aten.sum.dim_IntList: lambda e, n: e(aten.sum.dim_IntList, e.pair(n.args[0]),
                                             [_dim(n, d) for d in n.args[1]], *n.args[2:3]),
        aten.sym_size.int: lambda e, n: e(aten.sym_size.int, e.pair(n.args[0]), _dim(n, n.args[1])),
        prims.convert_element_type.default: _cast,
        aten.view.dtype: _retype,
    }


def _rule(n: Any) -> Any:
    """How node ``n`` (which touches a complex value) is rewritten; None where it cannot be:
    an op not listed, a complex Python number, a keyword argument the rule would drop, a
    dimension or shape argument left to its default, a conversion from complex to real, a sum
    over every dimension."""
    import torch

    aten = torch.ops.aten
    rule = _rules().get(n.target)
    if rule is None or any(isinstance(a, complex) for a in n.args):
        return None
    if n.target.overloadpacket.__name__ in _WITH_SECOND_ARG and len(n.args) < 2:
        return None
    if set(n.kwargs) - ({"alpha"} if n.target in (aten.add.Tensor, aten.sub.Tensor) else set()):
        return None
    if n.target == torch.ops.prims.convert_element_type.default and not _complex(n):
        return None
    if n.target == aten.sum.dim_IntList and not n.args[1]:
        return None
    if n.target == aten.view.dtype and not _retype_ok(n):
        return None
    return rule
