"""Running reference code on the meta device, and reading how get_inputs() makes its values.

:class:`MetaMode` is a torch function mode that keeps a reference on the meta device even
where it names another one (``torch.randn(..., device="cuda")``, ``x.cuda()``,
``x.to("cuda")``), so planning never allocates and never needs a GPU. With ``track=True``
it also records where each tensor came from: a random factory (``torch.rand`` is uniform
in [0, 1), ``torch.randn`` normal(0, 1), ``torch.randint`` integers in [low, high)), then
scalar shifts and scales (kept exact), casts (kept), or anything else (then the values are
described as what get_inputs() computes, in words).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

_DEVICE_FREE = {"cuda", "cpu", "pin_memory"}
_KEEP = {"float", "half", "double", "bfloat16", "to", "contiguous", "clone", "detach", "type",
         "requires_grad_", "cpu", "cuda", "bool"}
_SCALE = {"mul", "__mul__", "__rmul__", "mul_", "div", "__truediv__", "true_divide", "div_"}
_SHIFT = {"add", "__add__", "__radd__", "add_", "sub", "__sub__", "sub_", "__rsub__", "rsub"}
FACTORIES = {"rand": "uniform", "rand_like": "uniform", "randn": "normal", "randn_like": "normal",
             "randint": "randint", "randint_like": "randint"}
FIXED = {"zeros", "ones", "full", "arange", "linspace", "eye", "tensor", "as_tensor", "empty",
         "zeros_like", "ones_like", "full_like", "empty_like", "from_numpy"}
"""Factories of values that are not random: described by name."""


@dataclass(frozen=True)
class Origin:
    """How a tensor's values were made: a distribution kind with its numbers, or words."""

    kind: str  # uniform, normal, randint, custom
    low: float | None = None
    high: float | None = None
    mean: float = 0.0
    std: float = 1.0
    steps: tuple[str, ...] = field(default_factory=tuple)
    source: str = ""

    def text(self) -> str:
        """One line for task.toml and prompts."""
        if self.kind == "normal":
            base = f"normal(mean {self.mean:g}, std {self.std:g})"
        elif self.kind in ("uniform", "randint"):
            what = "uniform in" if self.kind == "uniform" else "integers in"
            base = f"{what} [{self.low:g}, {self.high:g})"
        else:
            base = self.source
        return base + (f", then {', '.join(self.steps)}" if self.steps else "")


def _is_meta_tensor(x: Any) -> bool:
    import torch

    return isinstance(x, torch.Tensor) and x.device.type == "meta"


def _device_like(x: Any) -> bool:
    import torch

    return isinstance(x, (str, torch.device)) or (isinstance(x, int) and not isinstance(x, bool))


def _name(func: Any) -> str:
    return getattr(func, "__name__", str(func))


READS = {"item": None, "__int__": int, "__index__": int, "__float__": float, "__bool__": bool}
"""A tensor's value read as a Python number: on meta (there is none), :class:`MetaMode` with
``values`` answers 0 (False) instead of failing."""


class MetaMode:
    """A TorchFunctionMode (built lazily so importing this module needs no torch). ``values``:
    reading a meta tensor's value gives 0 (for get_inputs(), whose shapes seldom depend on the
    values it draws: token positions for image patches, say; the forward never gets this)."""

    def __new__(cls, track: bool = False, values: bool = False) -> Any:
        return _mode_class()(track, values)


def _zero(name: str, t: Any) -> Any:
    import torch

    zero = False if t.dtype == torch.bool else 0.0 if t.dtype.is_floating_point else 0
    return (READS[name] or type(zero))(zero)


def _mode_class() -> type:
    from torch.overrides import TorchFunctionMode

    class _Meta(TorchFunctionMode):
        def __init__(self, track: bool, values: bool) -> None:
            super().__init__()
            self.track, self.values = track, values
            self.origins: dict[int, Origin] = {}
            self.keep: list[Any] = []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            name = _name(func)
            if self.values and name in READS and args and _is_meta_tensor(args[0]):
                return _zero(name, args[0])
            if name in RECURRENT and not kwargs and args and _is_meta_tensor(args[0]) \
                    and whole_sequence(name, args):  # ATen's meta run steps through the sequence
                return recurrent_outputs(name, *args)
            args, kwargs, same = _on_meta(name, args, dict(kwargs or {}))
            out = args[0] if same else func(*args, **kwargs)
            return self._note(out, name, args, kwargs)

        def origin(self, t: Any) -> Origin | None:
            return self.origins.get(id(t))

        def _note(self, out: Any, name: str, args: tuple, kwargs: dict) -> Any:
            import torch

            if not self.track or not isinstance(out, torch.Tensor):
                return out
            made = _made(name, args, kwargs)
            if made is None:
                src = next((self.origins[id(a)] for a in args if isinstance(a, torch.Tensor)
                            and id(a) in self.origins), None)
                if src is None:
                    return out
                made = _derived(src, name, args, self.origins)
            self.origins[id(out)] = made
            self.keep.append(out)
            return out

    return _Meta


