"""The reference called for planning: on meta tensors, under a deadline, in one line when
it misbehaves; and what a workload costs (bytes, flops, output shapes).

Planning (``forge new --dry-run``, the start of ``forge run``, the roofline and the built-in
architect) never allocates a workload: the reference runs on the meta device
(:func:`forgekernel.instance.build` with ``meta=True``) under PyTorch's flop formulas. A
reference that cannot run on meta because it reads values (``.item()``, ``nonzero``) is
called for real once, at the smallest smoke workload only; other workloads then have no
output shapes (declared ``[outputs]`` of a forge task still give them). A reference that
raises, takes the wrong number of arguments or does not return within the deadline is a
:class:`ReferenceFailure`: one line, never blamed on a candidate.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from forgekernel import instance as inst
from forgekernel.errors import ForgeError
from forgekernel.records import DTYPE_BYTES, TaskSpec, Workload
from forgekernel.task import _deadline, _ImportDeadline, shape_of

REFERENCE_DEADLINE_S = 60.0
"""How long one planning call of the reference may take (meta calls take milliseconds)."""
Outputs = list[tuple[tuple[int, ...], str]]


class ReferenceFailure(ForgeError, RuntimeError):
    """The reference misbehaved while being planned; the message is one line."""


class _DataDependent(Exception):
    """The reference needs values, which meta tensors do not have."""

    def __init__(self, why: str, instance: inst.Instance | None) -> None:
        super().__init__(why)
        self.instance = instance


@dataclass
class Cost:
    """What one workload costs by the roofline's count."""

    outputs: Outputs | None
    input_bytes: int
    param_bytes: int
    output_bytes: int
    flops: float | None
    flops_source: str
    note: str = ""

    @property
    def bytes(self) -> int:
        """Minimal bytes: inputs, parameters and buffers read once, outputs written once."""
        return self.input_bytes + self.param_bytes + self.output_bytes


def _ref_path(task: TaskSpec) -> str:
    return str(Path(task.root) / "reference.py")


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def _which(exc: BaseException) -> str:
    text = str(exc)
    if ".item()" in text:
        return "it calls .item() (or float()/bool()/int() of a tensor), which meta tensors cannot do"
    if "data-independent" in text or "nonzero" in text:
        return "it uses an op with a data-dependent output shape (nonzero, masked indexing, ...)"
    return f"an op it uses cannot run on meta tensors ({_one_line(exc)})"


def _data_dependent(exc: BaseException) -> bool:
    return "meta" in str(exc).lower() and isinstance(exc, (RuntimeError, NotImplementedError, TypeError))


def _tensor_bytes(values: Any) -> int:
    import torch

    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))


def _check_arity(task: TaskSpec, instance: inst.Instance, where: str) -> None:
    fn = instance.model.forward if instance.model is not None else instance.run
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    try:
        sig.bind(*instance.inputs)
    except TypeError as exc:
        what = "Model.forward" if instance.model is not None else "run"
        given = "get_inputs() returns" if instance.model is not None else "the task declares"
        raise ReferenceFailure(f"{where}: {what}{sig} cannot take the {len(instance.inputs)} "
                               f"input(s) {given} ({exc})") from None


def _call(task: TaskSpec, module: ModuleType, wl: Workload, *, meta: bool,
          deadline_s: float) -> tuple[inst.Instance, tuple[Any, ...], float]:
    """Build at ``wl`` and call the reference under the flop counter and the deadline."""
    from forgekernel.flops import FlopCount

    where = _ref_path(task)
    with _deadline(deadline_s):
        stage = "building the inputs and model (get_inputs(), Model(*get_init_inputs()))" \
            if inst.kernelbench(task) else "building the inputs"
        instance = None
        try:
            instance = inst.build(task, module, wl, meta=meta, seed=0, init_seed=0)
            _check_arity(task, instance, where)
            stage = "calling Model.forward" if instance.model is not None else "calling run()"
            counter = FlopCount()
            if meta:
                with inst.on_meta(), counter:
                    outs = instance.reference()
            else:
                with counter:
                    outs = instance.reference()
        except _ImportDeadline:
            raise
        except ReferenceFailure:
            raise
        except Exception as exc:
            if meta and _data_dependent(exc):
                raise _DataDependent(_which(exc), instance) from None
            how = "on meta tensors" if meta else "on the CPU"
            raise ReferenceFailure(f"{where}: the reference fails {how} at {wl.label() or 'its workload'} "
                                   f"while {stage}: {_one_line(exc)}") from None
    return instance, outs, float(counter.total)


