"""Audit rules and roofline flag (docs/judge.md threat model A7, C16, C17).

:func:`observed_violation` applies the audit's rules, in the verifier, to what the executor
observed a correctness call do (:mod:`forgekernel.judge.observe`): at least one of the
candidate's own kernels launched; no call the task forbids was made; every output was
written by its own launches and they read the inputs; the eager PyTorch work around the
kernels does not recompute the operator (its compute ops, less the task's ``library_ops``,
may not cover half or more of the reference's). :func:`_check_cuda` reads a Kineto launch
trace (side streams, forbidden library kernels, the own kernels' share of device time).

The roofline flag: a time below the floor of :mod:`forgekernel.profile.roofline` (minimal
bytes over size-matched measured bandwidth, flops over measured peak), by more than
``ROOFLINE_SLACK``, is REJECTED pending review.
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Callable
from typing import Any

from forgekernel.judge.failure import Failure
from forgekernel.records import Status

OWN_SHARE_MIN = 0.5
"""Least share of device time the candidate's own kernels must carry."""
ROOFLINE_SLACK = 1.25
"""A median below floor / ROOFLINE_SLACK (over 125 % of speed of light) is rejected. Honest
kernels reach about 100 % of the copy-bandwidth floor on the H200 (outputs can stay in L2),
see benchmarks/results/judge_gpu.json; cheats that skip work land far beyond it."""

_GEMM = r"gemm|cublas|cutlass|nvjet|xmma|matmul|\bmm\b|addmm|bmm"
LIBRARY_KERNELS = {
    "rms_norm": r"rms_?norm", "RMSNorm": r"rms_?norm", "layer_norm": r"layer_?norm",
    "native_layer_norm": r"layer_?norm", "LayerNorm": r"layer_?norm", "group_norm": r"group_?norm",
    "softmax": r"softmax", "_softmax": r"softmax", "log_softmax": r"softmax",
    "cross_entropy": r"nll_loss|softmax|cross_entropy", "nll_loss": r"nll_loss",
    "matmul": _GEMM, "mm": _GEMM, "bmm": _GEMM, "addmm": _GEMM, "linear": _GEMM, "Linear": _GEMM,
    "einsum": _GEMM, "silu": r"silu", "gelu": r"gelu",
    "scaled_dot_product_attention": r"flash|fmha|attention", "compile": r"^triton_(poi|per|red|tem|for)_",
}
"""Last component of a forbidden call -> regex over kernel (or aten op) names it launches."""

TRIVIAL_CALLS = frozenset({
    "contiguous", "shape", "size", "stride", "dtype", "device", "data_ptr", "untyped_storage",
    "storage_offset", "numel", "dim", "ndim", "element_size", "is_contiguous", "empty", "empty_like",
    "new_empty", "empty_strided", "view", "view_as", "reshape", "flatten", "unsqueeze", "squeeze", "t",
    "transpose", "permute", "expand", "expand_as", "as_strided", "is_cuda", "is_floating_point",
    "requires_grad", "grad_fn", "_set_grad_enabled", "to", "float", "half", "bfloat16", "double",
    "type", "copy", "clone", "zero", "fill", "zeros", "ones", "full", "zeros_like", "ones_like",
    "full_like", "new_zeros", "new_ones", "new_full", "arange", "cat", "stack", "getitem", "setitem",
    "cuda", "cpu", "item", "tolist", "len", "format", "repr", "numpy", "index", "int", "bool",
    "is_nonzero", "detach", "split", "chunk", "unbind", "narrow", "select", "slice", "T", "mT",
    "names", "layout", "is_sparse", "storage", "nbytes", "itemsize", "get_device", "is_leaf",
    "requires_grad_", "data", "shape_env", "sym_size", "new_tensor", "tensor", "as_tensor",
    "_RecordFunction", "_record_function_enter_new", "_record_function_exit",
    "_to_copy", "_unsafe_view", "lift_fresh", "lift_fresh_copy", "alias", "_reshape_alias",
    "split_with_sizes", "resize", "set",
    "_local_scalar_dense", "scalar_tensor", "_unsafe_index", "unfold",
})
"""Metadata, allocation, casts and data movement: never count as recomputing the operator."""


