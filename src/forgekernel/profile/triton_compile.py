"""Concrete Triton launches without a GPU, and their compilation for an sm_90 target.

:func:`capture_specs` imports the candidate with Triton in interpreter mode and runs its
wrapper on ``meta`` tensors at each workload; the interpreter's launch entry is replaced for
the duration so launches are recorded (arguments, constexprs, options) and not executed.
:func:`compile_spec` imports the candidate again in compiled mode and compiles the recorded
launch with ``triton.compile(ASTSource(...), target=GPUTarget('cuda', arch, 32))``, using
Triton's own argument binder so the specialisation (dtypes, 16-byte divisibility,
constexprs) is what a real launch would get.

Both change process-wide Triton state: run them in a worker process.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forgekernel.errors import ForgeError
from forgekernel.records import TaskSpec, Workload


class CaptureError(ForgeError, RuntimeError):
    """The candidate's launches could not be captured."""


@dataclass
class LaunchSpec:
    """One distinct launch: which kernel, with which arguments and options."""

    name: str
    kernel_path: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    workload: str
    key: str = ""
    extras: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        consts = {k: v for k, v in self.kwargs.items() if not hasattr(v, "dtype")}
        return f"{self.workload}: {consts}" if consts else self.workload


@contextlib.contextmanager
def _interpret(flag: bool) -> Iterator[None]:
    import triton

    old = triton.knobs.runtime.interpret
    triton.knobs.runtime.interpret = flag
    try:
        yield
    finally:
        triton.knobs.runtime.interpret = old


@contextlib.contextmanager
def _capture_only(seen: list[tuple[str, tuple[Any, ...], dict[str, Any]]]) -> Iterator[None]:
    from triton.runtime.interpreter import InterpretedFunction

    original = InterpretedFunction.run

    def run(self: Any, *args: Any, grid: Any, warmup: Any, **kwargs: Any) -> None:
        if not warmup:
            seen.append((self.fn.__name__, args, dict(kwargs)))

    InterpretedFunction.run = run
    try:
        yield
    finally:
        InterpretedFunction.run = original


def capture_specs(task: TaskSpec, kernel: Path,
                  workloads: tuple[Workload, ...]) -> tuple[list[LaunchSpec], list[str]]:
    """Distinct launches of the candidate over ``workloads`` (meta tensors; nothing runs)."""
    from forgekernel.profile.subject import load_subject, make_inputs, subject_at

    notes: list[str] = []
    specs: dict[str, LaunchSpec] = {}
    with _interpret(True):
        ref, fn = load_subject(task, str(kernel))
        for wl in workloads:
            seen: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
            try:
                inputs = make_inputs(task, ref, wl.axes, seed=0, device="meta")
                with _capture_only(seen):
                    subject_at(fn, wl.axes)(*inputs)
            except Exception as exc:  # recorded per workload; other workloads still count
                notes.append(f"{wl.label()}: launches not captured on meta tensors: "
                             f"{type(exc).__name__}: {str(exc)[:160]}")
                continue
            for name, args, kwargs in seen:
                spec = LaunchSpec(name, str(kernel), args, kwargs, wl.label())
                spec.key = _key(spec)
                specs.setdefault(spec.key, spec)
    if not specs:
        raise CaptureError(f"{kernel}: no Triton launch captured at any workload"
                           + (f" ({notes[0]})" if notes else ""))
    return list(specs.values()), notes


def _key(spec: LaunchSpec) -> str:
    def one(v: Any) -> str:
        if hasattr(v, "dtype") and hasattr(v, "shape"):
            return f"T[{v.dtype}]"
        if isinstance(v, int) and not isinstance(v, bool):
            return f"i{'16' if v % 16 == 0 else ''}{'one' if v == 1 else ''}"
        return repr(v)

    parts = [one(a) for a in spec.args] + [f"{k}={one(v) if hasattr(v, 'dtype') else v!r}"
                                           for k, v in sorted(spec.kwargs.items())]
    return spec.name + "(" + ",".join(parts) + ")"


def _jit_functions(module: Any) -> dict[str, Any]:
    """@triton.jit functions reachable from the module's globals (through autotune/heuristics)."""
    from triton.runtime.jit import JITFunction

    found: dict[str, Any] = {}
    for obj in vars(module).values():
        seen = 0
        while obj is not None and seen < 5 and not isinstance(obj, JITFunction):
            obj, seen = getattr(obj, "fn", None), seen + 1
        if isinstance(obj, JITFunction):
            found[obj.fn.__name__] = obj
    return found


_COMPILED_MODULES: dict[str, Any] = {}


def compile_spec(spec: LaunchSpec, arch: int = 90) -> Any:
    """Compile one captured launch for sm_<arch> (no GPU needed); returns the CompiledKernel."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, make_backend

    from forgekernel.task import load_module

    with _interpret(False):
        if spec.kernel_path not in _COMPILED_MODULES:
            _COMPILED_MODULES[spec.kernel_path] = load_module(
                Path(spec.kernel_path), name=f"_fk_static_{abs(hash(spec.kernel_path)):x}")
        jits = _jit_functions(_COMPILED_MODULES[spec.kernel_path])
        jit = jits.get(spec.name)
        if jit is None:
            raise CaptureError(f"{spec.kernel_path}: kernel {spec.name} is not a module-level "
                               "@triton.jit function, so it cannot be compiled by name")
        target = GPUTarget("cuda", arch, 32)
        backend = make_backend(target)
        binder = _binder(jit, backend)
        # a @triton.jit function passed as a constexpr (a fused epilogue) was captured in its
        # interpreted form: its compiled twin, by name
        kwargs = {k: jits.get(getattr(getattr(v, "fn", None), "__name__", ""), v)
                  for k, v in spec.kwargs.items()}
        bound, specialization, options = binder(*spec.args, **kwargs)
        options, signature, constexprs, attrs = jit._pack_args(backend, kwargs, bound,
                                                               specialization, options)
        src = ASTSource(jit, signature, constexprs, attrs)
        return triton.compile(src, target=target, options=options.__dict__)


def _binder(jit: Any, backend: Any) -> Any:
    try:
        from triton.runtime.jit import create_function_from_signature
    except ImportError:
        raise CaptureError("this Triton has no create_function_from_signature; the static "
                           "report needs Triton >= 3.5") from None
    if not hasattr(jit, "_pack_args"):
        raise CaptureError("this Triton's JITFunction has no _pack_args; the static report "
                           "needs Triton >= 3.5")
    return create_function_from_signature(jit.signature, jit.params, backend)
