"""Small example arguments for tracing and lowering a reference (CPU, never a GPU size).

The example workload is the task's first smoke workload (else its smallest) with every
axis that is 1 raised to 2 where the axis allows it: lowering with dynamic shapes would
otherwise fix that size at 1 in the generated kernels.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from forgekernel.generate.symbolic import varying_int_tuples
from forgekernel.records import TaskSpec, TensorSpec, Workload
from forgekernel.task import load_module, numel, shape_of


def example_workload(task: TaskSpec, thorough: bool = True) -> Workload:
    """The workload the reference is traced at: among the smoke workloads, the same with
    every free axis doubled, and the same with one axis doubled at a time, the one whose
    tensors (inputs, parameters and every intermediate the reference makes) have the fewest
    dimensions of size 1 (lowering would fix such a size at 1: a convolution whose depth
    equals its kernel size has an output depth of 1 at every such workload), then the
    largest within EXAMPLE_ELEMENTS (larger sizes make sizes derived from them, a channel
    count per group say, less likely to be 1 or to coincide). ``thorough`` False (a preview):
    the inputs' and parameters' dimensions only, and no single-axis variants."""
    key = (str(task.root), repr(task.workloads), thorough)
    if key not in _EXAMPLES:
        pool = task.smoke_workloads() or task.workloads
        options = [_lifted(task, w) for w in pool] + [_doubled(task, w) for w in pool]
        best = _best(task, options, thorough)
        if thorough and best[0] == REJECTED:  # the forward runs on meta at none: sizes only
            best = _best(task, options, False)
        elif thorough and best[0] > 0 and pool[0].axes:  # a size of 1 somewhere: one axis doubled at a time may avoid it
            best = min(best, _best(task, [_doubled(task, pool[0], only=k) for k in sorted(pool[0].axes)],
                                   thorough, start=2 * len(pool)))
        if thorough and best[0] != REJECTED:
            best = _apart(task, best)
        _EXAMPLES[key] = best[-1]
    return _EXAMPLES[key]


_EXAMPLES: dict[tuple[str, str, bool], Workload] = {}


def _best(task: TaskSpec, options: list[Workload], thorough: bool, start: int = 0) -> tuple:
    scored = []
    for i, w in enumerate(options, start):
        size = _size(task, w)
        ones = _ones(task, w) + (_inner_ones(task, w) if thorough else 0)
        scored.append((ones, size > EXAMPLE_ELEMENTS, -size, i, w))
    return min(scored)


def _apart(task: TaskSpec, best: tuple) -> tuple:
    """``best`` with free axes of equal value moved apart where the reference allows: tracing
    may take two sizes that are equal at the example for one (slicing a causal mask of
    max_seqlen rows to the sequence length T made T and max_seqlen one symbol, KernelBench
    L3 43: 'input has shape (7, 7, 96), expected (7, 8, 96)'). One axis of a pair doubled or
    tripled at a time, kept when the reference runs there and it leaves fewer pairs and no
    more sizes of 1 among the inputs and parameters."""
    for _ in range(len(best[-1].axes)):
        w = best[-1]
        pairs = _coincident(task, w)
        if not pairs:
            break
        moves = [m for k in sorted({k for p in pairs for k in p}) for f in (2, 3)
                 if (m := _doubled(task, w, only=k, factor=f)) != w and _inner_ones(task, m) != REJECTED]
        # sizes of 1 among the inputs and parameters only: a mask sliced from a longer buffer
        # makes more intermediates with its constant leading 1s, not a size fixed at 1
        fewer = [(len(_coincident(task, m)), _ones(task, m), -_size(task, m), i, m) for i, m in enumerate(moves)]
        fewer = [f for f in fewer if f[0] < len(pairs) and f[1] <= _ones(task, w) and -f[2] <= 4 * EXAMPLE_ELEMENTS]
        if not fewer:
            break
        best = (*best[:-1], min(fewer)[-1])
    return best


def _coincident(task: TaskSpec, wl: Workload) -> list[tuple[str, str]]:
    """Pairs of free axes (not pinned) with equal values above 1."""
    free = sorted(k for k, v in wl.axes.items() if v > 1 and task.axes[k].max != task.axes[k].min
                  and task.axes[k].follows is None)
    return [(a, b) for i, a in enumerate(free) for b in free[i + 1:] if wl.axes[a] == wl.axes[b]]


EXAMPLE_ELEMENTS = 1 << 20
"""Elements of all example tensors together above which a larger example is not preferred."""


def _valid(task: TaskSpec, name: str, value: int) -> bool:
    """Whether an example may move axis ``name`` to ``value`` (never a smoke-scaled one: the
    reference may read it as a plain int, so the lowering is specialised to it)."""
    spec = task.axes[name]
    return not spec.smoke_scaled and value >= spec.min and (spec.max is None or value <= spec.max) and value % spec.multiple_of == 0


def _lifted(task: TaskSpec, wl: Workload) -> Workload:
    axes = {k: (2 if v == 1 and _valid(task, k, 2) else v) for k, v in wl.axes.items()}
    return Workload(axes=task.derive(axes) or dict(wl.axes), smoke=True)


def _doubled(task: TaskSpec, wl: Workload, only: str | None = None, factor: int = 2) -> Workload:
    axes = {k: (factor * v if (only is None or k == only) and _valid(task, k, factor * v) else v)
            for k, v in wl.axes.items()}
    return _lifted(task, Workload(axes=task.derive(axes) or dict(wl.axes), smoke=True))


def _shapes(task: TaskSpec, wl: Workload) -> list[tuple[int, ...]]:
    """Shapes of the inputs (and a KernelBench model's parameters) at ``wl``, on meta."""
    if task.format != "kernelbench":
        return [shape_of(s, wl.axes) for s in task.inputs.values()]
    from forgekernel import instance

    try:
        _, module = reference_function(task)
        inst = instance.build(task, module, wl, meta=True)
    except Exception:  # a variant the reference rejects: never chosen
        return [(1,) * 64]
    return [tuple(t.shape) for t in (*inst.param_tensors(), *inst.inputs) if hasattr(t, "shape")]


def _ones(task: TaskSpec, wl: Workload) -> int:
    return sum(1 for shape in _shapes(task, wl) for d in shape if d == 1)


REJECTED = float("inf")
"""The score of a variant the reference's forward fails at (a sequence doubled past the
causal mask's length, KernelBench L3 43): never the example while another one runs."""


def _inner_ones(task: TaskSpec, wl: Workload) -> float:
    """Dimensions of size 1 in the tensors the reference's operators make at ``wl`` (run on
    meta tensors: nothing is computed); REJECTED when it cannot run there."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    from forgekernel import instance

    count = [0]

    class _Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
            out = func(*args, **(kwargs or {}))
            for t in out if isinstance(out, (tuple, list)) else (out,):
                if isinstance(t, torch.Tensor):
                    count[0] += sum(1 for d in t.shape if d == 1)
            return out

    try:
        _, module = reference_function(task)
        if task.format == "kernelbench":
            inst = instance.build(task, module, wl, meta=True)
            call, args = inst.model, inst.inputs
        else:
            call = module.run
            args = [torch.empty(shape_of(s, wl.axes), dtype=getattr(torch, s.dtype), device="meta")
                    for s in task.inputs.values()]
        with torch.no_grad(), _Count():
            call(*args)
    except Exception:  # an operator without a meta kernel, or a variant the reference rejects
        return REJECTED
    return count[0]


def _size(task: TaskSpec, wl: Workload) -> int:
    return sum(numel(shape) for shape in _shapes(task, wl))


elements = _size
"""Elements of the inputs (and a KernelBench model's parameters) at a workload."""
lifted = _lifted
"""A workload with its sizes of 1 made 2 where the axis allows (tracing fixes a size of 1)."""


def draw(spec: TensorSpec, shape: tuple[int, ...], gen: Any) -> Any:
    """A CPU tensor drawn like the judge draws the input (values matter little here)."""
    import torch

    dtype = getattr(torch, spec.dtype)
    dist = spec.dist
    if spec.dtype == "bool":
        return torch.randint(0, 2, shape, generator=gen).to(torch.bool)
    if not dtype.is_floating_point or dist.kind == "randint":
        low = int(dist.low) if dist.low is not None else 0
        high = int(dist.high) if dist.high is not None else 128
        return torch.randint(low, high, shape, generator=gen, dtype=torch.int64).to(dtype)
    if dist.kind == "normal":
        return (torch.randn(shape, generator=gen) * dist.std + dist.mean).to(dtype)
    low = dist.low if dist.low is not None else (0.5 if dist.kind == "positive" else 0.0)
    high = dist.high if dist.high is not None else (1.5 if dist.kind == "positive" else 1.0)
    return (torch.rand(shape, generator=gen) * (high - low) + low).to(dtype)


def forge_inputs(task: TaskSpec, module: Any, workload: Workload, seed: int = 0) -> list[Any]:
    """Inputs of a forge task at ``workload`` on the CPU (make_inputs when the task has one)."""
    import torch

    make = getattr(module, "make_inputs", None)
    if make is not None:
        return [t.cpu() if isinstance(t, torch.Tensor) else t for t in make(dict(workload.axes), seed)]
    gen = torch.Generator().manual_seed(seed)
    return [draw(s, shape_of(s, workload.axes), gen) for s in task.inputs.values()]


def reference_function(task: TaskSpec) -> tuple[Callable[..., Any], Any]:
    """The reference as a function of its flat arguments, and its module."""
    from pathlib import Path

    module = load_module(Path(task.root) / "reference.py", name=f"_fk_generate_{abs(hash(task.root)):x}")
    return getattr(module, "run", None), module


def flat_example(task: TaskSpec, seed: int = 0, thorough: bool = True,
                 workload: Workload | None = None) -> tuple[Callable[..., Any], list[Any], tuple[str, ...]]:
    """The reference as ``f(*flat)`` and its flat arguments at the example workload (or at
    ``workload``), on the CPU: a forge task's inputs; for KernelBench, Model's parameters and
    buffers (in ``named_parameters()`` then ``named_buffers()`` order) followed by the
    forward's inputs; and the names of those parameters and buffers (``thorough``: see
    :func:`example_workload`)."""
    from forgekernel import instance

    fn, module = reference_function(task)
    wl = workload or example_workload(task, thorough)
    if task.format != "kernelbench":
        return fn, forge_inputs(task, module, wl, seed), ()
    inst = instance.build(task, module, wl, device="cpu", seed=seed, init_seed=0)
    shape_free(inst.model)
    try:  # the model at another workload, to see which of its tuples of ints vary
        other = instance.build(task, module, _doubled(task, wl), meta=True).model
    except Exception:  # noqa: BLE001 - a variant the reference rejects: nothing compared
        other = None
    if other is not None:
        varying_int_tuples(inst.model, other)
    return (inst.functional(), [*inst.param_tensors(), *inst.inputs],
            tuple(name for name, _ in inst.params))


def module_variation(task: TaskSpec) -> str | None:
    """KernelBench: how the model differs between workloads (built at the task's workloads and
    at the first one with its free axes doubled and tripled, two of them at least): "fixed"
    where it is the same at every one (parameters' shapes and every submodule's plain
    attributes), so nothing of the module need be symbolic when it is lowered (Dynamo
    otherwise makes each int attribute a size of its own; a Swin MLP's window and resolution
    attributes made its size arithmetic too large to finish within the lowering limit);
    "floats" where a float attribute differs (a scale computed from a size in ``__init__``,
    which Dynamo would keep at the example's value); else None."""
    if task.format != "kernelbench":
        return None
    from forgekernel import instance

    _, module = reference_function(task)
    first = task.workloads[0]
    seen, prints, floats = set(), set(), set()
    for wl in (*task.workloads, _doubled(task, first), _doubled(task, first, factor=3)):
        key = tuple(sorted(wl.axes.items()))
        if key in seen:
            continue
        seen.add(key)
        try:
            model = instance.build(task, module, wl, meta=True).model
        except Exception:  # noqa: BLE001 - a variant the reference rejects: not compared
            continue
        prints.add(_module_print(model))
        floats.add(repr(sorted((name, k, v) for name, m in _modules(model) for k, v in vars(m).items()
                               if type(v) is float)))
    if len(prints) == 1 and len(seen) >= 2:
        return "fixed"
    return "floats" if len(floats) > 1 else None


def _modules(model: Any) -> list[tuple[str, Any]]:
    import torch

    return list(model.named_modules()) if isinstance(model, torch.nn.Module) else []


def _module_print(model: Any) -> str:
    """Every submodule's type and plain attributes (numbers, strings, tuples, tensor shapes)
    and every parameter's and buffer's shape and dtype, as text."""
    import torch

    from forgekernel import instance

    if not isinstance(model, torch.nn.Module):
        return repr(type(model))

    def plain(v: Any) -> Any:
        return tuple(v.shape) if isinstance(v, torch.Tensor) else v

    parts = [(name, type(m).__name__, sorted((k, plain(v)) for k, v in vars(m).items() if not k.startswith("_")
                                               and isinstance(v, (bool, int, float, str, tuple, torch.Tensor))))
             for name, m in model.named_modules()]
    tensors = [(n, tuple(t.shape), str(t.dtype)) for n, t in instance.named_tensors(model)]
    return repr((parts, tensors))


def shape_free(model: Any) -> None:
    """Rewrite, in place and for tracing only, the modules whose forward bakes a size of the
    workload into the graph as a constant: ``nn.LayerNorm`` normalises over its
    ``normalized_shape``, which always equals the input's trailing sizes; reading those from
    the input instead keeps them symbolic (the parameters and their names are unchanged).
    ``nn.GroupNorm`` passes ``num_groups`` to an ATen op that takes a plain int, which fixes
    it at the example's value; the same statistics written out keep it symbolic (a task
    whose groups follow its channels has another count at every workload). (1-D max pooling,
    module or function, is rewritten while tracing: :mod:`forgekernel.generate.rewrites`.)
    ``nn.EmbeddingBag`` with a ``padding_idx``
    (sum or mean) goes through an ATen composite that wraps the index against the table's
    row count as a plain int (the table size is fixed at the example's); the same bags from
    a table whose padding row is zeroed, a mean divided by the count of other indices, stay
    symbolic."""
    import torch

    for module in model.modules() if isinstance(model, torch.nn.Module) else ():
        if (type(module) is torch.nn.EmbeddingBag and module.padding_idx is not None
                and module.mode in ("sum", "mean") and module.max_norm is None):
            module.forward = _padded_bag_forward(module)
        if type(module) is torch.nn.LayerNorm:
            module.forward = _layer_norm_forward(module)
        elif type(module) is torch.nn.GroupNorm:
            module.forward = _group_norm_forward(module)


def _padded_bag_forward(module: Any) -> Callable[..., Any]:
    import torch
    import torch.nn.functional as F

    def forward(ids: Any, offsets: Any = None, per_sample_weights: Any = None) -> Any:
        keep = (torch.arange(module.weight.shape[0], device=ids.device) != module.padding_idx).to(module.weight.dtype)
        last = module.include_last_offset
        total = F.embedding_bag(ids, module.weight * keep.unsqueeze(-1), offsets, mode="sum",
                                per_sample_weights=per_sample_weights, include_last_offset=last)
        if module.mode == "sum":
            return total
        count = F.embedding_bag(ids, keep.unsqueeze(-1), offsets, mode="sum", include_last_offset=last)
        return total / count.clamp(min=1)  # a bag of padding only: zeros, as ATen gives
    return forward


def _group_norm_forward(module: Any) -> Callable[..., Any]:
    """GroupNorm's statistics per channel first (a mean and variance over the spatial
    dimensions, read where the input lies), then per group from its channels' (the law of
    total variance: channels are equally large); the input is never viewed as (n, groups,
    -1), whose index arithmetic over symbolic sizes took Inductor minutes (a 3-D transposed
    convolution's output: over 150 s against 28 s this way)."""
    import torch

    def forward(x: Any) -> Any:
        n, c, groups = x.shape[0], x.shape[1], module.num_groups
        lead = (n, c) + (1,) * (x.dim() - 2)
        if x.dim() > 2:
            var_c, mean_c = torch.var_mean(x, dim=tuple(range(2, x.dim())), correction=0)
        else:
            var_c, mean_c = torch.zeros_like(x), x
        means = mean_c.reshape(n, groups, -1)
        mean = means.mean(-1, keepdim=True)
        var = var_c.reshape(n, groups, -1).mean(-1, keepdim=True) + ((means - mean) ** 2).mean(-1, keepdim=True)
        scale = torch.rsqrt(var + module.eps).expand(means.shape).reshape(lead)
        y = (x - mean.expand(means.shape).reshape(lead)) * scale
        if module.weight is None:
            return y
        shape = (1, c) + (1,) * (x.dim() - 2)
        return y * module.weight.reshape(shape) + module.bias.reshape(shape)
    return forward


def _layer_norm_forward(module: Any) -> Callable[..., Any]:
    import torch.nn.functional as F

    dims = len(module.normalized_shape)

    def forward(x: Any) -> Any:
        return F.layer_norm(x, x.shape[x.dim() - dims:], module.weight, module.bias, module.eps)
    return forward
