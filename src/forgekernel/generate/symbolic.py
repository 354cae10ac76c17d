"""Ops whose ATen form reads a workload's sizes as plain ints, so that tracing fixes them at
the example's values (the candidate's own size checks then refuse every other workload),
written with the same results in symbolic size arithmetic. Used while tracing by
:func:`forgekernel.generate.rewrites.traced_functions`.
"""

from __future__ import annotations

from typing import Any

TUPLE_ITEM = "_fk_int"
"""How :func:`varying_int_tuples` names the int attribute holding item i of a tuple
attribute (``size_fk_int0``); the candidate reads it back as ``size[0]``."""


def max_pool1d(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """1-D max pooling through the form that also returns indices: ATen's own (a CPU fast
    path at dilation 1) reads the length as an int, fixing it at the example's. ceil_mode as
    explicit padding (:func:`_ceil_padded`; indices along the length are unchanged by it)."""
    import torch

    if ceil_mode:
        x, kernel_size, stride, padding, dilation = _ceil_padded(x, 1, kernel_size, stride, padding, dilation)
    out = torch.max_pool1d_with_indices(x, kernel_size, stride, padding, dilation, False)
    return out if return_indices else out[0]


def max_pool_nd(n: int) -> Any:
    """2-D or 3-D max pooling with ceil_mode as explicit padding (:func:`_ceil_padded`)
    where no indices are asked for (they would count the padded width)."""
    def pool(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
             ceil_mode: bool = False, return_indices: bool = False) -> Any:
        import torch.nn.functional as F

        if ceil_mode and not return_indices:
            x, kernel_size, stride, padding, dilation = _ceil_padded(x, n, kernel_size, stride, padding, dilation)
            ceil_mode = False
        return (F.max_pool2d if n == 2 else F.max_pool3d)(x, kernel_size, stride, padding, dilation,
                                                          ceil_mode=ceil_mode, return_indices=return_indices)
    return pool


def avg_pool_nd(n: int) -> Any:
    """Average pooling with ceil_mode in symbolic arithmetic (ATen's shape function and
    Inductor branch on the example's sizes, as for max pooling): the window sums of the
    zero-padded input (padding and the ceil overhang) divided by each window's count, the
    padding counted or not as asked, the overhang never (ATen's rule)."""
    def pool(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
             count_include_pad: bool = True, divisor_override: Any = None) -> Any:
        import torch
        import torch.nn.functional as F

        fn = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}[n]
        if not ceil_mode:
            extra = () if n == 1 else (divisor_override,)
            return fn(x, kernel_size, stride, padding, ceil_mode, count_include_pad, *extra)
        k, s, p = as_tuple(n, kernel_size), as_tuple(n, stride, kernel_size), as_tuple(n, padding)
        pads, divisor = [], None
        for i in range(n):
            size = x.shape[x.dim() - n + i]
            out = _ceil_count(size, k[i], s[i], p[i], 1)
            pads = [p[i], p[i] + torch.sym_max(0, (out - 1) * s[i] + k[i] - (size + 2 * p[i]))] + pads
            start = torch.arange(out, device=x.device) * s[i] - p[i]
            end = (start + k[i]).clamp(max=size + p[i])
            count = end - start if count_include_pad else end.clamp(max=size) - start.clamp(min=0)
            count = count.reshape([-1] + [1] * (n - 1 - i))
            divisor = count if divisor is None else divisor * count
        xp = F.pad(x, pads)
        weight = torch.ones((xp.shape[-n - 1], 1, *k), dtype=x.dtype, device=x.device)
        conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[n]
        batched = x.dim() == n + 2
        sums = conv(xp if batched else xp.unsqueeze(0), weight, stride=s, groups=xp.shape[-n - 1])
        sums = sums if batched else sums.squeeze(0)
        return sums / (divisor_override if divisor_override else divisor.to(x.dtype))
    return pool


