"""Each peer as a callable of the workload's inputs (worker side: imports torch and the
peers' code)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from forgekernel import exprs
from forgekernel.compare.peers import PeerSpec


class NotInstalled(Exception):  # noqa: N818 - a state, shown as the peer's row
    """The peer's library is not importable here."""


def resolve(call: str) -> Callable[..., Any]:
    """``module.path:function`` (the function may be dotted: ``Class.apply``)."""
    module_name, attr = call.split(":", 1)
    try:
        obj: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        top = module_name.split(".")[0]
        if exc.name and (exc.name == top or module_name.startswith(exc.name + ".")):
            raise NotInstalled(f"{exc.name} is not installed") from None
        raise
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise NotInstalled(f"{module_name} has no {attr} (another version of the library?)")
        obj = getattr(obj, part)
    if not callable(obj):
        raise TypeError(f"{call} is not callable")
    return obj


def _value(value: Any, named: dict[str, Any], axes: dict[str, int]) -> Any:
    if isinstance(value, list):
        return [_value(v, named, axes) for v in value]
    if isinstance(value, str) and value.startswith("="):
        return exprs.evaluate(value[1:], axes)
    if isinstance(value, str) and value in named:
        return named[value]
    return value


def library_call(spec: PeerSpec, input_names: list[str], axes: dict[str, int]) -> Callable[..., Any]:
    """``f(*inputs)`` calling the spec's function with its inputs and arguments."""
    fn = resolve(spec.call)
    chosen = list(spec.inputs) if spec.inputs is not None else list(input_names)

    def call(*inputs: Any) -> Any:
        named = dict(zip(input_names, inputs, strict=True))
        pos = [named[n] for n in chosen]
        if isinstance(spec.args, dict):
            return fn(*pos, **{k: _value(v, named, axes) for k, v in spec.args.items()})
        return fn(*pos, *(_value(v, named, axes) for v in spec.args))
    return call


def compiled(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``torch.compile(fn)`` for one shape per workload; dynamo's recompile limit raised so a
    task's many workloads never fall back to eager silently (still timed as "compile")."""
    import torch

    cfg = torch._dynamo.config
    for name in ("recompile_limit", "cache_size_limit"):
        if isinstance(getattr(cfg, name, None), int):
            setattr(cfg, name, max(getattr(cfg, name), 64))
    return torch.compile(fn, dynamic=False)


def copy_call(nbytes: int, device: str) -> Callable[[], Any]:
    """``dst.copy_(src)`` reading and writing ``nbytes`` in all (half each way)."""
    import torch

    half = max(1, nbytes // 2)
    src = torch.empty(half, dtype=torch.uint8, device=device).fill_(1)
    dst = torch.empty_like(src)
    return lambda: dst.copy_(src)


def read_call(nbytes: int, device: str) -> Callable[[], Any]:
    """``torch.sum`` over float32 elements filling ``nbytes``: every input byte read once,
    four bytes written."""
    import torch

    src = torch.ones(max(1, nbytes // 4), dtype=torch.float32, device=device)
    return lambda: torch.sum(src)


def nbytes(values: Any) -> int:
    """Bytes of every tensor in ``values`` (a tensor, or a list/tuple of them)."""
    import torch

    if isinstance(values, torch.Tensor):
        return values.numel() * values.element_size()
    if isinstance(values, (list, tuple)):
        return sum(nbytes(v) for v in values)
    return 0


def clone(values: list[Any]) -> list[Any]:
    import torch

    return [v.clone() if isinstance(v, torch.Tensor) else v for v in values]
