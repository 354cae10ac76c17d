"""Lower reference functions through Inductor, assemble candidates, run them at other shapes.

Run as a script under TRITON_INTERPRET=1 (tests/test_generate.py does): for each named
case it lowers the reference at its example shapes, writes the candidate, imports it, and
prints one JSON line per shape with the largest error against the reference in float64.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F

from forgekernel.generate.assemble import Entry, render
from forgekernel.generate.inductor import lower_sizes


def _rand(*shape):
    return torch.randn(*shape)


def _rope(q, freqs):
    angles = torch.outer(torch.arange(q.shape[1], dtype=torch.float32), freqs)
    qc = torch.view_as_complex(q.reshape(*q.shape[:-1], -1, 2))
    return torch.view_as_real(qc * torch.polar(torch.ones_like(angles), angles)[None, :, None, :]).flatten(3)


def _complex_mix(x, y):
    a, b = torch.view_as_complex(x), torch.view_as_complex(y)
    c = (a / (b + 2)).conj() * torch.exp(a * 0.1) - b.abs() + a.unsqueeze(0).sum(1)
    return torch.view_as_real(c), c.abs()


CASES = {
    # name: (function, parameter names, example args maker, shapes to check: args makers)
    "pointwise": (lambda x, y: F.gelu(x) * torch.sigmoid(y) + x, ("x", "y"),
                  lambda m, n: (_rand(m, n), _rand(m, n)), [(3, 5), (1, 1), (7, 130)]),
    "broadcast": (lambda x, b: torch.tanh(x + b) * 0.5, ("x", "b"),
                  lambda m, n: (_rand(m, n), _rand(n)), [(4, 6), (1, 9), (33, 17)]),
    "softmax3d": (lambda x: torch.softmax(x, dim=-1), ("x",),
                  lambda m, n: (_rand(2, m, n),), [(3, 10), (1, 1), (5, 300)]),
    "outer": (lambda x: (x.sum(0), x.amax(0)), ("x",),
              lambda m, n: (_rand(m, n),), [(6, 4), (1, 3), (70, 9)]),
    "varmean": (lambda x: F.layer_norm(x, x.shape[-1:]), ("x",),
                lambda m, n: (_rand(m, n),), [(3, 16), (2, 1), (9, 77)]),
    "argmax": (lambda x: torch.argmax(x, dim=1), ("x",),
               lambda m, n: (_rand(m, n),), [(4, 7), (1, 1), (12, 100)]),
    "scan": (lambda x: (torch.cumsum(x, 1), torch.cumprod(x * 0.1 + 1, 1)), ("x",),
             lambda m, n: (_rand(m, n),), [(3, 8), (1, 1), (5, 61)]),
    "gather": (lambda x, i: x.gather(1, i) * 2, ("x", "i"),
               lambda m, n: (_rand(m, n), torch.randint(0, n, (m, 3))), [(4, 6), (1, 2), (9, 40)]),
    "transpose": (lambda x: x.t().contiguous() * 3, ("x",),
                  lambda m, n: (_rand(m, n),), [(5, 9), (1, 4), (67, 33)]),
    "linear_relu": (lambda x, w, b: torch.relu(F.linear(x, w, b)), ("x", "w", "b"),
                    lambda m, n: (_rand(m, n), _rand(n + 3, n), _rand(n + 3)),
                    [(4, 8), (1, 2), (17, 30)]),
    "conv_relu": (lambda x, w: torch.relu(F.conv2d(x, w, padding=1)), ("x", "w"),
                  lambda m, n: (_rand(2, m, n, n), _rand(4, m, 3, 3)), [(3, 6), (2, 3), (5, 11)]),
    # the element-wise tail fused into the convolution (generate/fuse.py): a bias read per
    # channel, a channels-last output, and a strided transposed convolution (one launch per phase)
    "conv_bias_tanh": (lambda x, w, b: torch.tanh(F.conv2d(x, w) + b.view(1, -1, 1, 1)) * 2,
                       ("x", "w", "b"), lambda m, n: (_rand(2, m, n, n), _rand(5, m, 3, 3), _rand(5)),
                       [(3, 6), (2, 3), (4, 9)]),
    "conv_cl_clamp": (lambda x, w: torch.clamp(F.conv2d(x.contiguous(memory_format=torch.channels_last),
                                                         w, padding=1), -0.5, 0.5), ("x", "w"),
                      lambda m, n: (_rand(2, 16, m, n), _rand(24, 16, 3, 3)), [(5, 6), (1, 2), (7, 3)]),
    "convt_hardtanh": (lambda x, w: F.hardtanh(F.conv_transpose2d(x, w, stride=2, padding=1)) * 3,
                       ("x", "w"), lambda m, n: (_rand(2, 16, m, n), _rand(16, 20, 3, 3)),
                       [(4, 5), (1, 1), (6, 3)]),
    # a reduction tiled over two row dimensions (YBLOCK, XBLOCK and R0_BLOCK)
    "tiled_sum": (lambda x: (x.permute(0, 2, 1) * 2).sum(0), ("x",),
                  lambda m, n: (_rand(m, n, 6),), [(3, 5), (1, 1), (9, 70)]),
    "conv_softmax": (lambda x, w: torch.softmax(F.conv3d(x, w), 1), ("x", "w"),
                     lambda m, n: (_rand(2, 2, n, n, n), _rand(m, 2, 2, 2, 2)),
                     [(4, 5), (1, 2), (7, 4)]),
    # persistent reductions (one R block holds the row): a reduced length fixed in the code
    "persistent": (lambda x: torch.softmax(x.view(x.shape[0], 16, -1), 1) * 2, ("x",),
                   lambda m, n: (_rand(m, 16 * n),), [(6, 5), (1, 1), (33, 7)]),
    # squeeze-and-excitation: at 3 channels the bottleneck has none (a [batch, 0] tensor, whose
    # strides torch and Inductor's layout assertion disagree on)
    "squeeze_excite": (lambda x, w1, w2: x * torch.sigmoid(F.linear(torch.relu(F.linear(x.mean((2, 3)), w1)), w2))[
        :, :, None, None], ("x", "w1", "w2"),
        lambda m, n: (_rand(m, n, 3, 3), _rand(n // 4, n), _rand(n, n // 4)), [(2, 8), (2, 3), (3, 12)]),
    # GLU halves a size that varies with the shape (Inductor's reference decomposition fixed it)
    "glu": (lambda x, w: F.glu(F.conv_transpose1d(x, w, stride=2, padding=1), dim=1), ("x", "w"),
            lambda m, n: (_rand(2, m, n), _rand(m, 2 * n, 4)), [(3, 6), (2, 3), (5, 4)]),
    # complex arithmetic (Inductor leaves it to ATen) carried as real pairs: a LLaMA-style rotary
    # embedding, a complex quotient, conjugate, magnitude and exponential
    "complex_rope": (_rope, ("q", "f"), lambda m, n: (_rand(2, m, 3, 2 * n), _rand(n)), [(5, 4), (1, 1), (7, 9)]),
    "complex_mix": (_complex_mix, ("x", "y"), lambda m, n: (_rand(m, n, 2), _rand(m, n, 2)),
                    [(3, 4), (1, 1), (6, 5)]),
    # nn.Bilinear: ATen checks the weight's sizes as ints, Inductor leaves the form to ATen
    "bilinear": (lambda x1, x2, w, b: torch.tanh(F.bilinear(x1, x2, w, b)), ("x1", "x2", "w", "b"),
                 lambda m, n: (_rand(m, n), _rand(m, n + 2), _rand(n + 1, n, n + 2), _rand(n + 1)),
                 [(4, 5), (1, 1), (9, 3)]),
    # a spatial transformer: F.affine_grid builds its base grid with linspace over int sizes
    "affine_grid": (lambda x, t: F.grid_sample(x, F.affine_grid(t, list(x.shape), align_corners=False),
                                               align_corners=False), ("x", "t"),
                    lambda m, n: (_rand(2, 3, m, n), _rand(2, 2, 3)), [(5, 6), (1, 1), (7, 3)]),
    # recurrent layers over a sequence (nn.GRU's and nn.LSTM's own call): forge's rnn library,
    # a loop over the time steps, so any sequence length
    "gru": (lambda x, h, wi, wh, bi, bh: torch._VF.gru(x, h, [wi, wh, bi, bh], True, 1, 0.0, False, False, True)[0],
            ("x", "h", "wi", "wh", "bi", "bh"),
            lambda m, n: (_rand(2, m, 3), _rand(1, 2, n), _rand(3 * n, 3), _rand(3 * n, n), _rand(3 * n), _rand(3 * n)),
            [(5, 4), (1, 1), (9, 6)]),
    "lstm": (lambda x, h, c, *w: torch._VF.lstm(x, (h, c), list(w), True, 2, 0.0, False, True, False),
             ("x", "h", "c", *(f"w{i}" for i in range(16))),
             lambda m, n: (_rand(m, 2, 3), _rand(4, 2, n), _rand(4, 2, n),
                           *(t for _ in range(2) for t in (_rand(4 * n, 3 if _ == 0 else 2 * n), _rand(4 * n, n),
                                                           _rand(4 * n), _rand(4 * n),
                                                           _rand(4 * n, 3 if _ == 0 else 2 * n), _rand(4 * n, n),
                                                           _rand(4 * n), _rand(4 * n)))),
             [(5, 4), (1, 1), (7, 3)]),
    # cdist's direct form (ATen's _cdist_forward, which Inductor leaves to ATen) as a reduction;
    # erfinv, a libdevice call the interpreter computes with torch
    "cdist": (lambda x, y: torch.cdist(x, y, p=1.0) + torch.cdist(x, y, p=float("inf")) * torch.special.erfinv(
        torch.tanh(torch.cdist(x, y, p=3.0))), ("x", "y"),
        lambda m, n: (_rand(2, m, 5), _rand(2, n, 5)), [(4, 6), (1, 1), (9, 3)]),
    # F.max_pool1d at dilation 1 (ATen's CPU fast path reads the length as an int), and
    # ceil_mode: traced at a length where ceil and floor agree (37), run at one where they do not (32)
    "max_pool1d": (lambda x: (F.max_pool1d(x, 5, 3, 2, ceil_mode=True), F.max_pool1d(x, 2),
                              F.max_pool2d(x.unsqueeze(-1).expand(-1, -1, -1, 4), 3, 2, 1, ceil_mode=True)), ("x",),
                   lambda m, n: (_rand(2, m, n + 31),), [(3, 6), (1, 1), (4, 9)]),
    # average pooling with ceil_mode (the same branch on the example's sizes; ATen's divisor
    # counts the padding or not, never the overhang)
    "avg_pool_ceil": (lambda x: (F.avg_pool1d(x, 5, 3, 2, ceil_mode=True, count_include_pad=False),
                                 F.avg_pool2d(x.unsqueeze(-1).expand(-1, -1, -1, 4), 3, 2, 1, ceil_mode=True)),
                      ("x",), lambda m, n: (_rand(2, m, n + 31),), [(3, 6), (1, 1), (4, 9)]),
    # DLRM's dot interaction: tril_indices over a size read from the input (ATen takes ints)
    "tril_pairs": (lambda x: torch.bmm(x, x.transpose(1, 2))[:, torch.tril_indices(x.shape[1], x.shape[1], -1)[0],
                                                             torch.triu_indices(x.shape[1], x.shape[1], 1)[1]],
                   ("x",), lambda m, n: (_rand(m, n, 4),), [(3, 6), (1, 2), (4, 9)]),
    # take_along_dim broadcasting index and values (ATen's composite reads both shapes as ints)
    "take_along": (lambda x, i: torch.take_along_dim(x, i, dim=2) + (x + 1).take_along_dim(i[:1, :, :1], 2),
                   ("x", "i"), lambda m, n: (_rand(m, 1, n + 2), torch.randint(0, n + 2, (m, m + 1, 3))),
                   [(3, 6), (1, 1), (5, 9)]),
    # Tensor.unflatten (its Python form calls super(), which Dynamo cannot trace under a mode)
    "unflatten": (lambda x: torch.unflatten((x * 2).unflatten(1, (-1, 2)), 0, (1, -1)).sum(-1),
                  ("x",), lambda m, n: (_rand(m, 2 * n),), [(3, 6), (1, 1), (5, 9)]),
    # masked_scatter: a running count over the whole flat mask (Inductor would split that scan)
    "masked_scatter": (lambda x, v: x.masked_scatter(x > 0.2, v * 2), ("x", "v"),
                       lambda m, n: (_rand(m, 64 * n), _rand(m, 64 * n)), [(64, 32), (1, 1), (9, 5)]),
    # F.fold (col2im) back to an image size read from the input (ATen takes the size as ints)
    "fold": (lambda x: F.fold(F.unfold(x, 3, padding=1, stride=2) * 2, x.shape[-2:], 3, padding=1, stride=2),
             ("x",), lambda m, n: (_rand(2, 3, m + 4, n + 5),), [(3, 6), (1, 1), (6, 2)]),
    # an op on a complex value the rewrite does not know (a scan): the graph is left to ATen
    "complex_unknown": (lambda x: torch.view_as_real(torch.view_as_complex(x).cumsum(0)) * 2, ("x",),
                        lambda m, n: (_rand(m, n, 2),), [(3, 4), (1, 1)]),
    # a slice the trace took at full length (its row was longer): Dynamo guards row > 4, and
    # a size of 1 breaks the default lowering's guard of 2 and up; the second lowering serves both
    "sorted_prefix": (lambda x: x.sort(dim=-1)[0][:, :4] * 2, ("x",), lambda m, n: (_rand(m, n),),
                      [(3, 16), (2, 1), (5, 9), (4, 3), (6, 4)]),
    "where_sorted": (lambda x: torch.arange(x.shape[1]).expand(x.shape[0], -1).where(x > 0, x.shape[1])
                     .sort(-1)[0][:, :4], ("x",), lambda m, n: (_rand(m, n),), [(3, 16), (2, 1), (4, 3)]),
}
CONFIG = {"persistent": {"triton.persistent_reductions": True}}
"""Inductor settings over forge's own for a case."""