def take_along_dim(x: Any, indices: Any, dim: Any = None, *, out: Any = None) -> Any:
    """``torch.take_along_dim`` as a ``gather`` over both operands broadcast (all dimensions
    but ``dim``): ATen's composite form reads both shapes as ints, fixing every size it
    broadcasts at the example's. ``dim=None`` gathers from the flattened tensor."""
    import torch

    if out is not None or not isinstance(x, torch.Tensor) or not isinstance(indices, torch.Tensor):
        return NotImplemented
    if dim is None:
        return x.reshape(-1).gather(0, indices.reshape(-1))
    d = dim % x.dim()
    shape = list(torch.broadcast_shapes(tuple(x.shape[:d]) + (1,) + tuple(x.shape[d + 1:]),
                                        tuple(indices.shape[:d]) + (1,) + tuple(indices.shape[d + 1:])))
    to_x, to_i = list(shape), list(shape)
    to_x[d], to_i[d] = x.shape[d], indices.shape[d]
    return x.expand(to_x).gather(d, indices.expand(to_i))


def unflatten(x: Any, dim: Any, sizes: Any) -> Any:
    """``Tensor.unflatten`` as a ``reshape``: its Python form calls ``super().unflatten``, which
    Dynamo cannot trace under a torch function mode (the whole trace failed)."""
    if not isinstance(dim, int):
        return NotImplemented  # a named dimension: left to torch
    d = dim % x.dim()
    sizes = list(sizes)
    if -1 in sizes:
        known = 1
        for v in sizes:
            known = known * v if v != -1 else known
        sizes[sizes.index(-1)] = x.shape[d] // known
    return x.reshape(*x.shape[:d], *sizes, *x.shape[d + 1:])


def as_tuple(n: int, v: Any, default: Any = None) -> tuple:
    """A pooling or convolution argument (an int, or a list of one or n) as an n-tuple;
    ``default`` where it is None or empty (a stride defaults to the kernel size)."""
    v = default if v is None or (isinstance(v, (tuple, list)) and len(v) == 0) else v
    if isinstance(v, (tuple, list)):
        return tuple(v) * n if len(v) == 1 else tuple(v)
    return (v,) * n


def _ceil_count(size: Any, k: int, s: int, p: int, d: int) -> Any:
    """Pooling's window count in ceil_mode (windows start inside the input or its left
    padding), in symbolic arithmetic."""
    import torch

    span = d * (k - 1) + 1
    out = (size + 2 * p - span + s - 1) // s + 1
    return out - torch.sym_min(1, torch.sym_max(0, (out - 1) * s - (size + p) + 1))


def _ceil_padded(x: Any, n: int, kernel_size: Any, stride: Any, padding: Any, dilation: Any) -> tuple:
    """Pooling's ceil_mode as padding: the last n dimensions extended on the right (with the
    dtype's lowest value) so that the floor-mode windows are ceil_mode's, and the window
    arguments as n-tuples. The sizes stay symbolic; ATen's and Inductor's ceil_mode branch on
    the example's sizes (ceil equal to floor there took the floor formula for every size)."""
    import math

    import torch
    import torch.nn.functional as F

    k, p, d = as_tuple(n, kernel_size), as_tuple(n, padding), as_tuple(n, dilation)
    s = as_tuple(n, stride, k)
    pads = []
    for i in range(n):
        size, span = x.shape[x.dim() - n + i], d[i] * (k[i] - 1) + 1
        out = _ceil_count(size, k[i], s[i], p[i], d[i])
        pads = [0, torch.sym_max(0, (out - 1) * s[i] + span - (size + 2 * p[i]))] + pads
    low = -math.inf if x.dtype.is_floating_point else torch.iinfo(x.dtype).min
    return F.pad(x, pads, value=low), k, s, p, d


def tril_indices(row: Any, col: Any, offset: int = 0, **kwargs: Any) -> Any:
    """``torch.tril_indices`` over sizes read from a tensor: ATen takes them as plain ints
    (fixing them at the example's); the same pairs from a cumulative row count and a search
    stay symbolic."""
    return _triangle(True, row, col, offset, **kwargs)


