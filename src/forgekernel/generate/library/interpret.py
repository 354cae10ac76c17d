"""forge library interpret: what Inductor's kernels need under the Triton CPU interpreter.

Pasted after the runtime into every generated candidate. On a GPU it only names libdevice
and the scan; under the interpreter (``RT_INTERPRET``, set by the runtime) it supplies
libdevice's elementwise math computed with NumPy, Inductor's reduction helpers over whole
blocks, and a scan that steps along the scanned axis with whole slices (the interpreter's
own ``tl.reduce`` and ``tl.associative_scan`` call a combine function once per element).
Kernels call ``_rt_associative_scan`` where Inductor wrote ``tl.associative_scan``.
"""

import math

import triton.language as tl


def _rt_wrap(data, like, dtype=None):
    from triton.runtime.interpreter import TensorHandle

    scalar = dtype if dtype is not None else like.dtype
    handle = TensorHandle(data, scalar)
    shape = list(data.shape)
    # a scalar stays a scalar (the interpreter holds one as a 1-element array: inside a scan's
    # combine function, say), else ``scalar | block`` mixes a bool with a float splat
    one = isinstance(like, tl.core.tensor) and not like.type.is_block()
    ty = tl.block_type(scalar, shape) if shape and not one else scalar
    return tl.core.tensor(handle, ty)


def _rt_np(x):
    import numpy as np

    if isinstance(x, tl.core.tensor):
        return x.handle.data
    return np.asarray(x)


def _rt_unary(fn, out_bool=False):
    def apply(x):
        import numpy as np

        data = _rt_np(x)
        with np.errstate(all="ignore"):
            out = fn(data)
        if out_bool:
            return _rt_wrap(out.astype(np.bool_), x, tl.int1)
        return _rt_wrap(out.astype(data.dtype), x)
    return apply


def _rt_binary(fn):
    def apply(x, y):
        import numpy as np

        a, b = _rt_np(x), _rt_np(y)
        like = x if isinstance(x, tl.core.tensor) else y
        with np.errstate(all="ignore"):
            out = fn(a, b)
        return _rt_wrap(out.astype(_rt_np(like).dtype), like)
    return apply


def _rt_vectorize(fn):
    import numpy as np

    return np.vectorize(fn, otypes=[np.float64])


def _rt_erfinv(v):
    import numpy as np
    import torch

    return torch.special.erfinv(torch.from_numpy(np.ascontiguousarray(v, dtype=np.float64))).numpy()


def _rt_interpret_libdevice():
    """The libdevice functions Inductor emits, computed with NumPy under the interpreter."""
    import types

    import numpy as np

    unary = {"exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log,
             "log2": np.log2, "log10": np.log10, "log1p": np.log1p, "sqrt": np.sqrt,
             "rsqrt": lambda v: 1.0 / np.sqrt(v), "tanh": np.tanh, "sin": np.sin,
             "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
             "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "asinh": np.arcsinh,
             "acosh": np.arccosh, "atanh": np.arctanh, "floor": np.floor, "ceil": np.ceil,
             "trunc": np.trunc, "nearbyint": np.rint, "rint": np.rint, "round": np.round,
             "abs": np.abs, "fabs": np.abs, "erf": _rt_vectorize(math.erf),
             "erfc": _rt_vectorize(math.erfc), "lgamma": _rt_vectorize(math.lgamma),
             "sigmoid": lambda v: 1.0 / (1.0 + np.exp(-v)), "cbrt": np.cbrt, "llrint": np.rint,
             "erfinv": _rt_erfinv, "fast_tanhf": np.tanh}
    funcs = {name: _rt_unary(fn) for name, fn in unary.items()}
    funcs.update({name: _rt_unary(fn, out_bool=True) for name, fn in {
        "isnan": np.isnan, "isinf": np.isinf, "signbit": np.signbit,
        "isfinited": np.isfinite}.items()})
    funcs.update({name: _rt_binary(fn) for name, fn in {
        "pow": np.power, "atan2": np.arctan2, "fmod": np.fmod, "hypot": np.hypot,
        "copysign": np.copysign, "nextafter": np.nextafter, "fmax": np.fmax, "fmin": np.fmin,
        "remainder": np.remainder, "ldexp": np.ldexp}.items()})
    return types.SimpleNamespace(**funcs)


