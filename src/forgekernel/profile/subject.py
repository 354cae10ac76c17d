"""What gets profiled: the task's reference or a candidate kernel, and its inputs.

Used inside worker processes only (it imports torch and the candidate's code).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from forgekernel.errors import ForgeError
from forgekernel.records import TaskSpec
from forgekernel.task import check_reference_module, load_module, shape_of


class SubjectError(ForgeError, ValueError):
    """The kernel to profile cannot be found or does not define what the task needs."""


def kernel_file(path: str | Path) -> Path:
    """A candidate is a kernel.py file or a directory holding one."""
    p = Path(path)
    if p.is_dir():
        p = p / "kernel.py"
    if not p.is_file():
        raise SubjectError(f"{path}: no kernel file (expected kernel.py or a directory with one)")
    return p


def load_subject(task: TaskSpec, kernel: str | None) -> tuple[Any, Callable[..., Any]]:
    """(reference module, the callable to profile): the reference's or the candidate's entry.
    Call :func:`subject_at` with a workload's axes before calling a KernelBench subject."""
    ref = check_reference_module(task)
    if kernel is None:
        return ref, _entry(task, ref, "Model", ref)
    mod = load_module(kernel_file(kernel))
    return ref, _entry(task, mod, "ModelNew", ref)


def _entry(task: TaskSpec, module: Any, model_cls: str, ref: Any) -> Callable[..., Any]:
    if task.format == "kernelbench" or (not callable(getattr(module, "run", None))
                                        and hasattr(module, model_cls)):
        cls = getattr(module, model_cls, None)
        if cls is None:
            raise SubjectError(f"{module.__file__}: defines neither run(*inputs) nor {model_cls}")
        return _ModelCall(cls, module, task if task.format == "kernelbench" else None, ref)
    run = getattr(module, "run", None)
    if not callable(run):
        raise SubjectError(f"{module.__file__}: does not define run(*inputs)")
    return run


class _ModelCall:
    """KernelBench style: ``cls(*get_init_inputs())`` at the workload's constants, built
    under seed 0 in the task's module mode on the inputs' device (once per workload)."""

    def __init__(self, cls: Any, module: Any, task: TaskSpec | None = None, ref: Any = None) -> None:
        self.cls, self.module, self.task, self.ref = cls, module, task, ref
        self.axes: dict[str, int] = {}
        self.models: dict[tuple, Any] = {}

    def at(self, axes: dict[str, int]) -> _ModelCall:
        """The subject at ``axes`` (what the next calls build the model for)."""
        self.axes = dict(axes)
        return self

    def __call__(self, *inputs: Any) -> Any:
        import torch

        from forgekernel import instance

        key = tuple(sorted(self.axes.items()))
        if key not in self.models:
            dev = next((t.device for t in inputs if isinstance(t, torch.Tensor)), torch.device("cpu"))
            task = self.task
            at = instance.module_at(task, self.ref or self.module, self.axes) if task else self.module
            if task is None:
                torch.manual_seed(0)
                self.models[key] = self.cls(*self.module.get_init_inputs())
            else:
                self.models[key] = instance.model_at(task, at, init_seed=0, device=str(dev),
                                                     meta=dev.type == "meta", cls=self.cls)
        return self.models[key](*inputs)


def subject_at(subject: Callable[..., Any], axes: dict[str, int]) -> Callable[..., Any]:
    """The subject to call at ``axes`` (KernelBench models are built per workload)."""
    return subject.at(axes) if isinstance(subject, _ModelCall) else subject


def make_inputs(task: TaskSpec, ref: Any, axes: dict[str, int], *, seed: int,
                device: str) -> tuple[Any, ...]:
    """Inputs at ``axes`` (:func:`forgekernel.instance.inputs_at`; meta: shapes only)."""
    from forgekernel import instance
    from forgekernel.records import Workload

    wl = Workload(axes=dict(axes))
    at = instance.module_at(task, ref, dict(axes))
    meta = device == "meta"
    if not meta and not instance.kernelbench(task) and not callable(getattr(ref, "make_inputs", None)):
        import torch

        torch.manual_seed(seed)
        return tuple(_tensor(spec, axes, device) for spec in task.inputs.values())
    return tuple(instance.inputs_at(task, at, wl, seed=seed, device=device, meta=meta))


def _tensor(spec: Any, axes: dict[str, int], device: str) -> Any:
    import torch

    shape = shape_of(spec, axes)
    dtype = getattr(torch, spec.dtype)
    d = spec.dist
    if d.kind == "randint":
        return torch.randint(int(d.low), int(d.high), shape, device=device).to(dtype)
    if d.kind == "uniform":
        return torch.empty(shape, device=device, dtype=torch.float32).uniform_(d.low, d.high).to(dtype)
    if d.kind == "positive":
        lo, hi = d.low or 0.5, d.high or 1.5
        return torch.empty(shape, device=device, dtype=torch.float32).uniform_(lo, hi).to(dtype)
    if dtype in (torch.bool,):
        return torch.rand(shape, device=device) < 0.5
    return (torch.randn(shape, device=device, dtype=torch.float32) * d.std + d.mean).to(dtype)
