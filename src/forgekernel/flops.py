"""Counting a call's flops with PyTorch's own formulas, without importing torch._dynamo.

``torch.utils.flop_counter.FlopCounterMode`` imports ``torch._dynamo`` when it first
dispatches (about 3 s, most of a dry-run). :class:`FlopCount` is the same count from the
same formula registry (matmul, bmm, addmm, convolutions, attention; everything else counts
zero), as a plain dispatch mode. It works on meta tensors: the formulas only read shapes.
"""

from __future__ import annotations

from typing import Any


class FlopCount:
    """``with FlopCount() as c: fn()`` then ``c.total`` (built lazily: no torch at import)."""

    def __new__(cls) -> Any:
        return _mode_class()()


def _mode_class() -> type:
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.flop_counter import flop_registry

    class _Count(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.total = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            formula = flop_registry.get(func._overloadpacket)
            if formula is not None:
                self.total += int(formula(*args, **kwargs, out_val=out))
            return out

    return _Count