def _timed_call(task: TaskSpec, module: ModuleType, wl: Workload, meta: bool, deadline_s: float):
    try:
        return _call(task, module, wl, meta=meta, deadline_s=deadline_s)
    except _ImportDeadline:
        how = "on meta tensors" if meta else "on the CPU"
        raise ReferenceFailure(f"{_ref_path(task)}: the reference did not return within {deadline_s:g} s "
                               f"{how} at {wl.label() or 'its workload'} (a loop or a wait in it?)") from None


def _outputs(outs: tuple[Any, ...], where: str) -> Outputs:
    import torch

    specs = []
    for i, o in enumerate(outs):
        if not isinstance(o, torch.Tensor):
            raise ReferenceFailure(f"{where}: the reference returns a {type(o).__name__} as output {i}; "
                                   "outputs must be tensors")
        specs.append((tuple(int(d) for d in o.shape), str(o.dtype).removeprefix("torch.")))
    return specs


def _smoke(task: TaskSpec) -> Workload | None:
    smoke = task.smoke_workloads()
    if not smoke:
        return None
    return min(smoke, key=lambda w: sum(w.axes.values()))


def cost(task: TaskSpec, module: ModuleType, wl: Workload, *,
         deadline_s: float = REFERENCE_DEADLINE_S) -> Cost:
    """Bytes, flops and outputs of the reference at ``wl``, computed on meta tensors."""
    from forgekernel import exprs

    where = _ref_path(task)
    note = ""
    try:
        instance, outs, counted = _timed_call(task, module, wl, True, deadline_s)
        outputs: Outputs | None = _outputs(outs, where)
    except _DataDependent as why:
        instance, outputs, counted, note = _fallback(task, module, wl, why, deadline_s)
    if task.outputs and not inst.kernelbench(task):
        outputs = [(shape_of(s, wl.axes), s.dtype) for s in task.outputs.values()]
    out_bytes = sum(_numel(s) * DTYPE_BYTES[d] for s, d in outputs or [] if d in DTYPE_BYTES)
    in_bytes = _tensor_bytes(instance.inputs) if instance is not None else _spec_bytes(task, wl)
    params = _tensor_bytes(instance.param_tensors()) if instance is not None else 0
    if task.cost.flops:
        flops, source = float(exprs.evaluate(task.cost.flops, wl.axes)), f"task [cost] flops = {task.cost.flops}"
    elif counted:
        flops, source = counted, "PyTorch's flop formulas (torch.utils.flop_counter) over the reference on meta tensors"
    else:
        flops, source = None, "unknown: no [cost] flops and the flop counter saw no matmul/conv/attention"
    return Cost(outputs=outputs, input_bytes=in_bytes, param_bytes=params, output_bytes=out_bytes,
                flops=flops, flops_source=source, note=note)


def _fallback(task: TaskSpec, module: ModuleType, wl: Workload, why: _DataDependent, deadline_s: float):
    """A data-dependent reference: a real call at the smallest smoke workload only."""
    where = _ref_path(task)
    smoke = _smoke(task)
    head = f"the reference cannot run on meta tensors at {wl.label() or 'its workload'}: {why}"
    if smoke is None:
        if task.outputs and not inst.kernelbench(task):
            return why.instance, None, 0.0, head + "; using the declared [outputs]"
        raise ReferenceFailure(f"{where}: {head}, and the task has no smoke workload to call it on "
                               "for real; declare its [outputs] or add a smoke workload")
    instance, outs, counted = _timed_call(task, module, smoke, False, deadline_s)
    if smoke.axes != wl.axes:
        return why.instance, None, 0.0, (
            head + "; it runs for real at the smoke workload, but data-dependent output shapes "
            "cannot be planned here (declared [outputs] would count them)")
    return instance, _outputs(outs, where), counted, head + "; called for real at this smoke workload"


def _spec_bytes(task: TaskSpec, wl: Workload) -> int:
    if inst.kernelbench(task):
        return 0
    return sum(_numel(shape_of(s, wl.axes)) * DTYPE_BYTES[s.dtype] for s in task.inputs.values())


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def check_reference(task: TaskSpec, module: ModuleType | None = None, *,
                    deadline_s: float = REFERENCE_DEADLINE_S) -> list[Cost]:
    """Every workload's cost; raises :class:`ReferenceFailure` when the reference misbehaves
    (``module``: the reference as loaded; imported here when None)."""
    if module is None:
        from forgekernel.task import check_reference_module

        module = check_reference_module(task)
    return [cost(task, module, w, deadline_s=deadline_s) for w in task.workloads]