def _outs(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _error(got, want) -> float:
    worst = 0.0
    for g, w in zip(_outs(got), _outs(want), strict=True):
        if g.shape != w.shape:
            return float("inf")
        w64 = w.double()
        scale = float(w64.abs().max()) + 1e-6
        worst = max(worst, float((g.double() - w64).abs().max()) / scale)
    return worst


SLOW_REDUCES = [0]
"""Reductions the interpreter computed element by element in Python (a combine function it
has no NumPy path for): what makes an interpreted candidate minutes slow."""


def _count_slow_reduces() -> None:
    from triton.runtime import interpreter

    slow = interpreter.ReduceOps.generic_reduce

    def counted(self, input):
        SLOW_REDUCES[0] += 1
        return slow(self, input)
    interpreter.ReduceOps.generic_reduce = counted


class _Counted:
    """A Triton kernel whose launches (``kernel[grid](...)``) are counted."""

    def __init__(self, kernel) -> None:
        self.kernel, self.launches = kernel, 0

    def __getitem__(self, grid):
        self.launches += 1
        return self.kernel[grid]


def check(case: str, out: Path) -> None:
    """``case``: a name in CASES, or ``name@KNOB=value`` to run its candidate with a knob moved."""
    name, _, moved = case.partition("@")
    fn, params, make, shapes = CASES[name]
    torch.manual_seed(0)
    example = list(make(*shapes[0]))
    lowered, small = lower_sizes(fn, example, config=CONFIG.get(name))
    asm = render(lowered, Entry(params=params), small=small)
    path = out / f"{name}.py"
    path.write_text(asm.text)
    spec = importlib.util.spec_from_file_location(f"gen_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if moved:
        knob, value = moved.split("=")
        assert hasattr(module, knob), knob
        setattr(module, knob, int(value))
    tails = module._rt_tail_kernel = _Counted(module._rt_tail_kernel)
    for shape in shapes:
        args = list(make(*shape))
        SLOW_REDUCES[0] = 0
        got = module.run(*args)
        row = {"case": case, "shape": list(shape), "kernels": len(asm.kernels),
               "library": list(asm.library), "err": _error(got, fn(*args)),
               "fused": asm.text.count("is the tail of the convolution above"),
               "slow_reduces": SLOW_REDUCES[0], "tail_launches": tails.launches}
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    _count_slow_reduces()
    with tempfile.TemporaryDirectory() as tmp:
        for case in sys.argv[1:]:
            check(case, Path(tmp))