def _rt_reduced(data, like):
    """A reduction's NumPy result as a Triton value of ``like``'s element type."""
    import numpy as np
    from triton.runtime.interpreter import TensorHandle

    scalar = like.dtype.scalar if hasattr(like.dtype, "scalar") else like.dtype
    data = np.asarray(data)
    if data.shape:
        return _rt_wrap(data.astype(_rt_np(like).dtype), like, scalar)
    return tl.core.tensor(TensorHandle(data.reshape(1).astype(_rt_np(like).dtype), scalar), scalar)


def _rt_axis(dim):
    return int(dim.value if isinstance(dim, tl.constexpr) else dim)


def _rt_interpret_reductions():
    """Inductor's reduction helpers computed with NumPy over the whole block: the
    interpreter's ``tl.reduce`` with a combine function steps element by element in Python,
    which makes a max, min or Welford reduction minutes slow at smoke sizes. Same results:
    NaN wins a max or min, the lowest index wins a tie."""
    import numpy as np

    def extreme(pick):
        def reduce(a, dim):
            with np.errstate(all="ignore"):
                return _rt_reduced(pick(_rt_np(a), axis=_rt_axis(dim)), a)
        return reduce

    def with_index(pick):
        def reduce(value, index, dim):
            v, i, ax = _rt_np(value), _rt_np(index), _rt_axis(dim)
            with np.errstate(all="ignore"):
                best = pick(v, axis=ax, keepdims=True)
                ties = v == best
                if v.dtype.kind == "f":
                    ties |= np.isnan(v) & np.isnan(best)
            top = np.iinfo(i.dtype).max if i.dtype.kind in "iu" else np.inf
            return (_rt_reduced(np.squeeze(best, ax), value),
                    _rt_reduced(np.where(ties, i, top).min(axis=ax), index))
        return reduce

    def welford(mean, m2, weight, dim):
        mu, q, w = (_rt_np(t).astype(np.float64) for t in (mean, m2, weight))
        ax = _rt_axis(dim)
        with np.errstate(all="ignore"):
            total = w.sum(axis=ax)
            avg = np.where(total == 0, 0.0, (w * mu).sum(axis=ax) / np.where(total == 0, 1, total))
            spread = q.sum(axis=ax) + (w * (mu - np.expand_dims(avg, ax)) ** 2).sum(axis=ax)
        return _rt_reduced(avg, mean), _rt_reduced(spread, m2), _rt_reduced(total, weight)

    return (extreme(np.max), extreme(np.min), extreme(np.any), extreme(np.prod),
            with_index(np.max), with_index(np.min), welford)

def _rt_interpret_scan():
    """``tl.associative_scan`` stepping along the scanned axis with whole slices: the
    interpreter's own calls the combine function once per element, which makes a
    logcumsumexp minutes slow at smoke sizes; here it runs once per position of the axis."""
    import numpy as np

    def scan(inputs, axis, combine_fn, reverse=False):
        single = isinstance(inputs, tl.core.tensor)
        tensors = (inputs,) if single else tuple(inputs)
        ax = _rt_axis(axis)
        datas = [np.moveaxis(_rt_np(t), ax, 0) for t in tensors]
        outs = [np.empty_like(d) for d in datas]
        n = datas[0].shape[0]
        fn = getattr(combine_fn, "fn", combine_fn)
        acc = None
        for i in (range(n - 1, -1, -1) if reverse else range(n)):
            cur = tuple(_rt_wrap(np.ascontiguousarray(d[i:i + 1]), t) for d, t in zip(datas, tensors, strict=True))
            if acc is not None:
                got = fn(*acc, *cur)
                cur = (got,) if isinstance(got, tl.core.tensor) else tuple(got)
            acc = cur
            for out, value in zip(outs, acc, strict=True):
                out[i:i + 1] = _rt_np(value)
        results = tuple(_rt_wrap(np.moveaxis(o, 0, ax), t) for o, t in zip(outs, tensors, strict=True))
        return results[0] if single else results
    return scan


if RT_INTERPRET:  # noqa: F821  (the runtime, pasted before this file, sets it)
    libdevice = _rt_interpret_libdevice()
    (_th_max2, _th_min2, _th_any, _th_prod, _th_max_with_index, _th_min_with_index,
     _th_welford) = _rt_interpret_reductions()
    _rt_associative_scan = _rt_interpret_scan()
else:
    from triton.language.extra import libdevice  # noqa: F401

    _rt_associative_scan = tl.associative_scan
