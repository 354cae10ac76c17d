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


def unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    out = []
    for dim in reversed(shape):
        flat, rem = divmod(flat, dim) if dim else (flat, 0)
        out.append(rem)
    return tuple(reversed(out))


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


def check_structure(outs: tuple[Any, ...], refs: tuple[Any, ...], device: bool = True) -> Check:
    """Count, exact type (no subclasses or proxies), shape, dtype and (``device``) device of
    the outputs; copies the verifier kept in host memory are checked without the last."""
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
        if device and out.device != ref.device:
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


def bits_of(t: Any) -> Any:
    """The tensor's bits as integers (NaNs compare by bit pattern)."""
    import torch

    if t.is_floating_point():
        return t.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])
    return t


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
