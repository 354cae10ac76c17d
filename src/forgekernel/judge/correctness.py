"""Comparing outputs: calibrated tolerances and the value checks of section B of the threat model in docs/judge.md.

The error of an output element is normalised: ``e = |c - r| / (|r| + s)`` where ``r`` is
the float64 oracle, ``c`` the candidate's value and ``s = SCALE_FRACTION * rms(r)`` keeps
elements near zero from dominating. ``max_rel_err`` is the largest ``e``; a candidate
passes when it is at most the output's tolerance, which is equivalent to
``|c - r| <= tol * s + tol * |r|`` for every element.

Calibration: the reference run in its own dtype, compared with the oracle the same way,
gives the reference's own error ``ref_err`` (the maximum over the calibration workloads);
the tolerance is ``max(TOL_MULTIPLE * ref_err, DTYPE_FLOOR[dtype])`` (for float32 under
``[judge] tf32 = true`` the floor is ``TF32_FLOOR``), or the task's ``[judge] rtol``/``atol``
(then ``s = atol / rtol``), or a fixed ``[judge] tolerance`` for the output's dtype
(KernelBench's: ``s = 1``, the same test as ``torch.allclose(atol=t, rtol=t)``). Integer and bool outputs must match
exactly. Under the Triton CPU interpreter, whose float32 -> bfloat16 conversion truncates
instead of rounding to nearest (tests/test_docs_sources.py shows it), bfloat16 tolerances are multiplied by
``INTERPRET_ALLOWANCE``; the GPU judge never uses that factor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from forgekernel.records import JudgeSpec, Status

STATUS_OF = {"count": Status.WRONG_SHAPE, "shape": Status.WRONG_SHAPE, "type": Status.WRONG_DTYPE,
             "dtype": Status.WRONG_DTYPE, "device": Status.WRONG_DTYPE, "subclass": Status.REJECTED}
"""The verdict a failed structure check of an output gives, by the check's kind."""

TOL_MULTIPLE = 2.0
"""A candidate may have at most this multiple of the reference's own error."""
DTYPE_FLOOR = {"bfloat16": 2.0**-7, "float16": 2.0**-10, "float32": 1e-5, "float64": 1e-12}
"""Smallest tolerance per output dtype: one unit in the last place (bf16, fp16), and for
float32 a bound far below tf32's or bf16's error so precision downgrades still fail."""
SCALE_FRACTION = 0.1
"""``s`` in the normalised error, as a fraction of the oracle's root-mean-square."""
TF32_FLOOR = 2.0**-11 * 32
"""Smallest calibrated float32 tolerance when the task allows TF32 (``[judge] tf32``): TF32
keeps 10 mantissa bits (unit roundoff 2**-11); a dot product's error relative to the
output's scale reaches a few dozen units near zero-valued outputs."""
INTERPRET_ALLOWANCE = {"bfloat16": 3.0}
"""Extra factor on tolerances under the CPU interpreter only (its bf16 conversion truncates)."""


@dataclass(frozen=True)
class OutputTolerance:
    """The allowed normalised error of one output and where it came from."""

    tol: float
    scale: float | None = None
    """Absolute ``s`` (from ``atol / rtol``); None: SCALE_FRACTION * rms(oracle)."""
    ref_err: float | None = None
    source: str = "calibrated"


@dataclass
class Check:
    """The outcome of comparing one output (or one structural property)."""

    ok: bool
    kind: str = "ok"
    """ok, count, type, subclass, shape, dtype, device, nonfinite, values, zero, constant."""
    message: str = ""
    max_abs: float | None = None
    max_rel: float | None = None
    tol: float | None = None
    where: tuple[int, ...] | None = None
    expected: float | None = None
    got: float | None = None


def dtype_name(t: Any) -> str:
    return str(t.dtype).removeprefix("torch.")


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    out = []
    for dim in reversed(shape):
        flat, rem = divmod(flat, dim) if dim else (flat, 0)
        out.append(rem)
    return tuple(reversed(out))


def _scale(ref64: Any, finite: Any) -> float:
    import torch

    vals = ref64[finite]
    if vals.numel() == 0:
        return 1e-300
    rms = float(torch.sqrt(torch.mean(vals * vals)))
    return SCALE_FRACTION * rms if rms > 0 else 1e-300


def normalised(value: Any, ref64: Any, scale: float | None) -> tuple[Any, Any]:
    """(|c - r|, e) in float64, zero where the oracle is not finite."""
    import torch

    finite = torch.isfinite(ref64)
    s = scale if scale is not None else _scale(ref64, finite)
    diff = (value.to(torch.float64) - ref64).abs()
    diff = torch.where(finite, diff, torch.zeros_like(diff))
    return diff, diff / (ref64.abs().nan_to_num(0.0, 0.0, 0.0) + s)


def reference_error(ref_out: Any, ref64: Any) -> float:
    """The reference's own normalised error against the oracle (0 for exact dtypes)."""
    if not ref_out.is_floating_point() or ref_out.numel() == 0:
        return 0.0
    _, err = normalised(ref_out, ref64, None)
    return float(err.max())


