"""Inputs: hidden workloads derived from the axes, and tensors drawn from secret seeds.

Hidden workloads are shapes the agent never sees: an axis at its minimum (usually 1), every
axis one step past a visible value (N+1), and every axis at an odd non-power-of-two value,
all derived from the smallest visible workload so they stay cheap; on a GPU one more is
derived from the smallest large workload. Values are drawn from ``TensorSpec.dist`` with a
``torch.Generator`` seeded from :mod:`secrets` by the worker (never from the task), or by
the reference's ``make_inputs(axes, seed)`` when it defines one.
"""

from __future__ import annotations

import random
import secrets
from typing import Any

from forgekernel.records import AxisSpec, TaskSpec, TensorSpec, Workload
from forgekernel.task import numel, shape_of

HIDDEN_MAX = 4
"""Hidden workloads derived from the smallest visible workload (plus one large one on a GPU)."""

FLOAT_DTYPES = ("bfloat16", "float16", "float32", "float64")


def _valid(spec: AxisSpec, value: int) -> bool:
    return (value >= spec.min and (spec.max is None or value <= spec.max)
            and value % spec.multiple_of == 0)


def _is_pow2(v: int) -> bool:
    return v > 0 and v & (v - 1) == 0


def _odd_value(spec: AxisSpec, v: int) -> int | None:
    """A valid value near 3/4 of ``v`` that is not a power of two (odd when allowed)."""
    step = spec.multiple_of
    start = max(spec.min, (v * 3 // 4) // step * step)
    for cand in range(start, start + 64 * step, step):
        if cand >= 1 and not _is_pow2(cand) and (step > 1 or cand % 2 == 1) and _valid(spec, cand):
            return cand
    return None


def _size(task: TaskSpec, w: Workload) -> int:
    return sum(numel(shape_of(s, w.axes)) for s in task.inputs.values()) or 1


def _variants(task: TaskSpec, base: dict[str, int], rng: random.Random) -> list[dict[str, int]]:
    unit, plus, odd = [], dict(base), dict(base)
    for name, spec in task.axes.items():
        if spec.follows is not None or spec.smoke_scaled:  # derived below; never varied
            continue
        v = base[name]
        low = max(spec.min, spec.multiple_of)
        if low != v and _valid(spec, low):
            unit.append({**base, name: low})
        if _valid(spec, v + spec.multiple_of):
            plus[name] = v + spec.multiple_of
        o = _odd_value(spec, v)
        if o is not None:
            odd[name] = o
    rng.shuffle(unit)
    out = []
    for axes in (odd, plus, *unit):  # [odd, plus, *unit]; base where a derived value fails
        derived = task.derive(axes)
        ok = derived is not None and all(_valid(task.axes[k], v) for k, v in derived.items())
        out.append(derived if ok else dict(base))
    return out


def hidden_workloads(task: TaskSpec, visible: list[Workload], *, large: bool,
                     rng: random.Random | None = None) -> list[Workload]:
    """Hidden workloads for ``visible``; an axis varies only within its min/max, so the
    semantic constants of a KernelBench task (min = max) stay as they are."""
    if not task.axes or not visible:
        return []
    rng = rng or random.Random()
    seen = {tuple(sorted(w.axes.items())) for w in task.workloads}
    out: list[Workload] = []

    def add(axes: dict[str, int]) -> None:
        key = tuple(sorted(axes.items()))
        if key not in seen:
            seen.add(key)
            out.append(Workload(axes=axes, smoke=True, hidden=True))

    base = min(visible, key=lambda w: _size(task, w))
    order = _orders(task, [*task.workloads, *visible])
    for axes in _variants(task, dict(base.axes), rng):
        if len(out) < HIDDEN_MAX:
            add(_ordered(axes, order) or dict(base.axes))
    big = [w for w in visible if not w.smoke]
    if large and big:
        mid = min(big, key=lambda w: _size(task, w))
        add(_ordered(_variants(task, dict(mid.axes), rng)[1], order) or dict(mid.axes))  # one step up
    return out


def _orders(task: TaskSpec, workloads: list[Workload]) -> list[tuple[str, str]]:
    """Pairs of axes (a, b), a sizing no input or output (only the model's parameters and
    buffers: a capacity), with a >= b at every given workload and a > b at one at least (a
    causal mask of max_seqlen rows sliced to the sequence length). A hidden workload never
    puts such a capacity at 1 below b: at max_seqlen 1 under a longer sequence, KernelBench
    L3 43's reference broadcast a 1 x 1 mask (no mask at all), another operator than at every
    visible workload. Axes that size inputs vary freely (a vocabulary of 1 under many rows
    is a fair test)."""
    used = {d for spec in (*task.inputs.values(), *task.outputs.values()) for d in spec.shape
            if isinstance(d, str)}
    names = sorted(set.intersection(*(set(w.axes) for w in workloads))) if workloads else []
    return [(a, b) for a in names if a not in used for b in names if a != b
            and all(w.axes[a] >= w.axes[b] for w in workloads)
            and any(w.axes[a] > w.axes[b] for w in workloads)]


def _ordered(axes: dict[str, int], order: list[tuple[str, str]]) -> dict[str, int] | None:
    """``axes``, or None where it puts a capacity at 1 below a size it stays above at every
    visible workload (a size of 1 broadcasts: the operator would change, not the shape)."""
    return None if any(axes[a] == 1 < axes[b] for a, b in order) else axes


# ------------------------------------------------------------------ tensors


def torch_dtype(name: str) -> Any:
    import torch

    return getattr(torch, name)


def draw(spec: TensorSpec, shape: tuple[int, ...], gen: Any, device: str) -> Any:
    """A tensor of ``shape`` with values from ``spec.dist`` (fresh from ``gen``)."""
    import torch

    return draw_into(spec, torch.empty(shape, dtype=torch_dtype(spec.dtype), device=device), gen)


def draw_into(spec: TensorSpec, out: Any, gen: Any) -> Any:
    """``out`` filled in place with values from ``spec.dist`` (fresh from ``gen``); returns it.
    :func:`draw` is this on a new tensor, so both give the same values for one seed."""
    import torch

    dist = spec.dist
    if dist.kind == "custom":
        raise ValueError(f"a 'custom' dist ({dist.note}) cannot be drawn from the spec; the "
                         "reference's make_inputs makes these values")
    if spec.dtype == "bool":
        return out.copy_(torch.randint(0, 2, out.shape, generator=gen, device=out.device).to(torch.bool))
    if spec.dtype not in FLOAT_DTYPES or dist.kind == "randint":
        low = int(dist.low) if dist.low is not None else 0
        high = int(dist.high) if dist.high is not None else 128
        return out.copy_(torch.randint(low, high, out.shape, generator=gen, device=out.device,
                                       dtype=torch.int64))
    if dist.kind == "normal":
        return out.normal_(float(dist.mean), float(dist.std), generator=gen)
    low = dist.low if dist.low is not None else (0.5 if dist.kind == "positive" else 0.0)
    high = dist.high if dist.high is not None else (1.5 if dist.kind == "positive" else 1.0)
    return out.uniform_(float(low), float(high), generator=gen)


def secret_seed() -> int:
    """A fresh seed from the OS's secret source (never derived from the task)."""
    return secrets.randbits(62)


def generator(seed: int, device: str) -> Any:
    import torch

    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    return gen


def to_device(value: Any, device: str) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(device).contiguous()
    if isinstance(value, (list, tuple)):
        return type(value)(to_device(v, device) for v in value)
    return value


def upcast(args: list[Any], device: str | None = None) -> list[Any]:
    """float64 copies of the floating tensors (others unchanged): the oracle's inputs, moved
    to ``device`` when given (the verifier may keep its pristine inputs in host memory)."""
    import torch

    def up(a: Any) -> Any:
        if not isinstance(a, torch.Tensor):
            return a
        dtype = torch.float64 if a.is_floating_point() else a.dtype
        return a.to(device=device or a.device, dtype=dtype)

    return [up(a) for a in args]


def clone_args(args: list[Any], device: str | None = None) -> list[Any]:
    """Copies of the tensors (on ``device`` when given), other values as they are."""
    import torch

    return [a.to(device or a.device, copy=True) if isinstance(a, torch.Tensor) else a for a in args]


def refill(args: list[Any], fresh: list[Any]) -> None:
    """Copy ``fresh`` values into ``args`` in place (same storage, new values)."""
    import torch

    for dst, src in zip(args, fresh, strict=True):
        if isinstance(dst, torch.Tensor):
            dst.copy_(src)
