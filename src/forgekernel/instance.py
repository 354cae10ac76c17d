"""A concrete instance of a task at one workload: the model, its parameters and the inputs.

One place makes it, for the judge, the roofline and dry-run, and kernel generators:

* forge tasks: no model; inputs from the reference's ``make_inputs(axes, seed)`` or drawn
  from each ``TensorSpec.dist``; the reference is ``run(*inputs)``.
* KernelBench tasks: the workload's axes are module-level constants of ``reference.py``;
  they are applied (:mod:`forgekernel.kbsource`), ``Model(*get_init_inputs())`` is built
  under ``init_seed`` on the CPU and moved to the device (as KernelBench does), put in the
  task's module mode, and the inputs are ``get_inputs()`` under ``seed``.

With ``meta=True`` everything lives on the meta device: shapes and dtypes only, no memory,
no randomness (:class:`forgekernel.metamode.MetaMode` keeps code that names a device on meta).
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from forgekernel import kbsource
from forgekernel.records import TaskSpec, Workload
from forgekernel.task import shape_of


@dataclass
class Instance:
    """The task at one workload, ready to call."""

    workload: Workload
    model: Any | None
    """KernelBench: Model(*get_init_inputs()) on the device, in the task's module mode."""
    params: list[tuple[str, Any]]
    """KernelBench: named_parameters() then named_buffers(); [] for forge tasks."""
    inputs: list[Any]
    """The forward's (or run's) arguments."""
    run: Callable[..., Any] | None = None
    """forge tasks: reference.run."""
    module: ModuleType | None = field(default=None, repr=False)
    """The reference module at this workload's constants (KernelBench) or as loaded."""

    def reference(self) -> tuple[Any, ...]:
        """The reference's outputs in its own dtypes, without autograd."""
        import torch

        with torch.no_grad():
            fn = self.model if self.model is not None else self.run
            return outputs_of(fn(*self.inputs))

    def functional(self) -> Callable[..., Any]:
        """``f(*param_tensors, *inputs) -> outputs``: the reference as a pure function."""
        if self.model is None:
            return self.run
        from torch.func import functional_call

        model, names = self.model, [n for n, _ in self.params]

        def f(*args: Any) -> Any:
            return functional_call(model, dict(zip(names, args[:len(names)], strict=True)),
                                   tuple(args[len(names):]))
        return f

    def param_tensors(self) -> list[Any]:
        return [t for _, t in self.params]


def outputs_of(value: Any) -> tuple[Any, ...]:
    """A call's result as a tuple of outputs."""
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def kernelbench(task: TaskSpec) -> bool:
    return task.format == "kernelbench"


# ------------------------------------------------------------------ KernelBench constants


def overrides(task: TaskSpec, module: ModuleType, axes: dict[str, int]) -> dict[tuple[str, int | None], int]:
    """The module constants a workload sets: (name, tuple index or None) -> value.

    An axis names its constant in ``[axes] <axis>.constant`` (``input_shape[0]``), else the
    axis name is the constant's name; axes the module has no such constant for set nothing.
    """
    out: dict[tuple[str, int | None], int] = {}
    for axis, value in axes.items():
        spec = task.axes.get(axis)
        for ref in (spec.constant if spec and spec.constant else axis).split(","):
            name, index = kbsource.parse_ref(ref.strip())
            if isinstance(kbsource.current(module, name, index), int):
                out[(name, index)] = value
    return out


def module_at(task: TaskSpec, module: ModuleType, axes: dict[str, int]) -> ModuleType:
    """The reference module with the workload's constants (the module itself for forge tasks)."""
    if not kernelbench(task) or not axes:
        return module
    return kbsource.variant(module, overrides(task, module, axes))


# ------------------------------------------------------------------ pieces


@contextlib.contextmanager
def on_meta(track: bool = False, values: bool = False) -> Iterator[Any]:
    """Factories on meta, device moves kept on meta, torch.distributions checks off (they call
    .item()); yields the mode (its ``origin(t)`` says how ``t`` was made when tracking;
    ``values``: a tensor's value read as a number is 0, for get_inputs())."""
    import torch
    from torch.distributions import Distribution

    from forgekernel.metamode import MetaMode

    validate = Distribution._validate_args
    Distribution.set_default_validate_args(False)
    mode = MetaMode(track, values)
    try:
        with torch.device("meta"), mode:
            yield mode
    finally:
        Distribution.set_default_validate_args(validate)


def _model_on_meta(cls: Any, module: ModuleType) -> Any:
    """``cls(*get_init_inputs())`` with its weights on meta. Built under :func:`on_meta` when
    the constructor allows; one that reads values while it builds (``[x.item() for x in
    torch.linspace(...)]``, a Swin model's drop-path rates) is built on the CPU instead, each
    parameter and buffer moved to meta as it is registered (the largest one allocated at a time)."""
    try:
        with on_meta():
            return cls(*module.get_init_inputs())
    except Exception:  # noqa: BLE001 - tried once more, reading values on the CPU
        pass
    with _weights_on_meta():
        return cls(*module.get_init_inputs())