def tolerance_for(dtype: str, ref_err: float, spec: JudgeSpec, *, interpret: bool) -> OutputTolerance:
    """The tolerance of one output from its calibrated reference error."""
    if dtype not in DTYPE_FLOOR:
        return OutputTolerance(tol=0.0, ref_err=ref_err, source="exact")
    if dtype in spec.tolerance:  # atol = rtol = t, as torch.allclose: |c - r| <= t + t * |r|
        tol, scale, source = spec.tolerance[dtype], 1.0, f"task [judge] tolerance.{dtype}"
    elif spec.rtol is not None:
        tol, source = spec.rtol, "task override"
        scale = spec.atol / spec.rtol if spec.atol is not None else None
    else:
        floor = TF32_FLOOR if dtype == "float32" and spec.tf32 else DTYPE_FLOOR[dtype]
        tol = max(TOL_MULTIPLE * ref_err, floor)
        source = "calibrated" + (" (tf32 floor)" if floor == TF32_FLOOR else "")
        scale = spec.atol / tol if spec.atol is not None else None
    if interpret and dtype in INTERPRET_ALLOWANCE:
        tol *= INTERPRET_ALLOWANCE[dtype]
        source += " + cpu-interpret allowance"
    return OutputTolerance(tol=tol, scale=scale, ref_err=ref_err, source=source)


def check_structure(outs: tuple[Any, ...], refs: tuple[Any, ...]) -> Check:
    """Count, exact type (no subclasses or proxies), shape, dtype and device of the outputs."""
    import torch

    if len(outs) != len(refs):
        return Check(False, "count", f"returned {len(outs)} output(s), the reference returns {len(refs)}")
    for i, (out, ref) in enumerate(zip(outs, refs, strict=True)):
        if isinstance(out, torch.Tensor) and type(out) is not torch.Tensor:
            return Check(False, "subclass", f"output {i} is a {type(out).__name__}, a torch.Tensor "
                         "subclass; outputs must be plain torch.Tensor (no lazy or proxy tensors)")
        if type(out) is not torch.Tensor:
            return Check(False, "type", f"output {i} is a {type(out).__name__}, expected torch.Tensor")
        if tuple(out.shape) != tuple(ref.shape):
            return Check(False, "shape", f"output {i} has shape {tuple(out.shape)}, expected "
                         f"{tuple(ref.shape)}")
        if out.dtype != ref.dtype:
            return Check(False, "dtype", f"output {i} has dtype {dtype_name(out)}, expected {dtype_name(ref)}")
        if out.device != ref.device:
            return Check(False, "device", f"output {i} is on {out.device}, expected {ref.device}")
    return Check(True)


def check_described(descs: list[dict[str, Any]], refs: tuple[Any, ...], device: str) -> Check:
    """:func:`check_structure` on the executor's descriptions of its outputs, before any
    byte is read: count, plain tensor (no subclass or proxy), shape, dtype and device."""
    if len(descs) != len(refs):
        return Check(False, "count", f"returned {len(descs)} output(s), the reference returns {len(refs)}")
    for i, (d, ref) in enumerate(zip(descs, refs, strict=True)):
        if not isinstance(d, dict) or "tensor" not in d:
            what = d.get("other", "plain number") if isinstance(d, dict) else "malformed output"
            return Check(False, "type", f"output {i} is a {what}, expected torch.Tensor")
        if not d.get("exact", False):
            return Check(False, "subclass", f"output {i} is a torch.Tensor subclass; outputs must be "
                         "plain torch.Tensor (no lazy or proxy tensors)")
        if tuple(d.get("shape", ())) != tuple(ref.shape):
            return Check(False, "shape", f"output {i} has shape {tuple(d.get('shape', ()))}, expected "
                         f"{tuple(ref.shape)}")
        if d.get("dtype") != dtype_name(ref):
            return Check(False, "dtype", f"output {i} has dtype {d.get('dtype')}, expected {dtype_name(ref)}")
        if d.get("device") != device:
            return Check(False, "device", f"output {i} is on {d.get('device')}, expected {device}")
    return Check(True)


def compare(out: Any, ref64: Any, tol: OutputTolerance) -> Check:
    """Values of one output against the oracle (structure already checked)."""
    import torch

    if out.numel() == 0:
        return Check(True, max_abs=0.0, max_rel=0.0, tol=tol.tol)
    if not out.is_floating_point():
        return _compare_exact(out, ref64)
    value = out.to(torch.float64)
    finite = torch.isfinite(ref64)
    bad = ~torch.isfinite(value) & finite
    if bool(bad.any()):
        return _at(Check(False, "nonfinite", "NaN or Inf where the reference is finite", tol=tol.tol),
                   bad, value, ref64)
    same_special = (value == ref64) | (value.isnan() & ref64.isnan())
    wrong_special = ~finite & ~same_special
    if bool(wrong_special.any()):
        return _at(Check(False, "values", "the reference is NaN/Inf here and the output differs",
                         tol=tol.tol), wrong_special, value, ref64)
    diff, err = normalised(value, ref64, tol.scale)
    flat = int(err.argmax())
    check = Check(True, max_abs=float(diff.max()), max_rel=float(err.reshape(-1)[flat]), tol=tol.tol,
                  where=_unravel(flat, tuple(out.shape)), expected=float(ref64.reshape(-1)[flat]),
                  got=float(value.reshape(-1)[flat]))
    if check.max_rel > tol.tol:
        check.ok, check.kind = False, "values"
        check.message = f"max normalised error {check.max_rel:.3g} exceeds the tolerance {tol.tol:.3g}"
        return check
    return _degenerate(check, value, ref64, finite, out.dtype)


