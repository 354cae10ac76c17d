"""KernelBench conversion: smoke sizes are checked with real values, not only on meta tensors.

A problem may reject a size only through its values: here get_inputs() draws token ids below a
literal 512 and scatters them into a table as wide as the vocabulary, which meta tensors (no
values, no bounds checks) accept at any vocabulary. Our operator 155's case: its smoke workload
was scaled to a vocabulary of 2374 against ids up to 4095, and the judge could not run the
reference on it."""

from __future__ import annotations

import torch

from forgekernel.kernelbench import convert
from forgekernel.task import load_task

PROBLEM = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits, ids):
        counts = torch.zeros(logits.shape[0], logits.shape[1], dtype=logits.dtype)
        counts.scatter_add_(1, ids, torch.ones_like(ids, dtype=logits.dtype))
        return torch.softmax(logits - 0.5 * counts, dim=-1)


batch = 64
vocab = 65536
seen = 256


def get_inputs():
    return [torch.randn(batch, vocab), torch.randint(0, 512, (batch, seen))]


def get_init_inputs():
    return []
'''


def test_smoke_workloads_run_for_real_where_meta_cannot_tell(tmp_path):
    src = tmp_path / "penalty.py"
    src.write_text(PROBLEM)
    task = load_task(convert(src, tmp_path / "t"))
    smoke = task.smoke_workloads()
    assert smoke, "no smoke workload"
    assert all(w.axes["vocab"] >= 512 for w in smoke), [w.axes for w in smoke]
    assert any(w.axes["vocab"] < 65536 for w in smoke)  # still scaled down
    from forgekernel import instance
    from forgekernel.generate.examples import reference_function

    _, reference = reference_function(task)
    for w in smoke:  # the reference runs on each, as the judge will run it
        inst = instance.build(task, reference, w, device="cpu", seed=3)
        out = inst.module.Model()(*inst.inputs)
        assert torch.isfinite(out).all()


BLOCKED = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.w = nn.Parameter(torch.randn(out_features, in_features))

    def forward(self, x):
        blocks = self.w.reshape(-1, 16384)  # in_features * out_features: whole blocks
        w = (blocks / blocks.abs().amax(-1, keepdim=True)).reshape(self.w.shape)
        return x @ w.t()


batch = 8
in_features = 4096
out_features = 11008


def get_inputs():
    return [torch.randn(batch, in_features)]


def get_init_inputs():
    return [in_features, out_features]
'''


def test_a_divisibility_across_two_axes_still_finds_a_smoke_workload(tmp_path):
    """in x out must be a multiple of 16384: halving 11008 (43 x 256) never gives a width that
    fits beside a small in_features, the power of two below it does (our operator 157)."""
    src = tmp_path / "blocked.py"
    src.write_text(BLOCKED)
    task = load_task(convert(src, tmp_path / "t"))
    smoke = task.smoke_workloads()
    assert smoke, "no smoke workload"
    for w in smoke:
        weights = w.axes["in_features"] * w.axes["out_features"]
        assert weights % 16384 == 0 and weights <= 65536, w.axes