@contextlib.contextmanager
def _weights_on_meta() -> Iterator[None]:
    import torch

    mod = torch.nn.Module
    register_parameter, register_buffer = mod.register_parameter, mod.register_buffer

    def parameter(self: Any, name: str, param: Any) -> None:
        if param is not None and param.device.type != "meta":
            param = torch.nn.Parameter(param.detach().to("meta"), requires_grad=param.requires_grad)
        register_parameter(self, name, param)

    def buffer(self: Any, name: str, tensor: Any, persistent: bool = True) -> None:
        register_buffer(self, name, tensor.to("meta") if isinstance(tensor, torch.Tensor) else tensor, persistent)

    mod.register_parameter, mod.register_buffer = parameter, buffer
    try:
        yield
    finally:
        mod.register_parameter, mod.register_buffer = register_parameter, register_buffer


def model_at(task: TaskSpec, module: ModuleType, *, init_seed: int = 0, device: str = "cpu",
             meta: bool = False, cls: Any = None) -> Any:
    """``cls(*get_init_inputs())`` (default: the reference's Model) of ``module`` (already at
    the workload's constants) built under ``init_seed``, on ``device``, in the module mode."""
    import torch

    cls = cls if cls is not None else module.Model
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(init_seed)
        if meta:
            model = _model_on_meta(cls, module)
        else:
            model = cls(*module.get_init_inputs())
    if isinstance(model, torch.nn.Module):
        if not meta:
            model = model.to(device)
        model.train(task.judge.module_mode == "train")
    return model


def named_tensors(model: Any) -> list[tuple[str, Any]]:
    import torch

    if not isinstance(model, torch.nn.Module):
        return []
    return list(model.named_parameters()) + list(model.named_buffers())


def _accepts_device(fn: Callable[..., Any]) -> bool:
    try:
        return "device" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def inputs_at(task: TaskSpec, module: ModuleType, workload: Workload, *, seed: int | None = None,
              device: str = "cpu", meta: bool = False) -> list[Any]:
    """The arguments at ``workload``: get_inputs() (KernelBench, module at the workload's
    constants), make_inputs(axes, seed), or drawn from the specs; on meta: shapes only."""
    import torch

    from forgekernel.judge import inputs as inp

    if meta:
        if kernelbench(task):
            with on_meta(values=True):
                values = list(module.get_inputs())
            return [v.to("meta") if isinstance(v, torch.Tensor) else v for v in values]
        return [torch.empty(shape_of(s, workload.axes), dtype=getattr(torch, s.dtype), device="meta")
                for s in task.inputs.values()]
    seed = inp.secret_seed() if seed is None else seed
    if kernelbench(task):
        return list(inp.to_device(_kb_inputs(module, seed, device), device))
    make = getattr(module, "make_inputs", None)
    if make is not None:
        kwargs = {"device": device} if _accepts_device(make) else {}
        return list(inp.to_device(list(make(dict(workload.axes), seed, **kwargs)), device))
    gen = inp.generator(seed, device)
    return [inp.draw(spec, shape_of(spec, workload.axes), gen, device) for spec in task.inputs.values()]


def _kb_inputs(module: ModuleType, seed: int, device: str) -> list[Any]:
    """get_inputs() under ``seed``. On a GPU its tensors are created there (the device as
    the default one, its generator seeded): the same distributions, drawn in milliseconds
    where the host takes seconds per GB (KernelBench level 1 draws 6 GB tensors)."""
    import torch

    devices, where = [], contextlib.nullcontext()
    if device.startswith("cuda"):
        where = torch.device(device)
        devices = [where.index if where.index is not None else torch.cuda.current_device()]
    with torch.random.fork_rng(devices=devices), where:
        torch.manual_seed(seed)
        return list(module.get_inputs())


def inputs_into(task: TaskSpec, module: ModuleType, workload: Workload, seed: int,
                views: list[Any], device: str) -> None:
    """The values ``inputs_at(..., seed=seed)`` gives, written into ``views`` (tensors of the
    same shapes and dtypes) in place: drawn straight into them when they come from the specs,
    copied from a fresh set otherwise (get_inputs, make_inputs)."""
    from forgekernel.judge import inputs as inp

    if kernelbench(task) or getattr(module, "make_inputs", None) is not None:
        inp.refill(views, inputs_at(task, module, workload, seed=seed, device=device))
        return
    gen = inp.generator(seed, device)
    for spec, view in zip(task.inputs.values(), views, strict=True):
        inp.draw_into(spec, view, gen)


def build(task: TaskSpec, module: ModuleType, workload: Workload, *, device: str = "cpu",
          seed: int | None = None, init_seed: int = 0, meta: bool = False) -> Instance:
    """The task at ``workload``: model (KernelBench), parameters and inputs.

    ``module`` is the task's reference module as loaded; ``seed`` draws the inputs (None: a
    fresh secret seed), ``init_seed`` the model's parameters. ``meta=True``: all on meta.
    """
    at = module_at(task, module, dict(workload.axes))
    inputs = inputs_at(task, at, workload, seed=seed, device=device, meta=meta)
    if not kernelbench(task):
        return Instance(workload=workload, model=None, params=[], inputs=inputs, run=module.run,
                        module=at)
    model = model_at(task, at, init_seed=init_seed, device=device, meta=meta)
    return Instance(workload=workload, model=model, params=named_tensors(model), inputs=inputs,
                    module=at)