def triu_indices(row: Any, col: Any, offset: int = 0, **kwargs: Any) -> Any:
    """``torch.triu_indices``, as :func:`tril_indices`."""
    return _triangle(False, row, col, offset, **kwargs)


def _triangle(lower: bool, row: Any, col: Any, offset: int, dtype: Any = None, device: Any = None,
              **_: Any) -> Any:
    import torch

    return triangle_pairs(lower, row, col, offset, device).to(dtype or torch.long)


def triangle_pairs(lower: bool, row: Any, col: Any, offset: int, device: Any = None) -> Any:
    """The (row, column) pairs of the lower (``j <= i + offset``) or upper (``j >= i +
    offset``) triangle in row-major order, from each row's first column and count."""
    import torch

    size = _tril_size(row, col, offset) if lower else row * col - _tril_size(row, col, offset - 1)
    i = torch.arange(row, device=device)
    start = torch.zeros_like(i) if lower else (i + offset).clamp(0, col)
    count = (i + offset + 1).clamp(0, col) if lower else col - start
    last = torch.cumsum(count, 0)
    k = torch.arange(size, device=device)
    r = torch.searchsorted(last, k, right=True)
    return torch.stack([r, start[r] + k - (last[r] - count[r])])


def _tril_size(row: Any, col: Any, offset: int) -> Any:
    """How many (i, j) with i < row, j < col and j <= i + offset: rows of none, a
    trapezoid of growing rows, then full rows (ATen's own count, in symbolic arithmetic)."""
    import torch

    first = torch.sym_min(col, 1 + offset) if offset > 0 else torch.sym_max(0, torch.sym_min(1, row + offset))
    last = torch.sym_max(0, torch.sym_min(col, row + offset))
    rows_all = torch.sym_max(0, torch.sym_min(row, row + offset))
    trapezoid = torch.sym_max(0, last - first + 1)
    some = torch.sym_min(row, 1) * torch.sym_min(col, 1)  # 0 when either size is 0
    return ((first + last) * trapezoid // 2 + torch.sym_max(0, rows_all - trapezoid) * col) * some


def varying_int_tuples(model: Any, other: Any) -> None:
    """Make a model's tuple (or list) attributes of ints that differ between two workloads'
    builds (``model`` and ``other``, the same class) read from int attributes, in place and
    for tracing: Dynamo makes a module's int attributes symbols but keeps the ints inside a
    tuple as constants, so an output size kept as ``self.size = (height, width)`` stayed the
    example's while the plain int attributes beside it varied. Modules of torch itself
    (a convolution's kernel size, say) are left alone."""
    import torch

    pairs = zip(model.modules(), other.modules(), strict=False) if isinstance(model, torch.nn.Module) else ()
    for mine, theirs in pairs:
        if type(mine).__module__.startswith("torch.") or type(mine).__qualname__ != type(theirs).__qualname__:
            continue
        varying = {name: value for name, value in vars(mine).items()
                   if isinstance(value, (tuple, list)) and value and all(type(v) is int for v in value)
                   and isinstance(getattr(theirs, name, None), type(value))
                   and len(getattr(theirs, name)) == len(value) and getattr(theirs, name) != value}
        if varying:
            _read_from_ints(mine, varying)


def _read_from_ints(module: Any, varying: dict[str, Any]) -> None:
    props = {}
    for name, value in varying.items():
        for i, v in enumerate(value):
            setattr(module, f"{name}{TUPLE_ITEM}{i}", v)
        del module.__dict__[name]

        def read(self: Any, name: str = name, n: int = len(value), kind: type = type(value)) -> Any:
            return kind([getattr(self, f"{name}{TUPLE_ITEM}{i}") for i in range(n)])
        props[name] = property(read)
    module.__class__ = type(type(module).__name__, (type(module),), props)
