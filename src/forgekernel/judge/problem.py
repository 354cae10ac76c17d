"""The operator under judgement, in one shape for both task formats.

Every concrete piece comes from :mod:`forgekernel.instance`. forge tasks: ``reference.run``
and the candidate's ``run(*inputs)``; inputs from ``make_inputs`` or the specs. KernelBench
tasks: per workload, the reference module at the workload's constants, ``Model`` and the
candidate's ``ModelNew`` built from its ``get_init_inputs()`` under one secret init seed (so
their parameters match), both in the task's module mode, and inputs from ``get_inputs()``
under the trial's seed. The float64 oracle is the reference with its floating inputs (and
parameters) upcast.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

from forgekernel import instance as inst
from forgekernel.judge import inputs as inp
from forgekernel.records import TaskSpec, Workload
from forgekernel.task import load_module

outputs_of = inst.outputs_of


class CandidateLoadError(Exception):
    """The candidate module imported but lacks what the task format needs."""


def _key(wl: Workload) -> tuple:
    return tuple(sorted(wl.axes.items()))


class Entry:
    """A candidate (or performance reference) module: its callable at each workload."""

    def __init__(self, problem: Problem, module: Any, kernel: Path) -> None:
        self.problem, self.module = problem, module
        self._models: dict[tuple, Any] = {}
        if problem.kernelbench:
            if not callable(getattr(module, "ModelNew", None)):
                raise CandidateLoadError(f"{kernel.name} does not define ModelNew")
        elif not callable(getattr(module, "run", None)):
            raise CandidateLoadError(f"{kernel.name} does not define run(*inputs)")

    def at(self, wl: Workload) -> Callable[..., Any]:
        """run, or ModelNew(*get_init_inputs()) at the workload's constants (built once)."""
        if not self.problem.kernelbench:
            return self.module.run
        key = _key(wl)
        if key not in self._models:
            p = self.problem
            self._models[key] = inst.model_at(p.task, p.module_at(wl), init_seed=p.init_seed,
                                              device=p.device, cls=self.module.ModelNew)
        return self._models[key]