RECURRENT = ("rnn_tanh", "rnn_relu", "gru", "lstm")
"""Recurrent layers over a sequence (``torch._VF.<kind>``, what nn.RNN/GRU/LSTM call)."""


def whole_sequence(kind: str, args: Any) -> bool:
    """Whether a recurrent call is the padded-input overload (input, hx, params, has_biases,
    num_layers, dropout, train, bidirectional, batch_first), not a packed sequence's."""
    if len(args) != 9:
        return False
    return isinstance(args[1], (list, tuple)) if kind == "lstm" else isinstance(args[2], (list, tuple))


def recurrent_outputs(kind: str, x: Any, hx: Any, params: Any, has_biases: bool, num_layers: int,
                      dropout: float, train: bool, bidirectional: bool, batch_first: bool) -> Any:
    """Empty outputs of a recurrent layer over a sequence, (output, h_n[, c_n]), from the
    shapes alone: on meta, ATen's own steps through every time step, slower than the real layer
    on the CPU, and converting a 512-step LSTM problem timed out."""
    h0 = hx[0] if kind == "lstm" else hx
    hidden = params[1].shape[1]
    out = x.new_empty((x.shape[0], x.shape[1], (2 if bidirectional else 1) * hidden))
    states = [h0.new_empty(h0.shape)] + ([hx[1].new_empty(hx[1].shape)] if kind == "lstm" else [])
    return (out, *states)


def _on_meta(name: str, args: tuple, kwargs: dict) -> tuple[tuple, dict, bool]:
    """The call's arguments with every device made meta; True when the call is a device move
    of a meta tensor (``x.cuda()``), which then returns ``x`` itself."""
    if "device" in kwargs:
        kwargs["device"] = "meta"
    if args and _is_meta_tensor(args[0]):
        if name in _DEVICE_FREE:
            return args, kwargs, True
        if name == "to":
            args = (args[0], *[a for a in args[1:] if not _device_like(a)])
    return args, kwargs, False


def _made(name: str, args: tuple, kwargs: dict) -> Origin | None:
    """The origin of a tensor a factory just made (None for non-factories)."""
    kind = FACTORIES.get(name)
    if kind is None:
        return Origin("custom", source=f"torch.{name}(...)") if name in FIXED else None
    if kind == "uniform":
        return Origin("uniform", low=0.0, high=1.0)
    if kind == "normal":
        return Origin("normal")
    ints = [a for a in args if isinstance(a, int) and not isinstance(a, bool)]
    if name == "randint_like":
        ints = ints[:2]
    low = kwargs.get("low", ints[0] if len(ints) >= 2 else 0)
    high = kwargs.get("high", ints[1] if len(ints) >= 2 else ints[0] if ints else None)
    if high is None:
        return Origin("custom", source=f"torch.{name}")
    return Origin("randint", low=float(low), high=float(high))


def _scalar(args: tuple) -> float | None:
    others = [a for a in args[1:] if not hasattr(a, "shape")]
    nums = [a for a in others if isinstance(a, (int, float)) and not isinstance(a, bool)]
    return float(nums[0]) if len(args) == 2 and len(nums) == 1 else None


def _derived(src: Origin, name: str, args: tuple, origins: dict[int, Origin]) -> Origin:
    """``src`` after ``name``: exact for casts and scalar scales/shifts of a continuous
    distribution, else the same origin with the step named."""
    if name in _KEEP:
        if name == "bool" and src.kind == "randint" and (src.low, src.high) == (0.0, 2.0):
            return src
        if name != "bool":
            return src
    c = _scalar(args) if id(args[0]) in origins else None
    if c is not None and src.kind in ("uniform", "normal") and not src.steps:
        if name in _SCALE:
            f = c if "mul" in name else 1.0 / c if c else None
            if f is not None:
                return _scaled(src, f)
        if name in _SHIFT:
            sign = -1.0 if name in ("sub", "__sub__", "sub_") else 1.0
            if name in ("__rsub__", "rsub"):
                return _shifted(_scaled(src, -1.0), c)
            return _shifted(src, sign * c)
    return replace(src, steps=(*src.steps, name.strip("_")))


def _scaled(o: Origin, f: float) -> Origin:
    if o.kind == "normal":
        return replace(o, mean=o.mean * f, std=o.std * abs(f))
    lo, hi = sorted((o.low * f, o.high * f))
    return replace(o, low=lo, high=hi)


def _shifted(o: Origin, c: float) -> Origin:
    if o.kind == "normal":
        return replace(o, mean=o.mean + c)
    return replace(o, low=o.low + c, high=o.high + c)
