"""The value checks of one output against the float64 oracle, a bounded piece at a time.

The normalised error and the tolerances are :mod:`forgekernel.judge.correctness`'s. Every
check here walks the flattened tensors in pieces of at most ``PIECE`` elements, so its
float64 temporaries stay near a gigabyte whatever the output's size: KernelBench's largest
level-1 outputs hold 1.6e9 elements (12.9 GB as float64), and whole-tensor temporaries
several times that ran the H200 out of memory in the verifier. The answers are those of a
whole-tensor computation: the first failing element in memory order, the largest error at
its first occurrence, the oracle's root-mean-square over all of its finite values.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from forgekernel.judge.correctness import SCALE_FRACTION, Check, OutputTolerance, bits_of, unravel

PIECE = 1 << 24
"""Elements per step (128 MiB per float64 temporary)."""
WRAP = 1 << 64
NEGLIGIBLE = 1e-9
"""Reference values (float64) this small in magnitude are rounding noise of a result that is
zero (GroupNorm over groups of one channel gives about 1e-14): a zero or constant output is
then not a degenerate answer, and such a reference tells nothing about input sensitivity."""


def pieces(*tensors: Any, piece: int = PIECE, device: Any = None) -> Iterator[tuple[int, list[Any]]]:
    """(offset, the tensors' flattened slices) in steps of ``piece`` elements, each slice on
    ``device`` (default: the last tensor's; the verifier may keep its copies of a large
    workload in host memory, :mod:`forgekernel.judge.residency`)."""
    flat = [t.reshape(-1) for t in tensors]
    device = device if device is not None else flat[-1].device
    for start in range(0, flat[0].numel(), piece):
        yield start, [f[start:start + piece].to(device) for f in flat]


@dataclass
class _First:
    """The first flat index where a condition held (None: nowhere)."""

    index: int | None = None

    def see(self, start: int, mask: Any) -> None:
        if self.index is None and bool(mask.any()):
            self.index = start + int(mask.nonzero()[0, 0])


@dataclass
class _Stats:
    """What one pass over the oracle (and the output) tells."""

    sumsq: float = 0.0
    finite: int = 0
    peak: float = 0.0
    """The largest finite |oracle| value."""


def scale_of(ref64: Any, piece: int = PIECE) -> float:
    """``s`` of the normalised error: SCALE_FRACTION * rms of the oracle's finite values."""
    stats = _Stats()
    for _, (r,) in pieces(ref64, piece=piece):
        _oracle_stats(stats, r)
    return _scale(stats)


def _oracle_stats(stats: _Stats, r: Any) -> None:
    import torch

    vals = r[torch.isfinite(r)]
    if vals.numel():
        stats.sumsq += float(torch.sum(vals * vals))
        stats.finite += vals.numel()
        stats.peak = max(stats.peak, float(vals.abs().max()))


def _scale(stats: _Stats) -> float:
    if stats.finite == 0:
        return 1e-300
    rms = math.sqrt(stats.sumsq / stats.finite)
    return SCALE_FRACTION * rms if rms > 0 else 1e-300


def _errors(v: Any, r: Any, scale: float) -> tuple[Any, Any]:
    """(|c - r|, e) of one piece in float64, zero where the oracle is not finite."""
    import torch

    diff = (v - r).abs()
    diff = torch.where(torch.isfinite(r), diff, torch.zeros_like(diff))
    return diff, diff / (r.abs().nan_to_num(0.0, 0.0, 0.0) + scale)


@dataclass
class _Largest:
    """The largest |c - r| and the largest e with the flat index of its first occurrence."""

    diff: float = 0.0
    err: float = -1.0
    index: int = 0

    def see(self, start: int, diff: Any, err: Any) -> None:
        self.diff = max(self.diff, float(diff.max()))
        at = int(err.argmax())
        value = float(err[at])
        if value > self.err:
            self.err, self.index = value, start + at


def reference_error(ref_out: Any, ref64: Any, piece: int = PIECE) -> float:
    """The reference's own normalised error against the oracle (0 for exact dtypes)."""
    import torch

    if not ref_out.is_floating_point() or ref_out.numel() == 0:
        return 0.0
    scale = scale_of(ref64, piece)
    largest = _Largest()
    for start, (v, r) in pieces(ref_out, ref64, piece=piece):
        largest.see(start, *_errors(v.to(torch.float64), r, scale))
    return largest.err


def negligible(ref64: Any, piece: int = PIECE) -> bool:
    """Whether every finite value of the float64 reference is rounding noise around zero."""
    if not ref64.is_floating_point():
        return False
    stats = _Stats()
    for _, (r,) in pieces(ref64, piece=piece):
        _oracle_stats(stats, r)
    return stats.peak <= NEGLIGIBLE


@dataclass
class _Degenerate:
    """Whether the output is all zeros or one constant, and whether the oracle rounded to
    the output's dtype is (over its finite values)."""

    zero: bool = True
    constant: bool = True
    first: float | None = None
    ref_nonzero: bool = False
    ref_varies: bool = False
    ref_first: float | None = None
    ref_low: float = float("inf")
    ref_high: float = float("-inf")

    def see(self, out: Any, r: Any) -> None:
        import torch

        if self.first is None and out.numel():
            self.first = out[0]
        self.zero = self.zero and bool((out == 0).all())
        self.constant = self.constant and bool((out == self.first).all())
        vals = r[torch.isfinite(r)].to(out.dtype)
        if vals.numel():
            if self.ref_first is None:
                self.ref_first = vals[0]
            self.ref_nonzero = self.ref_nonzero or bool((vals != 0).any())
            self.ref_varies = self.ref_varies or bool((vals != self.ref_first).any())
            self.ref_low = min(self.ref_low, float(vals.min()))
            self.ref_high = max(self.ref_high, float(vals.max()))

    def beyond_rounding(self, dtype: Any) -> bool:
        """Whether the rounded oracle's values spread over more than two units in the last
        place of the output dtype: a constant answer is then not the dtype's own rounding (an
        RMSNorm over one column gives +-w(1 - d) with d under a bf16 ulp: a correct kernel
        wrote w at every row of a tiny hidden workload, the rounded oracle w and w - ulp)."""
        import torch

        eps = torch.finfo(dtype).eps
        return self.ref_high - self.ref_low > 2 * eps * max(abs(self.ref_low), abs(self.ref_high))


def compare(out: Any, ref64: Any, tol: OutputTolerance, piece: int = PIECE) -> Check:
    """Values of one output against the oracle (structure already checked): NaN/Inf where
    the oracle is finite, special values that differ, the largest normalised error against
    the tolerance, then an all-zero or constant output where the oracle is neither."""
    import torch

    if out.numel() == 0:
        return Check(True, max_abs=0.0, max_rel=0.0, tol=tol.tol)
    if not out.is_floating_point():
        return _compare_exact(out, ref64, piece)
    bad, special, stats, degenerate = _First(), _First(), _Stats(), _Degenerate()
    for start, (o, r) in pieces(out, ref64, piece=piece):
        v = o.to(torch.float64)
        finite = torch.isfinite(r)
        bad.see(start, ~torch.isfinite(v) & finite)
        special.see(start, ~finite & ~((v == r) | (v.isnan() & r.isnan())))
        _oracle_stats(stats, r)
        degenerate.see(o, r)
    if bad.index is not None:
        return _at(Check(False, "nonfinite", "NaN or Inf where the reference is finite", tol=tol.tol),
                   bad.index, out, ref64)
    if special.index is not None:
        return _at(Check(False, "values", "the reference is NaN/Inf here and the output differs",
                         tol=tol.tol), special.index, out, ref64)
    scale = tol.scale if tol.scale is not None else _scale(stats)
    largest = _Largest()
    for start, (o, r) in pieces(out, ref64, piece=piece):
        largest.see(start, *_errors(o.to(torch.float64), r, scale))
    check = _at(Check(True, max_abs=largest.diff, max_rel=largest.err, tol=tol.tol), largest.index, out, ref64)
    if check.max_rel > tol.tol:
        check.ok, check.kind = False, "values"
        check.message = f"max normalised error {check.max_rel:.3g} exceeds the tolerance {tol.tol:.3g}"
        return check
    if stats.peak <= NEGLIGIBLE:  # the oracle is rounding noise: no answer is degenerate
        return check
    if degenerate.zero and degenerate.ref_nonzero:
        check.ok, check.kind, check.message = False, "zero", "the output is all zeros and the reference is not"
    elif out.numel() > 1 and degenerate.constant and degenerate.ref_varies and degenerate.beyond_rounding(out.dtype):
        check.ok, check.kind = False, "constant"
        check.message = "every element of the output has the same value and the reference's do not"
    return check


def _compare_exact(out: Any, ref64: Any, piece: int) -> Check:
    import torch

    wrong, first, diff = 0, _First(), 0.0
    for start, (o, r) in pieces(out, ref64, piece=piece):
        ref = r.to(o.dtype) if r.dtype != o.dtype else r
        mask = o != ref
        wrong += int(mask.sum())
        first.see(start, mask)
        diff = max(diff, float((o.to(torch.float64) - ref.to(torch.float64)).abs().max()))
    check = Check(True, max_abs=diff, max_rel=wrong / out.numel(), tol=0.0)
    if first.index is not None:
        check.ok, check.kind = False, "values"
        check.message = f"{wrong} element(s) differ from the reference (exact dtype)"
        check.where = unravel(first.index, tuple(out.shape))
        check.expected = float(ref64.reshape(-1)[first.index].to(out.dtype))
        check.got = float(out.reshape(-1)[first.index])
    return check


def _at(check: Check, flat: int, out: Any, ref64: Any) -> Check:
    """``check`` with the element at flat index ``flat``: where, expected, got."""
    check.where = unravel(flat, tuple(out.shape))
    check.expected = float(ref64.reshape(-1)[flat])
    check.got = float(out.reshape(-1)[flat])
    return check


def fingerprint(t: Any, piece: int = PIECE, device: Any = None) -> tuple[int, int]:
    """A cheap content fingerprint (input-sensitivity checks across trials), computed on
    ``device`` (default: the tensor's): two sums of the bits, modulo 2**64 as int64
    arithmetic wraps, the same for any piece size."""
    import torch

    total, weighted = 0, 0
    for start, (p,) in pieces(t.detach().contiguous(), piece=piece, device=device):
        bits = bits_of(p).to(torch.int64)
        weights = torch.arange(start, start + bits.numel(), device=bits.device, dtype=torch.int64) % 65521 + 1
        total = (total + int(bits.sum())) % WRAP
        weighted = (weighted + int((bits * weights).sum())) % WRAP
    return total, weighted



def bitwise_equal(a: Any, b: Any, piece: int = PIECE) -> tuple[bool, tuple[int, ...] | None]:
    """Whether two tensors hold identical bits (NaNs compare by bit pattern), and the first
    index where they differ; a piece at a time, on ``b``'s device."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False, None
    first = _First()
    for start, (x, y) in pieces(a.contiguous(), b.contiguous(), piece=piece):
        first.see(start, bits_of(x) != bits_of(y))
        if first.index is not None:
            return False, unravel(first.index, tuple(a.shape))
    return True, None