class Problem:
    """Builds inputs, the reference (own dtype and float64) and the candidate's callables."""

    def __init__(self, task: TaskSpec, device: str) -> None:
        self.task, self.device = task, device
        self.ref = load_module(Path(task.root) / "reference.py", name="_forge_judge_reference")
        self.kernelbench = inst.kernelbench(task)
        self.init_seed = inp.secret_seed()
        self._models: dict[tuple, tuple[Any, Any]] = {}
        self._elsewhere: dict[tuple, Any] = {}
        self.notes: list[str] = []
        """What the verdict should say about how it was judged (the judge session's notes)."""
        self.own_precision = False
        """The oracle is the reference in its own dtype: its float64 copy raised (a reference
        that casts to float32 itself, say, then meets a float64 parameter)."""

    def module_at(self, wl: Workload) -> Any:
        return inst.module_at(self.task, self.ref, dict(wl.axes))

    def constants(self, wl: Workload) -> dict[str, int]:
        """The plain module constants (``batch_size = 10``) a KernelBench workload sets."""
        if not self.kernelbench:
            return {}
        return {name: v for (name, index), v in inst.overrides(self.task, self.ref, dict(wl.axes)).items()
                if index is None}

    def _pair(self, wl: Workload) -> tuple[Any, Any]:
        """(Model, its float64 copy) at the workload, built once under the init seed."""
        import torch

        key = _key(wl)
        if key not in self._models:
            model = inst.model_at(self.task, self.module_at(wl), init_seed=self.init_seed,
                                  device=self.device)
            self._models[key] = (model, copy.deepcopy(model).to(torch.float64))
        return self._models[key]

    def footprint(self, workloads: list[Workload]) -> int:
        """Bytes of the largest workload's inputs, parameters and outputs, from shapes on meta
        (nothing allocated); a task whose tensors cannot be sized there counts as unbounded.
        Outputs count: a matmul over a short K (two 8 MiB inputs, a 4.3 GB output) was sized
        by its inputs, judged beside other jobs, and the verifier ran out of device memory."""
        import torch

        from forgekernel.profile.roofline import output_specs, tensor_bytes

        def nbytes(ts: Any) -> int:
            return sum(t.numel() * t.element_size() for t in ts if isinstance(t, torch.Tensor))

        most = 0
        for wl in workloads:
            try:
                module = self.module_at(wl)
                n = nbytes(inst.inputs_at(self.task, module, wl, meta=True))
                if self.kernelbench:
                    n += nbytes(t for _, t in inst.named_tensors(inst.model_at(self.task, module, meta=True)))
                n += sum(tensor_bytes(dtype, shape) for shape, dtype in output_specs(self.task, module, wl))
            except Exception:
                return 1 << 62
            most = max(most, n)
        return most

    # -- inputs
    def make(self, wl: Workload, seed: int) -> list[Any]:
        """Fresh inputs for ``wl`` from ``seed``, on the device."""
        return inst.inputs_at(self.task, self.module_at(wl), wl, seed=seed, device=self.device)

    def fill(self, wl: Workload, seed: int, views: list[Any]) -> None:
        """``make(wl, seed)``'s values written into ``views`` in place (a timing pool's sets)."""
        inst.inputs_into(self.task, self.module_at(wl), wl, seed, views, self.device)

    # -- reference
    def reference_callable(self, wl: Workload) -> Callable[..., Any]:
        """The reference at ``wl`` as a plain callable of the inputs (for timing)."""
        return self._pair(wl)[0] if self.kernelbench else self.ref.run

    def reference(self, wl: Workload, args: list[Any]) -> tuple[Any, ...]:
        """The reference in its own dtypes."""
        import torch

        with torch.no_grad():
            return outputs_of(self.reference_callable(wl)(*args))

    def oracle(self, wl: Workload, args: list[Any]) -> tuple[Any, ...]:
        """The reference on float64 copies of the inputs (the correctness oracle)."""
        return self.oracle_with_inputs(wl, args)[0]

    def oracle_with_inputs(self, wl: Workload, args: list[Any]) -> tuple[tuple[Any, ...], list[Any]]:
        """The oracle's outputs and its (float64) inputs after the call, on this problem's
        device wherever ``args`` are (the verifier may keep them in host memory); in host
        memory when the device cannot hold them (a 1.6e9-element ReLU: 25.8 GB in float64,
        beside the executors' pools on an 80 GB card)."""
        import torch

        from forgekernel.judge import residency

        try:
            return self._oracle_on(wl, args, self.device)
        except torch.OutOfMemoryError:
            if self.device == "cpu":
                raise
        residency.release(torch)  # what the failed attempt left cached
        note = "correctness oracle: computed in host memory where the device could not hold its float64 copies"
        if note not in self.notes:
            self.notes.append(note)
        return self._oracle_on(wl, args, "cpu")

    def _oracle_on(self, wl: Workload, args: list[Any], device: str) -> tuple[tuple[Any, ...], list[Any]]:
        import torch

        with torch.no_grad():
            if not self.own_precision:
                up = inp.upcast(args, device)
                fn = self._model64(wl, device) if self.kernelbench else self.ref.run
                try:
                    return outputs_of(fn(*up)), up
                except torch.OutOfMemoryError:
                    raise  # the device's limit, not the float64 copy's fault
                except Exception as exc:  # noqa: BLE001 - tried once more in the reference's own dtype
                    why = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
                del up
            own = inp.clone_args(args, device)
            ref = self.reference_callable(wl) if device == self.device else self._model_on(wl, device, None)
            outs = outputs_of(ref(*own))  # if this raises, the reference fails
            if not self.own_precision:
                self.own_precision = True
                self.notes.append(f"correctness oracle: the reference in its own dtype (its float64 copy raised {why})")
            return outs, own

    def _model64(self, wl: Workload, device: str) -> Any:
        import torch

        return self._pair(wl)[1] if device == self.device else self._model_on(wl, device, torch.float64)

    def _model_on(self, wl: Workload, device: str, dtype: Any) -> Any:
        """A copy of the reference model (in ``dtype``, None: its own) on another device, kept."""
        if not self.kernelbench:
            return self.ref.run
        key = (_key(wl), device, dtype)
        if key not in self._elsewhere:  # built as _pair builds it: the same parameters
            model = inst.model_at(self.task, self.module_at(wl), init_seed=self.init_seed, device=device)
            self._elsewhere[key] = model.to(dtype) if dtype is not None else model
        return self._elsewhere[key]

    # -- candidates
    def load(self, kernel: Path, name: str) -> Entry:
        """Import a candidate's kernel.py (exceptions propagate); its callables per workload."""
        return Entry(self, load_module(kernel, name=name), kernel)
