"""What a candidate's call did, observed inside the executor (the process that runs it).

For every correctness call the executor records, while the call runs:

* the torch functions the candidate's Python code called (a TorchFunctionMode; calls made
  by Triton's interpreter while it executes a kernel are told apart by a flag that the
  launch hook sets, not by file names a caller could relabel);
* its Triton launches (name, arguments) and, under the CPU interpreter, the memory each
  launch loaded from and stored to (address ranges from the interpreter's load and store
  operations);
* on a GPU, for one call per workload, the kernels the device ran (Kineto), their time and
  the streams they ran on.

The executor returns these as data; the verifier applies the rules
(:mod:`forgekernel.judge.audit`). An executor is untrusted: a candidate that tampers with
this module during its call can misreport what ran (not its outputs, nor its time).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from forgekernel.judge.audit import TRIVIAL_CALLS, call_name, is_own, op_key


@dataclass
class Seen:
    """One call's observations (live objects until :meth:`summary`)."""

    calls: list[str] = field(default_factory=list)
    aten: list[str] = field(default_factory=list)
    flows: list[tuple[set[int], set[int]]] = field(default_factory=list)
    launches: list[dict[str, Any]] = field(default_factory=list)
    keep: list[Any] = field(default_factory=list)
    inside: list[bool] = field(default_factory=lambda: [False])
    library: frozenset[str] = frozenset()
    """ATen ops the task leaves to the library: their outputs count as derived from their
    inputs (a convolution's output that the candidate's own tail kernel finishes)."""


def storages(value: Any) -> set[int]:
    """Storage addresses of the tensors in a (nested) value."""
    import torch

    if isinstance(value, torch.Tensor):
        return {value.untyped_storage().data_ptr()} if value.numel() else set()
    if isinstance(value, (list, tuple)):
        return set().union(*(storages(v) for v in value)) if value else set()
    if isinstance(value, dict):
        return storages(list(value.values()))
    return set()


def _spans(value: Any) -> list[tuple[int, int]]:
    """(start, end) addresses of the storages of the tensors in a (nested) value."""
    import torch

    if isinstance(value, torch.Tensor):
        span = _span(value)
        return [span] if span else []
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _spans(v)]
    if isinstance(value, dict):
        return _spans(list(value.values()))
    return []


def _span(t: Any) -> tuple[int, int] | None:
    if t.numel() == 0:
        return None
    base = t.untyped_storage().data_ptr()
    return base, base + t.untyped_storage().nbytes()


@contextlib.contextmanager
def _eager(seen: Seen) -> Iterator[None]:
    """Torch functions by name (policy names) and ATen ops by dispatch (no alias escapes it:
    ``torch.ops.aten.*`` or any other name reaches the dispatcher as the same op)."""
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    class _Ops(TorchDispatchMode):
        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            return False  # not wrapped in torch._disable_dynamo: no torch._dynamo import (6 s on the H200)

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            result = func(*args, **(kwargs or {}))
            if not seen.inside[0]:
                name = getattr(func, "__name__", str(func)).split(".")[0]
                seen.aten.append(name)
                if name in seen.library:
                    seen.flows.append((storages((args, kwargs)), storages(result)))
                    seen.keep.append((args, kwargs, result))
            return result

    class _Mode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            result = func(*args, **kwargs)
            if not seen.inside[0]:
                name = call_name(func)
                seen.calls.append(name)
                if op_key(name) in TRIVIAL_CALLS or op_key(name) in seen.library:
                    seen.flows.append((storages((args, kwargs)), storages(result)))
                    seen.keep.append((args, kwargs, result))
            return result

    with _Mode(), _Ops():
        yield