def base_name(name: str) -> str:
    """``void ns::kern<T>(args)`` -> ``kern``."""
    text = name.replace("(anonymous namespace)", "").strip().removeprefix("void ").strip()
    text = re.split(r"[(<\[]", text, maxsplit=1)[0]
    return text.rsplit("::", 1)[-1].strip()


CUTE_PREFIX = "kernel_cutlass_"
"""CuTe DSL names a ``@cute.kernel`` function ``fn`` ``kernel_cutlass_<fn>_<argument signature>_<n>``."""


def is_own(name: str, own: list[str]) -> bool:
    if base_name(name) in own:
        return True
    return name.startswith(CUTE_PREFIX) and any(name.startswith(f"{CUTE_PREFIX}{o}_") for o in own)


def forbidden_patterns(forbid: tuple[str, ...]) -> list[tuple[str, re.Pattern[str]]]:
    out = []
    for entry in forbid:
        last = entry.rsplit(".", 1)[-1]
        pattern = LIBRARY_KERNELS.get(last, re.escape(last.lstrip("_")))
        out.append((entry, re.compile(pattern, re.IGNORECASE)))
    return out


def _summary(trace: Any, own: list[str]) -> dict[str, Any]:
    kernels = [{"name": k.name, "count": k.count, "time_ms": k.time_ms, "share": k.share,
                "own": is_own(k.name, own)} for k in trace.kernels[:10]]
    return {"launches": trace.launches, "kernels": kernels, "launch_source": trace.source}


def call_name(func: Any) -> str:
    """Dotted torch name of a function seen by a TorchFunctionMode (an ATen overload called
    directly, ``torch.ops.aten.add.Tensor``, as ``torch.ops.aten.add``)."""
    from torch.overrides import resolve_name

    if (ns := getattr(func, "namespace", None)) and isinstance(opname := getattr(func, "_opname", None), str):
        return f"torch.ops.{ns}.{opname}"
    name = resolve_name(func) or getattr(func, "__name__", repr(func))
    return name.removesuffix(".__get__")


def op_key(name: str) -> str:
    """``torch.Tensor.__rmul__`` / ``torch.mul`` / ``Tensor.mul_`` -> ``mul``."""
    last = name.rsplit(".", 1)[-1]
    if last.startswith("__") and last.endswith("__"):
        last = last[2:-2]
        if last[:1] in ("r", "i") and last[1:] in _ARITH:
            last = last[1:]
    return last.rstrip("_") or last


_ARITH = {"add", "sub", "mul", "truediv", "floordiv", "pow", "matmul", "mod", "and", "or", "xor",
          "lshift", "rshift"}


_HARNESS_PATHS = tuple(os.sep.join(("", *p, "")) for p in (
    ("triton",), ("torch", "profiler"), ("torch", "autograd"), ("forgekernel", "profile")))
"""Callers whose torch calls are the harness's own (interpreter, profiler), not the candidate's."""


