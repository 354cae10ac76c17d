"""Integer outputs on a rounding boundary.

An integer output computed from floating-point values (a radius ``ceil(3 * sqrt(l))``, a bin
``floor(x / w)``) changes by one wherever the value lands within rounding error of an integer.
A correct kernel that orders its float arithmetic differently from the reference then differs
from the float64 oracle there, and from the reference run in its own dtypes too, in an element
or two of thousands: a held-out 3-D Gaussian projection failed exactly so, at random seeds.

Such an element is told apart from a wrong one by asking the oracle again on inputs moved by a
rounding-sized step, once each way: if the kernel's value lies between the oracle's two
answers, the element sits on a boundary (or where the output is so ill-conditioned that a
step of 2^-20 moves it by more than the kernel's difference: a nearly singular projection
moves a projected radius by tens). The step is far below any
tolerance a float output gets and far above the float32 rounding a kernel may differ by.
Forgiven elements are capped (:data:`SHARE`): boundaries are rare on drawn inputs, so a kernel
that differs in more places is wrong, not unlucky.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

NOTE = ("output {k}: {n} element(s) forgiven on a rounding boundary (between the float64 "
        "reference's values for inputs moved by at most 2^-17 each way)")
STEPS = (2.0**-20, 2.0**-17)
"""Relative sizes of the input moves, each tried in both directions."""
SHARE = 1e-3
"""At most this share of an output's elements (and at least one) may be forgiven."""


def second_opinion(problem: Any, wl: Any, args: list[Any], k: int, out: Any, ref64: Any, tol: Any,
                   device: str, notes: list[str]) -> bool:
    """Output ``k`` within ``tol`` of the reference run in its own dtypes on the same values
    (the float64 oracle missed by a rounding step), or an integer output off both only on
    rounding boundaries (noted in ``notes``)."""
    from forgekernel.judge import inputs, values

    refs = problem.reference(wl, inputs.clone_args(args, device))
    if k >= len(refs) or values.compare(out, refs[k], tol).ok:
        return k < len(refs)
    if out.is_floating_point() or problem.own_precision:
        return False
    # float64 copies where the inputs are (host memory for a host-resident workload): the
    # oracle moves them to its device itself, or computes in host memory where it must
    n = explained(lambda a: problem.oracle(wl, a), inputs.upcast(args), k, out, misses(out, ref64, refs[k]))
    if n:
        notes.append(NOTE.format(k=k, n=n))
    return n > 0


def explained(oracle: Callable[[list[Any]], tuple[Any, ...]], args64: list[Any], k: int,
              out: Any, misses: Any, seed: int = 0) -> int:
    """How many elements of ``out`` (``misses``: a mask of those that equal neither the oracle
    nor the reference) lie between the oracle's answers on inputs moved each way by one of
    :data:`STEPS`; 0 when any miss lies outside or there are too many. ``args64``: the
    oracle's (float64) inputs."""
    import torch

    count = int(misses.sum())
    if count == 0 or count > max(1, int(out.numel() * SHARE)):
        return 0
    signs = _signs(args64, seed)
    for step in STEPS:
        ends = []
        for direction in (1.0, -1.0):
            moved = [a * (1 + direction * step * s) if s is not None else a for a, s in zip(args64, signs, strict=True)]
            try:
                with torch.no_grad():
                    ends.append(oracle(moved)[k].to(device=out.device, dtype=torch.float64))
            except Exception:  # noqa: BLE001 - the reference rejects moved inputs: no second opinion
                return 0
        lo, hi = torch.minimum(*ends), torch.maximum(*ends)
        value = out.to(torch.float64)
        if bool(((value >= lo) & (value <= hi))[misses].all()):
            return count
    return 0


def _signs(args: list[Any], seed: int) -> list[Any]:
    """A random sign per element of each floating tensor (None for the other arguments)."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    out = []
    for a in args:
        if isinstance(a, torch.Tensor) and a.is_floating_point():
            s = torch.randint(0, 2, a.shape, generator=gen, dtype=torch.int8).to(a.dtype) * 2 - 1
            out.append(s.to(a.device))
        else:
            out.append(None)
    return out


def misses(out: Any, oracle_out: Any, native_out: Any) -> Any:
    """Elements of an integer output that equal neither the oracle's nor the reference's."""
    return ((out != oracle_out.to(device=out.device, dtype=out.dtype))
            & (out != native_out.to(device=out.device, dtype=out.dtype)))
