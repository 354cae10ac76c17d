"""Feedback text for the coding agent: what failed, where, by how much, what to look at.

Built from the structured details the worker sends. Hidden workloads are named only as
"hidden workload i of n": their shapes, seeds, values and the candidate's messages on them
are never part of the text.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from forgekernel.records import Status, WorkloadResult

HIDDEN_HINT = ("It failed on a hidden workload: the judge adds shapes you do not see (a size of 1, "
               "N+1, odd and non-power-of-two sizes). Make the kernel correct for any shape: mask the "
               "tail of every block, do not assume powers of two or multiples of the block size, and "
               "handle a single row or column.")

HINTS = {
    "syntax": "Fix the syntax error; nothing was run.",
    "policy": ("Write the operator as your own kernel. Do not call the library op being replaced, "
               "a compiler, introspection (gc, inspect, frames, dunder attributes), threads, "
               "processes, dynamic code, or assign into library modules."),
    "no_kernel": "Define a @triton.jit kernel (or a CUDA __global__ function) and launch it from run().",
    "entry": "kernel.py must define run(*inputs) with the reference's signature (ModelNew for "
             "KernelBench tasks).",
    "timeout": ("Look for an infinite loop (loop bounds in the kernel or in run()), a very slow "
                "interpreted loop, or a wait that never ends."),
    "signal": ("A native crash: usually an out-of-bounds load or store (check masks and offsets for "
               "the last block of each row), or native code misbehaving."),
    "exit": "The process ended before the judge finished: remove sys.exit()/os._exit() calls.",
    "flood": "Your code printed more than the output cap: remove prints from run() and the kernels.",
    "channel": "Something wrote to the judge's private result channel; do not touch file descriptors.",
    "count": "Return the same outputs as the reference: same count, shapes, dtypes and device.",
    "shape": "Return the same outputs as the reference: same count, shapes, dtypes and device.",
    "dtype": "Cast the result to the reference's output dtype before storing it.",
    "type": "Return plain torch.Tensor outputs (not numpy arrays, lists or scalars).",
    "device": "Allocate outputs on the inputs' device.",
    "subclass": "Return plain torch.Tensor outputs: no tensor subclasses, lazy or proxy objects.",
    "nonfinite": ("Elements the kernel never writes show up as NaN (the judge fills fresh memory with "
                  "NaN): check that the grid covers every row and column and the store masks. Also "
                  "look for division by zero and overflow in low precision."),
    "values": ("Compare your math with the reference step by step: accumulate in fp32, the same eps, "
               "the cast back to the output dtype at the same point, masked tails loaded with a "
               "neutral value (0 for sums, -inf for max)."),
    "zero": "The output is all zeros: is the result stored at all (pointer, offsets, mask)?",
    "constant": "Every element is identical: check the offsets of loads and stores.",
    "repeat": ("Two runs on the same input values differed: read only initialised memory (zero your "
               "accumulators, mask loads) and do not keep state between calls."),
    "mutation": "Inputs are read-only: write results into new output tensors.",
    "sensitivity": "The output did not change when the inputs did: compute it from the inputs on every call.",
    "tamper": "Do not replace functions of torch, time, builtins or the judge.",
    "thread": "Do all the work inside the call: no background threads.",
    "stream": "Do not change the current CUDA stream (or restore it before returning).",
    "l2": "Do not change persisting-L2 limits or access-policy windows.",
    "audit": ("Your own kernel must do the work: launch it on every call, let it write the outputs, and "
              "do not fall back to PyTorch or call the forbidden library op."),
    "timed_output": ("The answer was right in the correctness trials but wrong during timing: no call "
                     "counters, caches keyed on pointers or shapes, or state that drifts between calls."),
    "side_stream": "Launch on the current stream, or make it wait for your side stream before returning.",
    "roofline": "A time this far beyond the hardware floor is not physical; a person will review it.",
    "exception": "Read the traceback above; the line in your code is listed first.",
    "compile": ("Fix the first compiler error (the line named is in your file); nothing was run. "
                "CUDA sources are compiled as nvcc -arch=sm_90a -std=c++17, with torch's headers when "
                "they include them; CuTe DSL code by its own cute.compile for sm_90a."),
    "needs_gpu": ("This judge runs candidates on the Triton CPU interpreter: write the kernel in "
                  "Triton here, or judge this candidate on a GPU (forge judge --delivery local on a "
                  "GPU machine, or a remote delivery)."),
    "judge": "This looks like a judge problem; report it if your code does nothing unusual.",
}


def compose(status: Status, reason: str, details: dict[str, Any],
            workloads: Iterable[WorkloadResult] = ()) -> str:
    """The feedback text of a verdict ('' when PASSED)."""
    if status is Status.PASSED:
        return ""
    kind = details.get("kind", "")
    lines = [f"{status.value}: {reason}"]
    if details.get("hidden"):
        lines.append(HIDDEN_HINT)
    else:
        lines.extend(_specifics(kind, details))
    if kind in HINTS:
        lines.append("What to look at: " + HINTS[kind])
    summary = _workload_summary(workloads)
    if summary:
        lines.append(summary)
    return "\n".join(lines)


def _num(x: Any) -> str:
    return "?" if x is None else f"{x:.4g}"


def _specifics(kind: str, d: dict[str, Any]) -> list[str]:
    out = []
    if kind in ("values", "nonfinite", "zero", "constant", "repeat") and d.get("where") is not None:
        out.append(f"On {d.get('workload')}, output {d.get('output', 0)} at index {tuple(d['where'])}: "
                   f"expected {_num(d.get('expected'))}, got {_num(d.get('got'))}.")
        if d.get("max_rel") is not None:
            out.append(f"Max normalised error {_num(d.get('max_rel'))} (max abs {_num(d.get('max_abs'))}) "
                       f"against a tolerance of {_num(d.get('tol'))}; normalised error = |got - expected| "
                       "/ (|expected| + 0.1 * rms(expected)).")
    if kind == "policy":
        out.extend(f"  {v}" for v in d.get("violations", []))
    if kind == "compile":
        out.extend(f"  {e}" for e in d.get("errors", [])[1:])
    exc = d.get("exception")
    if exc:
        out.append(f"{exc['type']}: {exc['message']}")
        if exc.get("trace"):
            out.append("Traceback (your code first):\n" + exc["trace"])
        out.extend(_exception_hint(exc))
    if d.get("tail"):
        out.append("Last output of the worker:\n" + d["tail"][-800:])
    return out


def _exception_hint(exc: dict[str, Any]) -> list[str]:
    text = f"{exc['type']} {exc['message']}"
    if "out of memory" in text or "OutOfMemory" in text:
        return ["Allocate less: outputs and small scratch buffers only."]
    if "illegal memory access" in text or "out of bounds" in text.lower():
        return ["Out-of-bounds access: check pointer offsets and masks for the last block."]
    if "CompilationError" in text:
        return ["The kernel does not compile: check tl.* calls, constexpr arguments and dtypes."]
    return []


def _workload_summary(workloads: Iterable[WorkloadResult]) -> str:
    parts, hidden_ok, hidden_bad = [], 0, 0
    for w in workloads:
        if w.hidden:
            hidden_ok += w.passed is True
            hidden_bad += w.passed is False
            continue
        if w.passed is None:
            continue
        label = " x ".join(f"{k}={v}" for k, v in w.axes.items()) or "workload"
        state = "passed" if w.passed else "FAILED"
        err = f" (max err {_num(w.max_rel_err)} / tol {_num(w.tolerance)})" if w.max_rel_err is not None else ""
        parts.append(f"{label} {state}{err}")
    if hidden_ok or hidden_bad:
        parts.append(f"hidden: {hidden_ok} passed, {hidden_bad} failed")
    return ("Workloads: " + "; ".join(parts)) if parts else ""