NEGLIGIBLE = 1e-9
"""Reference values (float64) this small in magnitude are rounding noise of a result that is
zero (GroupNorm over groups of one channel gives about 1e-14): a zero or constant output is
then not a degenerate answer, and such a reference tells nothing about input sensitivity."""


def negligible(ref64: Any) -> bool:
    """Whether every finite value of the float64 reference is rounding noise around zero."""
    import torch

    vals = ref64[torch.isfinite(ref64)] if ref64.is_floating_point() else ref64
    return ref64.is_floating_point() and (vals.numel() == 0 or float(vals.abs().max()) <= NEGLIGIBLE)


def _degenerate(check: Check, value: Any, ref64: Any, finite: Any, dtype: Any) -> Check:
    """All-zero or constant outputs fail when the reference, rounded to the output dtype, is
    not (even within tolerance), unless the reference is itself only rounding noise."""
    if negligible(ref64):
        return check
    ref_vals = ref64[finite].to(dtype)
    if bool((value == 0).all()) and bool((ref_vals != 0).any()):
        check.ok, check.kind, check.message = False, "zero", "the output is all zeros and the reference is not"
    elif value.numel() > 1 and bool((value == value.reshape(-1)[0]).all()) and \
            bool((ref_vals != ref_vals.reshape(-1)[0]).any()):
        check.ok, check.kind = False, "constant"
        check.message = "every element of the output has the same value and the reference's do not"
    return check


def _compare_exact(out: Any, ref64: Any) -> Check:
    import torch

    ref = ref64.to(out.dtype) if ref64.dtype != out.dtype else ref64
    wrong = out != ref
    diff = (out.to(torch.float64) - ref.to(torch.float64)).abs()
    check = Check(True, max_abs=float(diff.max()), max_rel=float(wrong.to(torch.float64).mean()), tol=0.0)
    if bool(wrong.any()):
        check.ok, check.kind = False, "values"
        check.message = f"{int(wrong.sum())} element(s) differ from the reference (exact dtype)"
        return _at(check, wrong, out.to(torch.float64), ref.to(torch.float64))
    return check


def _at(check: Check, mask: Any, value: Any, ref64: Any) -> Check:
    flat = int(mask.reshape(-1).nonzero()[0, 0])
    check.where = _unravel(flat, tuple(value.shape))
    check.expected = float(ref64.reshape(-1)[flat])
    check.got = float(value.reshape(-1)[flat])
    return check


def _bits(t: Any) -> Any:
    """The tensor's bits as integers (NaNs compare by bit pattern)."""
    import torch

    if t.is_floating_point():
        return t.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])
    return t


def bitwise_equal(a: Any, b: Any) -> tuple[bool, tuple[int, ...] | None]:
    """Whether two tensors hold identical bits, and the first index where they differ."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False, None
    if a.numel() == 0:
        return True, None
    diff = _bits(a.contiguous().reshape(-1)) != _bits(b.contiguous().reshape(-1))
    if not bool(diff.any()):
        return True, None
    return False, _unravel(int(diff.nonzero()[0, 0]), tuple(a.shape))


def fingerprint(t: Any) -> tuple[int, int]:
    """A cheap on-device content fingerprint (input-sensitivity checks across trials)."""
    import torch

    bits = _bits(t.detach().contiguous().reshape(-1)).to(torch.int64)
    weights = torch.arange(bits.numel(), device=bits.device, dtype=torch.int64) % 65521 + 1
    return int(bits.sum()), int((bits * weights).sum())


HIDDEN_WHAT = {"count": "wrong number of outputs", "shape": "wrong output shape",
               "dtype": "wrong output dtype", "type": "output is not a torch.Tensor",
               "device": "output on the wrong device", "subclass": "output is a tensor subclass",
               "nonfinite": "NaN or Inf where the reference is finite",
               "values": "values outside the tolerance", "zero": "all-zero output",
               "constant": "constant output", "repeat": "results differ between two runs",
               "mutation": "modified an input in place", "sensitivity": "output ignores its inputs"}
"""What a failed check says on a hidden workload (its values stay unseen)."""


def exactly_equal(x: Any, y: Any) -> bool:
    """Same shape and the same bits (tensors), or equal (anything else)."""
    import torch

    if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
        return x.shape == y.shape and bool(torch.equal(x, y))
    return x == y