class EagerCalls:
    """Records the torch functions called from Python code (not from inside Triton's own
    interpreter or the profiler) while active: the eager PyTorch work around a candidate's
    kernels. For data-movement calls it also records which storages flowed into which."""

    def __init__(self) -> None:
        from torch.overrides import TorchFunctionMode

        calls: list[str] = []
        flows: list[tuple[set[int], set[int]]] = []
        keep: list[Any] = []  # tensors stay alive, so no address is reused during the call
        self.calls, self.flows, self.keep = calls, flows, keep

        class _Mode(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                result = func(*args, **kwargs)
                caller = sys._getframe(1).f_code.co_filename
                if not any(part in caller for part in _HARNESS_PATHS):
                    name = call_name(func)
                    calls.append(name)
                    if op_key(name) in TRIVIAL_CALLS:
                        flows.append((_storages((args, kwargs)), _storages(result)))
                        keep.append((args, kwargs, result))
                return result

        self.mode = _Mode()

    def __enter__(self) -> EagerCalls:
        self.mode.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.mode.__exit__(*exc)

    def compute(self) -> set[str]:
        """Op keys of the calls that do arithmetic (not metadata or data movement)."""
        return {op_key(n) for n in self.calls} - TRIVIAL_CALLS

    def reach(self, storages: set[int]) -> set[int]:
        """``storages`` plus every storage data-movement calls derived from them."""
        reached = set(storages)
        grew = True
        while grew:
            grew = False
            for inputs, outputs in self.flows:
                if inputs & reached and not outputs <= reached:
                    reached |= outputs
                    grew = True
        return reached


def _storages(value: Any) -> set[int]:
    """Storage addresses of the tensors in a (nested) value."""
    import torch

    if isinstance(value, torch.Tensor):
        return {value.untyped_storage().data_ptr()} if value.numel() else set()
    if isinstance(value, (list, tuple)):
        return set().union(*(_storages(v) for v in value)) if value else set()
    if isinstance(value, dict):
        return _storages(list(value.values()))
    return set()


def eager_compute(call: Callable[[], Any]) -> set[str]:
    """The compute op keys of an eager callable (the reference, for the fallback check)."""
    with EagerCalls() as rec:
        call()
    return rec.compute()


def _forbidden_calls(calls: list[str], forbid: tuple[str, ...]) -> str | None:
    methods = {f.rsplit(".", 1)[1] for f in forbid if f.startswith("torch.Tensor.")}
    for name in calls:
        for entry in forbid:
            if name == entry or name.startswith(entry + "."):
                return entry
        if name.startswith("torch.Tensor.") and name.rsplit(".", 1)[1] in methods:
            return name
    return None


def _check_cuda(summary: dict[str, Any], mine: list[Any], others: list[Any], forbid: tuple[str, ...]) -> None:
    if summary.get("side_streams"):
        _reject("device work ran on a stream other than the call's ("
                + ", ".join(n[:60] for n in summary["side_streams"][:3]) + "); the judge times "
                "the current stream: launch everything on torch.cuda.current_stream()",
                summary, "side_stream")
    for entry, pattern in forbidden_patterns(forbid):
        hits = [k.name for k in others if pattern.search(k.name)]
        if hits:
            _reject(f"a kernel of {entry}, which the task forbids, ran: {hits[0][:80]}", summary, "forbidden")
    total = sum(k.time_ms or 0.0 for k in (*mine, *others))
    share = sum(k.time_ms or 0.0 for k in mine) / total if total > 0 else 1.0
    summary["own_share"] = share
    if share < OWN_SHARE_MIN:
        top = max(others, key=lambda k: k.time_ms or 0.0)
        _reject(f"your kernels carried only {share:.0%} of the device time; most went to "
                f"{top.name[:80]}", summary, "share")


def _reject(reason: str, summary: dict[str, Any], kind: str) -> None:
    raise Failure(Status.REJECTED, reason, {"kind": "audit", "audit": kind, "profile": summary})


def known_ceilings(device_name: str) -> bool:
    """Whether forge has a table of measured ceilings for this device (the H200's)."""
    return "H200" in device_name


def roofline_floor(task: Any, workload: Any, outputs: list[tuple[tuple[int, ...], str]],
                   device_name: str, measured: Any = None) -> Any:
    """The roofline Floor of a workload on a device with known ceilings, else with the copy
    bandwidth the verifier ``measured`` on it (``roofline.measure_copy_ceilings``: a memory
    floor, no compute peak), else None. Without a floor on other GPUs, a candidate that left
    its work on a side stream passed an H100 at 20x where the honest kernel got 8.5x."""
    from forgekernel.profile import roofline

    ceilings = roofline.H200_SHARED if known_ceilings(device_name) else measured
    if task.format == "kernelbench" or ceilings is None:
        return None
    nbytes = roofline.minimal_bytes(task, workload, outputs)
    flops = roofline.formula_flops(task, workload)
    return roofline.floor(nbytes, flops, ceilings, roofline.compute_dtype(task))


def all_empty(outputs: list[Any]) -> bool:
    """Whether there are outputs and none of them has an element (specs with a ``shape``)."""
    return bool(outputs) and all(0 in tuple(o.shape) for o in outputs)


LIBRARY_CLASS = frozenset({"convolution", "mm", "bmm", "addmm", "baddbmm", "addbmm", "addmv", "mv",
                           "dot", "_scaled_mm"})
"""ATen ops (as the dispatcher sees them: ``F.conv2d``, ``torch.matmul`` and ``F.linear``
arrive as these) whose work is a vendor library's (cuDNN, cuBLAS): a candidate may call one
only where the task's ``[policy] library_ops`` lists it."""


def library_left(library: tuple[str, ...], ref_ops: set[str]) -> set[str]:
    """The task's library ops a candidate may leave to PyTorch: none when the reference
    computes nothing else (then the library op is the operator, and the kernel must be own)."""
    allowed = set(library)
    return allowed if ref_ops - allowed else set()


def observed_violation(obs: dict[str, Any], *, own: list[str] | None, forbid: tuple[str, ...],
                       ref_ops: set[str], interpret: bool, inputs_matter: bool = True,
                       empty: bool = False, library: tuple[str, ...] = ()) -> tuple[str, str] | None:
    """(kind, reason) of the first audit rule what the executor observed breaks, else None
    (``own`` None: the task allows library kernels, so any Triton launch is the candidate's;
    ``inputs_matter`` False: the reference's answer at this workload does not depend on the
    input values, so reading none of them is no fault; ``empty``: every output has no element,
    so there is nothing a kernel must compute and none need launch; ``library``: the ATen ops
    the task leaves to the library, not counted as the operator recomputed, unless the
    reference computes nothing else)."""
    bad = _forbidden_calls([str(c) for c in obs.get("calls", [])], forbid)
    if bad:
        return "forbidden", f"the call used {bad}, which the task forbids"
    left, eager = library_left(library, ref_ops), {str(o) for o in obs.get("eager", [])}
    if vendor := sorted((eager & LIBRARY_CLASS) - left):
        return "library", (f"the call left aten.{vendor[0]} to PyTorch's library (cuDNN, cuBLAS), "
                           "which the task does not allow (its [policy] library_ops)")
    launches = [str(n) for n in obs.get("launches", [])]
    if not empty and not any(own is None or is_own(n, own) for n in launches):
        shown = ", ".join(sorted(set(launches))[:5]) or "nothing"
        return "no_launch", (f"none of your kernels ran during the call (launched: {shown}); a "
                             "defined kernel must be launched and do the work")
    written = obs.get("outputs_written") or []
    if interpret and obs.get("outputs_stored") is not None:
        written = [w and s is not False for w, s in zip(written, obs["outputs_stored"], strict=False)]
    for i, ok in enumerate(written):
        if not ok:
            return "output_not_written", (f"output {i} was not written by any of your Triton kernels "
                                          "(it came from PyTorch code around them)")
    read = obs.get("inputs_loaded") if interpret else obs.get("inputs_passed")
    tensors = [r for r in (read or []) if r is not None]
    if inputs_matter and tensors and not any(tensors):
        return "inputs_not_read", ("none of your kernels read the inputs: a kernel that only copies "
                                   "an answer computed elsewhere is not the kernel")
    overlap = sorted((eager - left) & ref_ops)
    if ref_ops and len(overlap) >= max(1, math.ceil(len(ref_ops) / 2)):
        return "fallback", ("the operator is recomputed with PyTorch ops around your kernel ("
                            + ", ".join(overlap) + ")")
    return None