@contextlib.contextmanager
def _interpreter(seen: Seen) -> Iterator[None]:
    """Launches and their loads/stores under the CPU interpreter."""
    from triton.runtime import interpreter as ti

    original = ti.InterpretedFunction.run
    builder = ti.interpreter_builder
    ranges: list[tuple[str, int, int]] = []
    saved = {n: getattr(builder, n) for n in ("create_load", "create_masked_load",
                                              "create_store", "create_masked_store")
             if hasattr(builder, n)}

    def track(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        kind = "load" if "load" in name else "store"

        def wrapped(ptrs: Any, *args: Any, **kwargs: Any) -> Any:
            data = getattr(ptrs, "data", None)
            if data is not None and getattr(data, "size", 0):
                ranges.append((kind, int(data.min()), int(data.max())))
            return fn(ptrs, *args, **kwargs)
        return wrapped

    def run(self: Any, *args: Any, grid: Any, warmup: Any, **kwargs: Any) -> Any:
        if warmup:
            return original(self, *args, grid=grid, warmup=warmup, **kwargs)
        ranges.clear()
        seen.inside[0] = True
        try:
            out = original(self, *args, grid=grid, warmup=warmup, **kwargs)
        finally:
            seen.inside[0] = False
        seen.launches.append({"name": self.fn.__name__, "args": storages((args, kwargs)),
                              "arg_spans": _spans((args, kwargs)),
                              "loads": [(a, b) for k, a, b in ranges if k == "load"],
                              "stores": [(a, b) for k, a, b in ranges if k == "store"]})
        seen.keep.append((args, kwargs))
        return out

    ti.InterpretedFunction.run = run
    for name, fn in saved.items():
        setattr(builder, name, track(name, fn))
    try:
        yield
    finally:
        ti.InterpretedFunction.run = original
        for name, fn in saved.items():
            setattr(builder, name, fn)


@contextlib.contextmanager
def _compiled(seen: Seen) -> Iterator[None]:
    """Compiled Triton launches (name and arguments) on a GPU."""
    from triton.runtime.jit import JITFunction

    original = JITFunction.run

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("warmup"):
            return original(self, *args, **kwargs)
        seen.inside[0] = True
        try:
            out = original(self, *args, **kwargs)
        finally:
            seen.inside[0] = False
        seen.launches.append({"name": self.fn.__name__, "args": storages((args, kwargs))})
        seen.keep.append((args, kwargs))
        return out

    JITFunction.run = run
    try:
        yield
    finally:
        JITFunction.run = original


@contextlib.contextmanager
def _device_kernels(seen: Seen) -> Iterator[None]:
    """Every CUDA kernel that ran in the block, by the profiler's device activity (CUPTI):
    how a CUDA C++ or CuTe DSL candidate's launches are seen, by what ran, whatever
    launched them. Such a launch's arguments are not visible from Python: it is recorded
    with ``args`` None, read as the call's own inputs and outputs (the other rules still
    apply: eager compute, host synchronisation in timed calls, the answers themselves)."""
    from forgekernel.profile.launches import _profiler

    prof = _profiler(cuda=True)
    with prof:
        yield
    from torch.autograd import DeviceType

    for ev in prof.function_events:
        if ev.device_type == DeviceType.CUDA and not _is_copy(ev.name):
            seen.launches.append({"name": ev.name, "args": None})


def _is_copy(name: str) -> bool:
    return name.lower().startswith(("memcpy", "memset"))


@contextlib.contextmanager
def watching(interpret: bool, native: bool = False,
             library: frozenset[str] = frozenset()) -> Iterator[Seen]:
    """Observe the block: eager torch calls and Triton launches (see the module docstring);
    ``native``: also every CUDA kernel that ran (a CUDA C++ or CuTe DSL candidate on a GPU);
    ``library``: the ATen ops the task leaves to the library (:attr:`Seen.library`)."""
    seen = Seen(library=library)
    hook = _interpreter if interpret else _compiled
    device = _device_kernels(seen) if native else contextlib.nullcontext()
    with device, hook(seen), _eager(seen):
        yield seen


def summary(seen: Seen, inputs: list[Any], outputs: tuple[Any, ...],
            own: tuple[str, ...] | None = ()) -> dict[str, Any]:
    """JSON-able facts: launches, eager compute calls, which inputs the candidate's own
    launches (``own``: its kernels' names; None: every Triton launch) read and which outputs
    they wrote (directly, or through data movement: a cast, a copy, a view)."""
    import torch

    mine = [launch for launch in seen.launches if own is None or is_own(launch["name"], list(own))]
    whole = storages(list(inputs)) | storages(list(outputs))  # a native launch: the call's tensors
    touched = set().union(*(whole if launch["args"] is None else launch["args"] for launch in mine))
    reach = _reach(seen.flows, touched)
    by_loads = [launch for launch in mine if "loads" in launch]
    result: dict[str, Any] = {
        "launches": [launch["name"] for launch in seen.launches],
        "eager": sorted(compute_ops(seen)),
        "calls": sorted(set(seen.calls)),
        "outputs_written": [isinstance(o, torch.Tensor) and (o.numel() == 0 or
                            o.untyped_storage().data_ptr() in reach) for o in outputs],
        "inputs_passed": [isinstance(a, torch.Tensor) and bool(_reach(seen.flows, storages(a)) & touched)
                          for a in inputs],
    }
    if by_loads:
        result["inputs_loaded"] = [_hit(a, by_loads, "loads", seen.flows) for a in inputs]
        result["outputs_stored"] = [_hit(o, by_loads, "stores", seen.flows, back=True) for o in outputs]
    return result


def compute_ops(seen: Seen) -> set[str]:
    """Op keys of the arithmetic the Python side did: torch functions and ATen ops alike."""
    keys = {op_key(n) for n in seen.calls} | {op_key(n) for n in seen.aten}
    return keys - TRIVIAL_CALLS


def eager_ops(call: Callable[[], Any]) -> set[str]:
    """The compute op keys of an eager callable (the reference, in the verifier)."""
    seen = Seen()
    with _eager(seen):
        call()
    return compute_ops(seen)


def _reach(flows: list[tuple[set[int], set[int]]], start: set[int]) -> set[int]:
    reached = set(start)
    grew = True
    while grew:
        grew = False
        for inputs, outputs in flows:
            if inputs & reached and not outputs <= reached:
                reached |= outputs
                grew = True
    return reached


def _back(flows: list[tuple[set[int], set[int]]], start: set[int]) -> set[int]:
    """``start`` plus every storage data movement derived it from."""
    return _reach([(o, i) for i, o in flows], start)


def _hit(t: Any, launches: list[dict[str, Any]], kind: str, flows: Any, back: bool = False) -> bool | None:
    """Whether an own launch's loads (or stores) fell inside ``t``'s storage, or inside a
    storage data movement derived from (or into) it."""
    import torch

    if not isinstance(t, torch.Tensor):
        return None
    span = _span(t)
    if span is None:
        return True
    related = (_back if back else _reach)(flows, {span[0]})
    spans = [span]
    for launch in launches:
        for arg in launch.get("arg_spans", []):
            if arg[0] in related:
                spans.append(arg)
    return any(lo <= hi_r and lo_r < hi for launch in launches for lo_r, hi_r in launch[kind]
               for lo, hi in spans)
