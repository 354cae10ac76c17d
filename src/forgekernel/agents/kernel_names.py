"""Kernel names an agent can read: a demangled C++ name shortened to what the kernel does,
and a profile's kernels merged by that name with their time shares."""

from __future__ import annotations

import re

from forgekernel.records import Profile

KERNELS_SHOWN = 6
"""Kernels listed per profiled workload (the largest time shares)."""
KERNEL_NAME_CHARS = 44
"""Longest kernel name shown (a demangled C++ name is shortened to what the kernel does)."""

_RETURN_TYPE = re.compile(r"^(?:void|int|float|double|unsigned|static|__global__)\s+")
_SKIP_HINTS = frozenset({"BinaryFunctor", "UnaryFunctor", "gpu_kernel_impl", "gpu_kernel_impl_nocast",
                         "ReduceOp", "TrivialOffsetCalculator", "OffsetCalculator", "LoadWithCast",
                         "StoreWithCast", "TensorIteratorBase", "gpu"})


def short_kernel_name(name: str, limit: int = KERNEL_NAME_CHARS) -> str:
    """What a kernel does, from its (demangled) name: the function name without return type,
    namespaces, template arguments and parameters, led by the operation its template names
    when there is one: ``void at::native::vectorized_elementwise_kernel<4,
    at::native::CUDAFunctorOnSelf_add<float>, ...>(...)`` -> ``add (vectorized_elementwise)``."""
    text = _RETURN_TYPE.sub("", name.strip().replace("(anonymous namespace)", "anon"))
    depth, cut = 0, len(text)
    for i, ch in enumerate(text):
        if ch in "<(" and depth == 0:
            cut = i
            break
    qualified, rest = text[:cut], text[cut:]
    base = qualified.rsplit("::", 1)[-1].strip() or qualified.strip()
    hint = _op_hint(rest[1:].split(">(", 1)[0] if rest.startswith("<") else "")
    if hint:
        base = base.removesuffix("_kernel")
        short = f"{hint} ({base})" if hint != base else base
    else:
        short = base
    return short if len(short) <= limit else short[:limit - 3] + "..."


def _op_hint(template_args: str) -> str:
    """The operation a templated kernel applies: a functor, reduction or kernel name among
    its template arguments (``MulFunctor`` -> mul, ``direct_copy_kernel_cuda`` -> direct_copy)."""
    for tok in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", template_args):
        if tok in _SKIP_HINTS:
            continue
        m = re.fullmatch(r"CUDAFunctorOn(?:Self|Other)_(\w+)", tok)
        if m:
            return m.group(1)
        m = re.fullmatch(r"([A-Z][A-Za-z0-9]*?)(?:Functor|Ops)", tok)
        if m:
            return m.group(1).lower()
        m = re.fullmatch(r"([a-z][a-z0-9_]*?)_kernel(?:_cuda|_impl)?", tok)
        if m:
            return m.group(1)
    return ""


def kernels_line(p: Profile, limit: int = KERNELS_SHOWN) -> str:
    """The profile's kernels by short name (same names merged), largest time share first."""
    merged: dict[str, list[float]] = {}
    for k in p.kernels:
        entry = merged.setdefault(short_kernel_name(k.name), [0, 0.0, 0])
        entry[0] += k.count
        if k.share is not None:
            entry[1] += k.share
            entry[2] = 1
    ranked = sorted(merged.items(), key=lambda kv: -kv[1][1])
    parts = []
    for name, (count, share, has_share) in ranked[:limit]:
        times = f" x{count}" if count > 1 else ""
        pct = "" if not has_share else " <1%" if share < 0.005 else f" {share:.0%}"
        parts.append(f"{name}{times}{pct}")
    more = len(ranked) - limit
    return "; ".join(parts) + (f"; {more} more" if more > 0 else "")
