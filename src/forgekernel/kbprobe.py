"""A KernelBench problem at some values of its constants, looked at on the meta device.

:func:`probe` applies constant overrides (:func:`forgekernel.kbsource.variant`), builds
``Model(*get_init_inputs())`` and calls ``get_inputs()`` on meta (recording how each input's
values are made), then runs the forward on meta under PyTorch's flop formulas. Nothing is
allocated and nothing random is drawn; a :class:`Probe` says what came out, or why not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from forgekernel import instance, kbsource
from forgekernel.metamode import Origin
from forgekernel.records import TaskSpec

Key = tuple[str, int | None]
STUB = TaskSpec(name="kernelbench", format="kernelbench", axes={}, inputs={}, workloads=())
"""What instance.model_at needs of a task while there is none yet (module mode train)."""


@dataclass
class Input:
    """One get_inputs() item: a tensor's shape and dtype, or a plain number."""

    shape: tuple[int, ...]
    dtype: str
    value: Any = None
    origin: Origin | None = None


@dataclass
class Probe:
    """The problem at one set of constants: what get_inputs(), Model and forward give."""

    ok: bool
    error: str = ""
    stage: str = ""
    init: tuple = ()
    inputs: list[Input] = field(default_factory=list)
    params: dict[str, tuple[int, ...]] = field(default_factory=dict)
    param_dtypes: dict[str, str] = field(default_factory=dict)
    outputs: list[tuple[tuple[int, ...], str]] | None = None
    forward_error: str = ""
    """Why the forward gave no outputs on meta (``ok`` is False then, but the inputs and
    parameters are known)."""
    data_dependent: bool = False
    """The forward failed because it reads values (``.item()``), which meta tensors lack."""
    flops: float = 0.0
    random: list[str] = field(default_factory=list)
    """Submodules whose output is random in training mode (Dropout with p > 0)."""
    geometry: tuple = ()
    """(submodule, attribute, value) of every layer's kernel size, stride, padding, dilation
    and output padding: values a trace freezes into the generated code."""

    def signature(self) -> tuple:
        """Everything a constant can change (for 'does this constant matter')."""
        ins = tuple((i.shape, i.dtype, repr(i.value), i.origin.text() if i.origin else "")
                    for i in self.inputs)
        outs = tuple(self.outputs) if self.outputs is not None else None
        return (self.init, ins, tuple(sorted(self.params.items())), outs)

    def shapes(self) -> list[tuple[int, ...]]:
        """Every tensor's shape: inputs, parameters and buffers, outputs."""
        out = [i.shape for i in self.inputs if i.value is None]
        out += list(self.params.values())
        out += [s for s, _ in self.outputs or []]
        return out

    def max_elements(self) -> int:
        return max((_numel(s) for s in self.shapes()), default=0)


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def _init_repr(values: Any) -> tuple:
    import torch

    out = []
    for v in values if isinstance(values, (list, tuple)) else [values]:
        out.append(f"tensor{tuple(v.shape)}" if isinstance(v, torch.Tensor) else repr(v))
    return tuple(out)


def _random_modules(model: Any) -> list[str]:
    import torch

    if not isinstance(model, torch.nn.Module):
        return []
    return [f"{name or 'Model'} ({type(m).__name__}(p={m.p:g}))" for name, m in model.named_modules()
            if isinstance(m, torch.nn.modules.dropout._DropoutNd) and m.p > 0]


GEOMETRY = ("kernel_size", "stride", "padding", "dilation", "output_padding")


def _geometry(model: Any) -> tuple:
    import torch

    if not isinstance(model, torch.nn.Module):
        return ()
    return tuple((name, attr, getattr(m, attr)) for name, m in model.named_modules()
                 for attr in GEOMETRY if isinstance(getattr(m, attr, None), (int, tuple)))


def _inputs(values: list[Any], mode: Any) -> list[Input]:
    import torch

    out = []
    for v in values:
        if isinstance(v, torch.Tensor):
            out.append(Input(tuple(int(d) for d in v.shape), str(v.dtype).removeprefix("torch."),
                             origin=mode.origin(v)))
        else:
            out.append(Input((), type(v).__name__, value=v))
    return out


def probe(module: ModuleType, overrides: dict[Key, int] | None = None, *, forward: bool = True) -> Probe:
    """The problem with ``overrides`` applied, on meta tensors (``forward=False``: inputs,
    init values and parameters only)."""
    import torch

    stage = "re-running the file with other constants"
    try:
        mod = kbsource.variant(module, overrides or {})
        stage = "get_init_inputs()"
        with instance.on_meta():
            init = list(mod.get_init_inputs())
        stage = "Model(*get_init_inputs())"
        model = instance.model_at(STUB, mod, meta=True)
        stage = "get_inputs()"
        with instance.on_meta(track=True, values=True) as mode:
            values = list(mod.get_inputs())
            inputs = _inputs(values, mode)
        values = [v.to("meta") if isinstance(v, torch.Tensor) else v for v in values]
        params = instance.named_tensors(model)
    except Exception as exc:  # any failure here means: not a valid problem at these values
        return Probe(ok=False, error=_one_line(exc), stage=stage)
    result = Probe(ok=True, init=_init_repr(init), inputs=inputs,
                   params={n: tuple(t.shape) for n, t in params},
                   param_dtypes={n: str(t.dtype).removeprefix("torch.") for n, t in params},
                   random=_random_modules(model), geometry=_geometry(model))
    if not forward:
        result.forward_error = "not run"
        return result
    return _forward(result, model, values)


def _forward(result: Probe, model: Any, values: list[Any]) -> Probe:
    """The forward on meta under the flop count; what it gives, or why not, into ``result``."""
    import torch

    from forgekernel.flops import FlopCount

    counter = FlopCount()
    try:
        with torch.no_grad(), instance.on_meta(), counter:
            outs = instance.outputs_of(model(*values))
    except Exception as exc:
        result.forward_error = _one_line(exc)
        result.data_dependent = "meta" in str(exc).lower()
        result.ok = False
        result.error, result.stage = result.forward_error, "the forward"
        return result
    if not all(isinstance(o, torch.Tensor) for o in outs):
        return Probe(ok=False, error="the forward returns something other than tensors",
                     stage="the forward")
    result.outputs = [(tuple(int(d) for d in o.shape), str(o.dtype).removeprefix("torch."))
                      for o in outs]
    result.flops = float(counter.total)
    return result
