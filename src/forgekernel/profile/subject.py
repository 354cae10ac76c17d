"""What gets profiled: the task's reference or a candidate kernel, and its inputs.

Used inside worker processes only (it imports torch and the candidate's code).
"""

from __future__ import annotations

import inspect
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
    """(reference module, the callable to profile): the reference's or the candidate's entry."""
    ref = check_reference_module(task)
    if kernel is None:
        return ref, _entry(task, ref, "Model")
    mod = load_module(kernel_file(kernel))
    return ref, _entry(task, mod, "ModelNew")


def _entry(task: TaskSpec, module: Any, model_cls: str) -> Callable[..., Any]:
    if task.format == "kernelbench" or (not callable(getattr(module, "run", None))
                                        and hasattr(module, model_cls)):
        cls = getattr(module, model_cls, None)
        if cls is None:
            raise SubjectError(f"{module.__file__}: defines neither run(*inputs) nor {model_cls}")
        return _ModelCall(cls, module)
    run = getattr(module, "run", None)
    if not callable(run):
        raise SubjectError(f"{module.__file__}: does not define run(*inputs)")
    return run


class _ModelCall:
    """KernelBench style: build the model lazily on the inputs' device, then call it."""

    def __init__(self, cls: Any, module: Any) -> None:
        self.cls, self.module, self.model = cls, module, None

    def __call__(self, *inputs: Any) -> Any:
        if self.model is None:
            import torch

            ref_init = getattr(self.module, "get_init_inputs", lambda: [])
            torch.manual_seed(0)
            self.model = self.cls(*ref_init())
            dev = next((t.device for t in inputs if isinstance(t, torch.Tensor)), None)
            if dev is not None and hasattr(self.model, "to"):
                self.model = self.model.to(dev)
        return self.model(*inputs)


def make_inputs(task: TaskSpec, ref: Any, axes: dict[str, int], *, seed: int,
                device: str) -> tuple[Any, ...]:
    """Inputs at ``axes``: the reference's make_inputs / get_inputs, else from the specs."""
    import torch

    torch.manual_seed(seed)
    if task.format == "kernelbench":
        made = ref.get_inputs()
    elif callable(getattr(ref, "make_inputs", None)):
        takes_device = "device" in inspect.signature(ref.make_inputs).parameters
        made = (ref.make_inputs(dict(axes), seed, device=device) if takes_device
                else ref.make_inputs(dict(axes), seed))
    else:
        made = [_tensor(spec, axes, device) for spec in task.inputs.values()]
    return tuple(t.to(device) if isinstance(t, torch.Tensor) else t for t in made)


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
