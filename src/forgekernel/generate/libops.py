"""forge's library parts as custom ops during lowering: each aten op forge implements in
Triton (:mod:`forgekernel.generate.library`) is routed to a ``forge_lib`` custom op, which
Inductor keeps opaque (an extern call in its wrapper) so its shapes stay symbolic; the
candidate's assembly (:mod:`forgekernel.generate.assemble`) points those calls at the library.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from forgekernel.generate import rewrites
from forgekernel.metamode import RECURRENT, recurrent_outputs

LIBRARY_NAMESPACE = "forge_lib"
"""Custom ops standing in for library parts during lowering (Inductor keeps them opaque, so
their shapes stay symbolic and no device-specific layout is chosen around them)."""
_REGISTERED: list[Any] = []
RNN_KINDS = RECURRENT


_LIBRARY_SCHEMAS = {
    "convolution": ("(Tensor x, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, "
                    "SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) "
                    "-> Tensor"),
    "mm": "(Tensor a, Tensor b) -> Tensor",
    "bmm": "(Tensor a, Tensor b) -> Tensor",
    "addmm": "(Tensor bias, Tensor a, Tensor b, Scalar beta, Scalar alpha) -> Tensor",
    "baddbmm": "(Tensor bias, Tensor a, Tensor b, Scalar beta, Scalar alpha) -> Tensor",
    "sort": "(Tensor x, int dim, bool descending) -> (Tensor, Tensor)",
    "topk": "(Tensor x, SymInt k, int dim, bool largest, bool sorted) -> (Tensor, Tensor)",
    "scatter_reduce": "(Tensor x, int dim, Tensor index, Tensor src, str reduce, bool include_self) -> Tensor",
    **{kind: (f"(Tensor x, Tensor{'[]' if kind == 'lstm' else ''} hx, Tensor[] params, bool has_biases, "
              "int num_layers, float dropout, bool train, bool bidirectional, bool batch_first) -> "
              f"(Tensor, Tensor{', Tensor' if kind == 'lstm' else ''})")
       for kind in RNN_KINDS},
}
"""The library ops forge implements in Triton, as custom-op schemas."""


def _aten_call(name: str) -> Callable[..., Any]:
    import torch

    if name == "scatter_reduce":
        return lambda x, dim, index, src, reduce, include_self: torch.ops.aten.scatter_reduce.two(
            x, dim, index, src, reduce, include_self=include_self)
    aten = getattr(torch.ops.aten, name).default if name not in RNN_KINDS else None
    if name == "convolution":
        return lambda *a: aten(*a)
    if name in ("addmm", "baddbmm"):
        return lambda bias, a, b, beta, alpha: aten(bias, a, b, beta=beta, alpha=alpha)
    if name == "sort":
        return lambda x, dim, descending: aten(x, dim, descending)
    if name in RNN_KINDS:  # the .input overload (a whole sequence)
        return lambda *a: getattr(torch.ops.aten, name).input(*a)
    return lambda *a: aten(*a)


def _register(name: str) -> Any:
    import torch

    compute = _aten_call(name)

    def fresh(out: Any, like: Any) -> Any:  # contiguous outputs that alias nothing
        if isinstance(out, tuple):
            return tuple(fresh(o, like) for o in out)
        return like(out)

    # a convolution keeps aten's layout (as the library allocates it), other outputs are contiguous
    keep = torch.preserve_format if name == "convolution" else torch.contiguous_format
    op = torch.library.custom_op(f"{LIBRARY_NAMESPACE}::{name}", mutates_args=(),
                                 schema=_LIBRARY_SCHEMAS[name])(
        lambda *a: fresh(compute(*a), lambda o: o.clone(memory_format=keep)))

    def fake(*a: Any) -> Any:
        if name in RNN_KINDS:  # shapes only: ATen's own would run its time loop, fixing the length
            return recurrent_outputs(name, *a)
        return fresh(compute(*a), lambda o: torch.empty_like(o, memory_format=keep))

    op.register_fake(fake)
    return op


def library_op(name: str) -> Any:
    """The ``forge_lib`` custom op ``name`` (all of them registered on first use)."""
    if not _REGISTERED:
        _REGISTERED.append({n: _register(n) for n in _LIBRARY_SCHEMAS})
    return _REGISTERED[0][name]


def recurrent_ops() -> dict[Any, tuple[str, Any]]:
    """``torch._VF.<kind>`` -> (kind, the forge_lib op) for the recurrent layers, which
    :func:`forgekernel.generate.rewrites.traced_functions` replaces while tracing."""
    import torch

    return {getattr(torch._VF, kind): (kind, library_op(kind)._opoverload) for kind in RNN_KINDS}


def library_ops() -> dict[Any, Callable[..., Any]]:
    """Decompositions routing aten ops forge implements itself to ``forge_lib`` custom ops."""
    import torch

    ops = {name: library_op(name) for name in _LIBRARY_SCHEMAS}
    aten = torch.ops.aten
    return {
        aten.convolution.default: lambda x, w, bias, stride, padding, dilation, transposed, opad,
        groups: ops["convolution"](x, w, bias, list(stride), list(padding), list(dilation),
                                   bool(transposed), list(opad), groups),
        aten.mm.default: lambda a, b: ops["mm"](a, b),
        aten.bmm.default: lambda a, b: ops["bmm"](a, b),
        aten.addmm.default: lambda bias, a, b, beta=1, alpha=1: ops["addmm"](bias, a, b, beta, alpha),
        aten.baddbmm.default: lambda bias, a, b, beta=1, alpha=1: ops["baddbmm"](bias, a, b, beta,
                                                                                  alpha),
        aten.sort.default: lambda x, dim=-1, descending=False: ops["sort"](x, dim, descending),
        aten.sort.stable: lambda x, *, stable=None, dim=-1, descending=False: ops["sort"](x, dim, descending),
        aten.topk.default: lambda x, k, dim=-1, largest=True, sorted=True: ops["topk"](x, k, dim, largest,
                                                                                     sorted),
        aten.median.dim: lambda x, dim, keepdim=False: rewrites.select_sorted(
            ops["sort"], x, dim, keepdim, None),
        aten.kthvalue.default: lambda x, k, dim=-1, keepdim=False: rewrites.select_sorted(
            ops["sort"], x, dim, keepdim, k - 1),
        aten.scatter_reduce.two: lambda x, dim, index, src, reduce, *, include_self=True: (
            ops["scatter_reduce"](x, dim, index, src, reduce, include_self)
            if reduce in ("amax", "amin", "mean") else NotImplemented),
        aten._embedding_bag.default: rewrites.embedding_bag_as_index_add,
        aten.histc.default: rewrites.histc_as_index_add, aten.glu.default: rewrites.glu_halves,
        aten._adaptive_avg_pool2d.default: rewrites.adaptive_avg_pool_as_matmul,
        aten._cdist_forward.default: rewrites.cdist_as_reduction,
        aten._embedding_bag_forward_only.default: rewrites.embedding_bag_as_index_add,
        aten.avg_pool2d.default: lambda *a, **k: rewrites.avg_pool_as_conv(ops["convolution"], 2, *a, **k),
        aten.avg_pool3d.default: lambda *a, **k: rewrites.avg_pool_as_conv(ops["convolution"], 3, *a, **k),
    }
