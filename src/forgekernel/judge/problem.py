"""The operator under judgement, in one shape for both task formats.

forge tasks: ``reference.run(*inputs)`` and the candidate's ``run(*inputs)``; inputs from
``TensorSpec.dist`` or the reference's ``make_inputs(axes, seed)``. KernelBench tasks:
``Model(*get_init_inputs())`` and the candidate's ``ModelNew`` built under one seed (so
their parameters match), inputs from ``get_inputs()`` under the trial's seed. The float64
oracle is the reference with its floating inputs (and parameters) upcast.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

from forgekernel.judge import inputs as inp
from forgekernel.records import TaskSpec, Workload
from forgekernel.task import load_module, shape_of


class CandidateLoadError(Exception):
    """The candidate module imported but lacks what the task format needs."""


def outputs_of(value: Any) -> tuple[Any, ...]:
    """A call's result as a tuple of outputs."""
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _accepts_device(fn: Callable[..., Any]) -> bool:
    import inspect

    try:
        return "device" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


class Problem:
    """Builds inputs, the reference (own dtype and float64) and the candidate's callable."""

    def __init__(self, task: TaskSpec, device: str) -> None:
        self.task, self.device = task, device
        self.ref = load_module(Path(task.root) / "reference.py", name="_forge_judge_reference")
        self.kernelbench = task.format == "kernelbench"
        self._init_seed = inp.secret_seed()
        self._model = self._model64 = None
        if self.kernelbench:
            import torch

            torch.manual_seed(self._init_seed)
            self._model = self.ref.Model(*self.ref.get_init_inputs()).to(device).eval()
            self._model64 = copy.deepcopy(self._model).to(torch.float64)

    # -- inputs
    def make(self, workload: Workload, seed: int) -> list[Any]:
        """Fresh inputs for ``workload`` from ``seed``, on the device."""
        if self.kernelbench:
            import torch

            torch.manual_seed(seed)
            return list(inp.to_device(list(self.ref.get_inputs()), self.device))
        make = getattr(self.ref, "make_inputs", None)
        if make is not None:
            kwargs = {"device": self.device} if _accepts_device(make) else {}
            return list(inp.to_device(list(make(dict(workload.axes), seed, **kwargs)), self.device))
        gen = inp.generator(seed, self.device)
        return [inp.draw(spec, shape_of(spec, workload.axes), gen, self.device)
                for spec in self.task.inputs.values()]

    # -- reference
    def reference(self, args: list[Any]) -> tuple[Any, ...]:
        """The reference in its own dtypes."""
        import torch

        with torch.no_grad():
            if self.kernelbench:
                return outputs_of(self._model(*args))
            return outputs_of(self.ref.run(*args))

    def oracle(self, args: list[Any]) -> tuple[Any, ...]:
        """The reference on float64 copies of the inputs (the correctness oracle)."""

        return self.oracle_with_inputs(args)[0]

    def reference_callable(self) -> Callable[..., Any]:
        """The reference as a plain callable of the inputs (for timing)."""
        return self._model if self.kernelbench else self.ref.run

    def oracle_with_inputs(self, args: list[Any]) -> tuple[tuple[Any, ...], list[Any]]:
        """The oracle's outputs and its (float64) inputs after the call."""
        import torch

        up = inp.upcast(args)
        with torch.no_grad():
            if self.kernelbench:
                return outputs_of(self._model64(*up)), up
            return outputs_of(self.ref.run(*up)), up

    # -- candidates
    def load(self, kernel: Path, name: str) -> Callable[..., Any]:
        """Import a candidate's kernel.py and return its callable (exceptions propagate)."""
        import torch

        module = load_module(kernel, name=name)
        if self.kernelbench:
            cls = getattr(module, "ModelNew", None)
            if not callable(cls):
                raise CandidateLoadError(f"{kernel.name} does not define ModelNew")
            torch.manual_seed(self._init_seed)
            model = cls(*self.ref.get_init_inputs())
            if isinstance(model, torch.nn.Module):
                model = model.to(self.device)
            return model
        fn = getattr(module, "run", None)
        if not callable(fn):
            raise CandidateLoadError(f"{kernel.name} does not define run(*inputs)")
        return fn
