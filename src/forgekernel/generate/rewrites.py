"""ATen ops that TorchInductor hands to ATen (or to a library), rewritten before lowering into
ops it lowers to Triton or into forge's library ops (:mod:`forgekernel.generate.library`),
and torch functions rewritten while the reference is traced (:func:`traced_functions`).

Each ATen rewrite is a decomposition for :func:`forgekernel.generate.inductor.lower`'s table:
it returns the op's results from other ops, or NotImplemented where it does not apply
(Inductor's own handling then stands).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from forgekernel.generate import symbolic


@contextlib.contextmanager
def traced_functions(recurrent: dict[Any, tuple[str, Any]] | None = None) -> Iterator[None]:
    """Torch functions rewritten while the reference is traced (Dynamo traces through an active
    TorchFunctionMode), where the function itself would fix a size of the workload as a
    constant: ``F.one_hot`` takes its class count as a plain int (a count read from a
    tensor's size would be fixed at the example's); the same comparison against an
    ``arange`` keeps it symbolic. The GRU and LSTM cells (``nn.GRUCell``, ``nn.LSTMCell``)
    and ``nn.Bilinear`` check their weights' sizes as plain ints in C++ (and Inductor leaves
    the bilinear form to ATen), and ``F.affine_grid`` builds its base grid with ``linspace``
    over the output's sizes as ints; the same computations written out stay symbolic. A
    recurrent layer over a whole sequence (``nn.RNN``, ``nn.GRU``, ``nn.LSTM``, which Dynamo
    traces with ``allow_rnn``) becomes forge's library op for it, a loop over the time steps
    at run time; ATen's own decomposition would unroll it, fixing the sequence length.
    ``F.max_pool1d`` (ATen's CPU fast path reads the length as an int) goes through the form
    with indices, pooling's ``ceil_mode`` is written out (ATen and Inductor branch on the
    example's sizes), ``torch.tril_indices``/``triu_indices`` (int sizes in ATen) are
    computed from a cumulative row count, ``take_along_dim`` (its composite broadcasts
    over int shapes) is a ``gather`` and ``Tensor.unflatten`` (whose ``super()`` call Dynamo
    cannot trace under the mode) a ``reshape``: :mod:`forgekernel.generate.symbolic`."""
    import torch
    import torch.nn.functional as F
    from torch.overrides import TorchFunctionMode

    cells, methods = _rewritten()
    from forgekernel.metamode import whole_sequence

    recurrent = recurrent or {}  # torch._VF.<kind> -> (kind, the library op standing in for it)

    class _Rewrites(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            if func is F.one_hot:
                x = args[0]
                classes = args[1] if len(args) > 1 else kwargs.get("num_classes", -1)
                if not isinstance(classes, int) or classes >= 0:  # -1: the count is data (left as is)
                    return (x.unsqueeze(-1) == torch.arange(classes, device=x.device)).to(torch.int64)
            func = methods.get(getattr(func, "__name__", None), func)
            if func in cells:
                done = cells[func](*args, **kwargs)
                if done is not NotImplemented:
                    return done
            if func in recurrent and not kwargs and whole_sequence(recurrent[func][0], args):
                return recurrent[func][1](*args)
            return func(*args, **kwargs)

    with _Rewrites(), _factories():
        yield


def _rewritten() -> tuple[dict[Any, Any], dict[str, Any]]:
    """The torch functions :func:`traced_functions` replaces, and those it also recognises
    by name (a method called on an intermediate tensor misses the table under Dynamo)."""
    import torch
    import torch.nn.functional as F

    cells = {torch.gru_cell: _gru_cell, torch.lstm_cell: _lstm_cell, torch.bilinear: _bilinear,
             F.affine_grid: _affine_grid, torch.affine_grid_generator: _affine_grid,
             torch.max_pool1d: symbolic.max_pool1d, F.max_pool1d: symbolic.max_pool1d,
             F.max_pool2d: symbolic.max_pool_nd(2),
             F.max_pool3d: symbolic.max_pool_nd(3), F.avg_pool1d: symbolic.avg_pool_nd(1),
             F.avg_pool2d: symbolic.avg_pool_nd(2), F.avg_pool3d: symbolic.avg_pool_nd(3),
             torch.take_along_dim: symbolic.take_along_dim, torch.unflatten: symbolic.unflatten}
    return cells, {"take_along_dim": torch.take_along_dim, "unflatten": torch.unflatten}


@contextlib.contextmanager
def _factories() -> Iterator[None]:
    """Factories no torch function mode sees under Dynamo, replaced on the module while
    tracing (and put back after)."""
    import torch

    factories = {"tril_indices": symbolic.tril_indices, "triu_indices": symbolic.triu_indices}
    saved = {name: getattr(torch, name) for name in factories}
    try:
        for name, fn in factories.items():
            setattr(torch, name, fn)
        yield
    finally:
        for name, fn in saved.items():
            setattr(torch, name, fn)


def _gru_cell(x: Any, hx: Any, w_ih: Any, w_hh: Any, b_ih: Any = None, b_hh: Any = None) -> Any:
    """ATen's gru_cell, its gates in the same order and form."""
    import torch
    import torch.nn.functional as F

    i_r, i_z, i_n = F.linear(x, w_ih, b_ih).chunk(3, 1)
    h_r, h_z, h_n = F.linear(hx, w_hh, b_hh).chunk(3, 1)
    reset, update = torch.sigmoid(i_r + h_r), torch.sigmoid(i_z + h_z)
    new = torch.tanh(i_n + reset * h_n)
    return (hx - new) * update + new


def _lstm_cell(x: Any, hx: Any, w_ih: Any, w_hh: Any, b_ih: Any = None, b_hh: Any = None) -> Any:
    """ATen's lstm_cell: (h, c) from the four gates."""
    import torch
    import torch.nn.functional as F

    h, c = hx
    gates = F.linear(x, w_ih, b_ih) + F.linear(h, w_hh, b_hh)
    i, f, g, o = gates.chunk(4, 1)
    cy = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(cy), cy


def _bilinear(x1: Any, x2: Any, weight: Any, bias: Any = None) -> Any:
    """ATen's bilinear, y[..., k] = x1 W_k x2 + b_k: one product of x1 with every W_k at
    once, then each row's dot product with x2."""
    out, in1, in2 = weight.shape
    rows = x1.reshape(-1, in1)
    a = rows @ weight.permute(1, 0, 2).reshape(in1, out * in2)
    y = (a.view(rows.shape[0], out, in2) * x2.reshape(rows.shape[0], 1, in2)).sum(-1)
    y = y if bias is None else y + bias
    return y.view(*x1.shape[:-1], out)


def _affine_grid(theta: Any, size: Any, align_corners: Any = None) -> Any:
    """ATen's affine_grid (2-D and 3-D): each output position's normalised coordinates
    (x along the last dimension, then y, then z), mapped by the batch's affine matrices,
    element-wise; the coordinates from ``arange`` so the sizes stay symbolic."""
    import torch

    spatial = list(size[2:])
    nd = len(spatial)

    def axis(j: int) -> Any:  # coordinate j varies along spatial dimension nd - 1 - j
        steps = spatial[nd - 1 - j]
        i = torch.arange(steps, device=theta.device, dtype=theta.dtype)
        if steps <= 1:
            c = i * 0
        elif align_corners:
            c = i * (2.0 / (steps - 1)) - 1
        else:
            c = (i * 2 + 1) / steps - 1
        shape = [1] * (nd + 1)
        shape[nd - j] = steps
        return c.view(shape)

    coords = [axis(j) for j in range(nd)]
    lead = (theta.shape[0],) + (1,) * nd
    out = [theta[:, k, nd].view(lead) + sum(theta[:, k, j].view(lead) * coords[j] for j in range(nd))
           for k in range(nd)]
    return torch.stack([o.expand(theta.shape[0], *spatial) for o in out], dim=-1)


def select_sorted(sort: Any, x: Any, dim: int, keepdim: bool, rank: Any) -> Any:
    """median (``rank`` None: the lower middle, or a NaN when the row holds one, as ATen's
    median gives) or kthvalue (``rank`` = k - 1) along ``dim``, as (values, indices) picked from
    forge's sort of the row (NaNs sort last). Indices among equal values may differ from
    ATen's, which does not promise one."""
    import torch

    if x.dim() == 0:
        return NotImplemented
    dim = dim % x.dim()
    values, indices = sort(x, dim, False)
    n = x.shape[dim]
    if rank is None:
        middle, last = values.select(dim, (n - 1) // 2), values.select(dim, n - 1)
        nan = torch.isnan(last) if x.is_floating_point() else torch.zeros_like(last, dtype=torch.bool)
        value = torch.where(nan, last, middle)
        index = torch.where(nan, indices.select(dim, n - 1), indices.select(dim, (n - 1) // 2))
    else:
        value, index = values.select(dim, rank), indices.select(dim, rank)
    if keepdim:
        value, index = value.unsqueeze(dim), index.unsqueeze(dim)
    return value, index


def embedding_bag_as_index_add(weight: Any, indices: Any, offsets: Any, scale_grad_by_freq: bool = False,
                                mode: int = 0, sparse: bool = False, per_sample_weights: Any = None,
                                include_last_offset: bool = False, padding_idx: int = -1) -> Any:
    """EmbeddingBag's sum and mean (which Inductor hands to ATen) as plain tensor ops Inductor
    lowers: each index's bag found by ``bucketize`` in the offsets, the gathered rows (scaled
    by the per-sample weights, padding rows zeroed) added into their bags by ``index_add``, a
    mean divided by the bag's count (an empty bag is zeros, as in ATen). The max mode and 2-D
    indices are left to ATen (NotImplemented)."""
    import torch

    if mode not in (0, 1) or indices.dim() != 1:
        return NotImplemented
    bags = offsets.shape[0] - (1 if include_last_offset else 0)
    where = torch.arange(indices.shape[0], device=indices.device, dtype=offsets.dtype)
    bag = torch.bucketize(where, offsets[:bags], right=True) - 1
    rows = weight[indices]
    keep = torch.ones_like(indices, dtype=weight.dtype) if padding_idx < 0 else (indices != padding_idx).to(weight.dtype)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.unsqueeze(-1).to(weight.dtype)
    rows = rows * keep.unsqueeze(-1)
    out = torch.zeros((bags, weight.shape[1]), dtype=weight.dtype, device=weight.device).index_add(0, bag, rows)
    count = torch.zeros((bags,), dtype=weight.dtype, device=weight.device).index_add(0, bag, keep)
    if mode == 1:
        out = out / count.clamp(min=1).unsqueeze(-1)
    size = count.to(torch.int64)
    return out, bag, size, torch.zeros_like(size)


def histc_as_index_add(x: Any, bins: int = 100, min: Any = 0, max: Any = 0) -> Any:  # noqa: A002
    """histc over a given range (which Inductor hands to ATen) as each value's bin, computed as
    ATen computes it (the value at the top edge in the last bin, values outside the range
    counted nowhere), added into the counts by ``index_add``. A range of 0 to 0 (the data's own
    minimum and maximum) is left to ATen (NotImplemented)."""
    import torch

    lo, hi = float(min), float(max)
    if lo == hi or not x.is_floating_point():
        return NotImplemented
    flat = x.reshape(-1)
    inside = (flat >= lo) & (flat <= hi)
    where = ((flat - lo) * bins / (hi - lo)).to(torch.int64).clamp(0, bins - 1)
    counts = torch.zeros((bins,), dtype=torch.float32, device=x.device).index_add(0, where, inside.float())
    return counts.to(x.dtype)  # counted in float32: a half-precision count stops at 2048


def adaptive_avg_pool_as_matmul(x: Any, output_size: Any) -> Any:
    """2-D adaptive average pooling (which Inductor lowers only with the input's sizes fixed)
    as two products with pooling matrices, ``P_h @ x @ P_w^T`` in float32, where row ``i`` of
    ``P`` averages ATen's window ``[floor(i*H/O), ceil((i+1)*H/O))``. A global pool (1x1) is
    left to Inductor (a mean)."""
    import torch

    out_h, out_w = (list(output_size) * 2)[:2] if len(output_size) == 1 else list(output_size)
    if out_h == 1 and out_w == 1:
        return NotImplemented

    def pooling(size: Any, out: int) -> Any:
        i = torch.arange(out, device=x.device)
        start, end = (i * size) // out, ((i + 1) * size + out - 1) // out
        at = torch.arange(size, device=x.device)
        inside = (at[None, :] >= start[:, None]) & (at[None, :] < end[:, None])
        return inside.float() / (end - start)[:, None].float()

    rows, cols = pooling(x.shape[-2], out_h), pooling(x.shape[-1], out_w)
    return torch.matmul(rows, torch.matmul(x.float(), cols.t())).to(x.dtype)


AVG_POOL_WINDOW_MAX = 25
"""Inductor lowers average pooling itself up to this many window elements (or when the
window equals the stride) and calls ATen beyond: forge then writes the pooling as a
depthwise convolution with a constant weight, which its own Triton convolution computes."""


def avg_pool_as_conv(conv: Any, dim: int, x: Any, kernel_size: Any, stride: Any = (),
                      padding: Any = 0, ceil_mode: bool = False, count_include_pad: bool = True,
                      divisor_override: Any = None) -> Any:
    """Average pooling as ``conv(x, 1/k**dim, groups=channels)`` where Inductor would fall
    back to ATen (a window over AVG_POOL_WINDOW_MAX elements that differs from the stride);
    exact when every window divides by its full size (padding counted, no ceil mode, no
    divisor override). NotImplemented otherwise: Inductor's own handling stands."""
    import math

    import torch

    k = list(symbolic.as_tuple(dim, kernel_size))
    st, pad = list(symbolic.as_tuple(dim, stride, k)), list(symbolic.as_tuple(dim, padding))
    if (ceil_mode or not count_include_pad or divisor_override is not None
            or math.prod(k) <= AVG_POOL_WINDOW_MAX or k == st):
        return NotImplemented
    channels = x.shape[-dim - 1]
    weight = torch.full((channels, 1, *k), 1.0 / math.prod(k), dtype=x.dtype, device=x.device)
    batched = x.dim() == dim + 2
    y = conv(x if batched else x.unsqueeze(0), weight, None, st, pad, [1] * dim, False, [0] * dim,
             channels)
    return y if batched else y.squeeze(0)


def glu_halves(x: Any, dim: int = -1) -> Any:
    """GLU as the product of the two halves' narrow views (ATen's result): the reference
    decomposition splits with ``tensor_split``, which fixes the halved size at the example's."""
    import torch

    half = x.shape[dim] // 2
    return x.narrow(dim, 0, half) * torch.sigmoid(x.narrow(dim, half, half))


def cdist_as_reduction(x1: Any, x2: Any, p: float, compute_mode: Any = None) -> Any:
    """``torch.cdist``'s direct form (every p but the Euclidean one on large inputs, which
    ``torch.cdist`` itself turns into matmuls) as a reduction over the feature axis of the
    broadcast differences, which Inductor fuses into one kernel without materialising them:
    p = 0 counts the differing features, p = inf takes the largest difference, others sum
    ``|d| ** p`` and take the p-th root."""
    import math

    import torch

    d = (x1.unsqueeze(-2) - x2.unsqueeze(-3)).abs()
    if p == 0:
        return (d != 0).sum(-1).to(x1.dtype)
    if math.isinf(p):
        return d.amax(-1)
    if p == 1:
        return d.sum(-1)
    if p == 2:
        return torch.sqrt((d * d).sum(-1))
    return d.pow(p).sum(-1).pow(1.0 / p)
