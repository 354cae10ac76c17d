"""What a reference computes, by its traced ATen graph rather than by its name.

:func:`trace` runs the reference once under ``make_fx`` with fake tensors (no memory, no
real work) and lists the ATen ops it calls; :func:`classify` names the class of operator
those ops make: pointwise, reduction, normalisation, softmax, scan, gather, pooling,
matmul (with or without an epilogue), convolution, attention, or a mixture of them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MATMUL = {"mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "dot", "mv", "addmv", "einsum",
          "_scaled_mm", "addbmm"}
CONV = {"convolution", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
        "conv_transpose3d", "_convolution", "cudnn_convolution"}
ATTENTION = {"scaled_dot_product_attention", "_scaled_dot_product_flash_attention",
             "_scaled_dot_product_efficient_attention", "_scaled_dot_product_attention_math",
             "_scaled_dot_product_flash_attention_for_cpu"}
SOFTMAX = {"_softmax", "_log_softmax", "softmax", "log_softmax", "logsumexp"}
NORM = {"native_layer_norm", "native_group_norm", "native_batch_norm", "_native_batch_norm_legit",
        "_native_batch_norm_legit_functional", "_native_batch_norm_legit_no_training",
        "rms_norm", "_fused_rms_norm", "instance_norm", "rsqrt", "var_mean", "linalg_vector_norm",
        "norm"}
REDUCE = {"sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "prod", "var", "std",
          "all", "any", "var_mean", "nansum", "count_nonzero"}
SCAN = {"cumsum", "cumprod", "logcumsumexp", "cummax", "cummin"}
GATHER = {"gather", "index", "index_select", "embedding", "take_along_dim", "scatter",
          "scatter_add", "index_put", "index_add", "masked_select", "nll_loss_forward",
          "nll_loss2d_forward"}
POOL = {"max_pool1d", "max_pool2d", "max_pool3d", "max_pool2d_with_indices",
        "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d", "avg_pool3d",
        "adaptive_avg_pool2d", "_adaptive_avg_pool2d", "adaptive_max_pool2d",
        "_adaptive_avg_pool3d", "adaptive_avg_pool1d"}
RANDOM = {"rand", "randn", "rand_like", "randn_like", "bernoulli", "native_dropout", "dropout",
          "randint", "normal", "uniform", "multinomial"}
LAYOUT = {"view", "reshape", "_unsafe_view", "permute", "transpose", "t", "expand", "clone",
          "contiguous", "unsqueeze", "squeeze", "select", "slice", "as_strided", "alias",
          "detach", "_to_copy", "to", "copy", "copy_", "empty", "empty_like", "zeros", "ones",
          "full", "zeros_like", "ones_like", "full_like", "new_zeros", "new_empty", "arange",
          "lift_fresh_copy", "split", "split_with_sizes", "unbind", "cat", "stack", "flatten",
          "unflatten", "expand_as", "view_as", "scalar_tensor", "empty_strided", "sym_size",
          "sym_stride", "sym_numel", "_reshape_alias", "lift_fresh", "fill", "fill_"}
"""Data movement and allocation: never what decides the class."""


@dataclass(frozen=True)
class OpGraph:
    """The ATen ops a reference calls (name -> count) and the class they make."""

    ops: dict[str, int]
    kind: str
    parts: tuple[str, ...]
    """The classes present, in a fixed order (``kind`` is one of them, or "mixture")."""
    random: bool = False
    small_constants: tuple[float, ...] = ()
    """Small float constants in the graph (epsilons, most likely), largest count first."""
    conv_groups: tuple[tuple[int, int], ...] = ()
    """(input, output) channels per group of each convolution, at the traced shapes."""

    def describe(self) -> str:
        compute = sorted(k for k in self.ops if k not in LAYOUT)
        shown = ", ".join(compute[:10]) + (" ..." if len(compute) > 10 else "")
        return f"{self.kind} ({' + '.join(self.parts) or 'no compute'}; ops: {shown or 'none'})"


def trace(fn: Callable[..., Any], args: list[Any]) -> OpGraph:
    """The ATen ops of ``fn(*args)``, traced with fake tensors."""
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    with torch.no_grad():
        gm = make_fx(fn, tracing_mode="fake")(*args)
    ops: Counter[str] = Counter()
    small: Counter[float] = Counter()
    convs = []
    for node in gm.graph.nodes:
        if node.op == "call_function":
            ops[_op_name(node.target)] += 1
            small.update(a for a in (*node.args, *node.kwargs.values())
                         if isinstance(a, float) and 0 < abs(a) < 1e-2)
            if _op_name(node.target) == "convolution" and len(node.args) == 9:
                convs.append(_conv_group(node.args[1].meta["val"].shape, *node.args[6:9:2]))
    graph = classify(dict(ops))
    return OpGraph(graph.ops, graph.kind, graph.parts, graph.random,
                   tuple(float(f"{v:.6g}") for v, _ in small.most_common()), tuple(convs))


def thin_group(cin_g: int, cout_g: int) -> bool:
    """Whether the library's convolution runs its direct kernel for groups of these channel
    counts rather than product tiles (the rule written in library/conv.py, which forge pastes
    into candidates and never imports: tests/test_generate.py checks that the two agree)."""
    return cout_g < 16 and cin_g * cout_g <= 16


def _conv_group(weight: Any, transposed: bool, groups: int) -> tuple[int, int]:
    """(input, output) channels per group of aten.convolution with this weight shape."""
    if transposed:  # weight (Cin, Cout/groups, *k)
        return int(weight[0]) // int(groups), int(weight[1])
    return int(weight[1]), int(weight[0]) // int(groups)


def _op_name(target: Any) -> str:
    name = getattr(target, "__name__", str(target))
    packet = getattr(target, "overloadpacket", None)
    if packet is not None:
        name = getattr(packet, "__name__", name)
    return name.split(".")[0].rstrip("_") or name


ORDER = ("attention", "convolution", "matmul", "pooling", "normalisation", "softmax", "scan",
         "gather", "reduction", "pointwise")


def classify(ops: dict[str, int]) -> OpGraph:
    """The class of operator the ATen op counts make."""
    names = {k for k in ops if k not in LAYOUT}
    sets = {"attention": ATTENTION, "convolution": CONV, "matmul": MATMUL, "pooling": POOL,
            "normalisation": NORM, "softmax": SOFTMAX, "scan": SCAN, "gather": GATHER,
            "reduction": REDUCE}
    found = [c for c in ORDER[:-1] if names & sets[c]]
    if {"amax", "exp", "sum"} <= names and "softmax" not in found:  # a softmax written out
        found.insert(found.index("reduction") if "reduction" in found else len(found), "softmax")
    covered = set().union(*(sets[c] for c in found)) if found else set()
    if names - covered - RANDOM:
        found.append("pointwise")
    if "normalisation" in found and "reduction" in found:
        found.remove("reduction")  # a norm's statistics are reductions
    if "softmax" in found and "reduction" in found and names & REDUCE <= {"amax", "sum", "max"}:
        found.remove("reduction")
    heavy = [c for c in found if c in ("attention", "convolution", "matmul")]
    if heavy and set(found) - set(heavy) <= {"pointwise"}:
        kind = heavy[0] + (" with epilogue" if "pointwise" in found else "")
    elif len(found) == 1:
        kind = found[0]
    elif not found:
        kind = "data movement"
    elif set(found) == {"pointwise", found[0]} and found[0] != "pointwise":
        kind = found[0]
    else:
        kind = "mixture"
    return OpGraph(ops=dict(ops), kind=kind, parts=tuple(found), random=bool(names & RANDOM))
