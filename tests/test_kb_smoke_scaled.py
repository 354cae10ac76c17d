"""KernelBench conversion: a pinned constant that only shapes a table (an embedding's
vocabulary) is scaled in the smoke workloads when nothing else makes the problem small, and
stays at the problem's value in every other workload, hidden ones included."""

from __future__ import annotations

import random
import tomllib

import pytest

from forgekernel.errors import ForgeError
from forgekernel.judge.inputs import hidden_workloads
from forgekernel.kbaxes import SMOKE_ELEMENTS
from forgekernel.kernelbench import convert
from forgekernel.task import load_task

PROBLEM = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, vocab, dim):
        super().__init__()
        self.table = nn.Embedding(vocab // 3 + vocab // 5 + 2, dim)

    def forward(self, ids):
        return self.table(torch.remainder(ids, self.table.num_embeddings)).sum(1)


batch = 16
fields = 8
vocab = 300000
dim = 32


def get_inputs():
    return [torch.randint(0, 2 ** 30, (batch, fields))]


def get_init_inputs():
    return [vocab, dim]
'''


def test_a_table_size_is_scaled_in_smoke_workloads_only(tmp_path):
    """The table (160002 x 32 at the problem's sizes) has a row count that is a function of
    vocab, so vocab is pinned as semantic; no scaling of batch, fields and dim brought it under
    the smoke limit, and the CPU delivery had nothing to judge (our operator 141's case)."""
    src = tmp_path / "vocab_table.py"
    src.write_text(PROBLEM)
    toml = convert(src, tmp_path / "t") / "task.toml"
    raw = tomllib.loads(toml.read_text())
    spec = raw["axes"]["vocab"]
    assert spec["smoke_scaled"] is True and spec["max"] == 300000 and spec["min"] < 300000
    task = load_task(toml.parent)
    smoke = task.smoke_workloads()
    assert smoke and all(w.axes["vocab"] < 300000 for w in smoke)
    for w in smoke:  # the table now fits the interpreter
        rows = w.axes["vocab"] // 3 + w.axes["vocab"] // 5 + 2
        assert rows * w.axes["dim"] <= SMOKE_ELEMENTS
    big = [w for w in task.workloads if not w.smoke]
    assert [w.axes["vocab"] for w in big] == [300000]
    hidden = hidden_workloads(task, task.workloads, large=True, rng=random.Random(0))
    assert hidden
    smoke_values = {w.axes["vocab"] for w in smoke}
    for h in hidden:  # never varied: the smoke value or the problem's own
        assert h.axes["vocab"] in smoke_values | {300000}


def test_a_non_smoke_workload_must_keep_a_smoke_scaled_axis_at_its_value(tmp_path):
    src = tmp_path / "vocab_table.py"
    src.write_text(PROBLEM)
    toml = convert(src, tmp_path / "t") / "task.toml"
    text = toml.read_text()
    first = text.index("vocab = 300000", text.index("[[workload]]"))
    toml.write_text(text[:first] + "vocab = 299999" + text[first + len("vocab = 300000"):])
    with pytest.raises(ForgeError, match="scaled in smoke workloads only"):
        load_task(toml.parent)


def test_a_gpu_run_keeps_the_problems_own_value_in_its_smoke_workloads(tmp_path):
    """The lowering specialises to such a constant when the reference reads it as a plain int
    (a frame length in unfold()), so one kernel cannot serve smoke workloads at 50 and the GPU
    workload at 400 (operator 137: 'input has shape (50,), expected (100,)'). A GPU run's copy
    of task.toml keeps the problem's own value in every workload; a CPU run's keeps the scaled
    one, and the user's task.toml is never touched."""
    from forgekernel.config import Settings
    from forgekernel.run import rundir

    src = tmp_path / "vocab_table.py"
    src.write_text(PROBLEM)
    task_dir = convert(src, tmp_path / "t")
    before = (task_dir / "task.toml").read_text()
    gpu = load_task(rundir.create(task_dir, Settings(delivery="local"), tmp_path / "gpu", gpu=True) / "task")
    cpu = load_task(rundir.create(task_dir, Settings(delivery="cpu"), tmp_path / "cpu") / "task")
    assert gpu.smoke_workloads() and {w.axes["vocab"] for w in gpu.workloads} == {300000}
    assert {w.axes["vocab"] for w in cpu.smoke_workloads()} == {w.axes["vocab"] for w in load_task(task_dir).smoke_workloads()}
    assert all(w.axes["vocab"] < 300000 for w in cpu.smoke_workloads())
    assert (task_dir / "task.toml").read_text() == before
    assert len({w.axes["vocab"] for w in cpu.smoke_workloads()}) == 1  # one value: one lowering serves them


RATIO = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, hidden, heads, mlp_ratio):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.mlp = nn.Sequential(nn.Linear(hidden, mlp_ratio * hidden), nn.GELU(), nn.Linear(mlp_ratio * hidden, hidden))

    def forward(self, x):
        b, t, h = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, h // self.heads).unbind(2)
        a = torch.nn.functional.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        x = x + a.transpose(1, 2).reshape(b, t, h)
        return x + self.mlp(x)


batch = 4
tokens = 128
hidden = 1152
heads = 16
mlp_ratio = 4


def get_inputs():
    return [torch.randn(batch, tokens, hidden)]


def get_init_inputs():
    return [hidden, heads, mlp_ratio]
'''


def test_an_expansion_ratio_is_not_coupled_to_the_width_it_multiplies(tmp_path):
    """heads divides hidden (at 17 heads the view fails), so it follows hidden; mlp_ratio
    multiplies it and runs at any value. Coupled as a divisor as well, it made hidden step by
    1152 / 4 = 288, and a DiT block (our operator 144) had no smoke workload."""
    src = tmp_path / "block.py"
    src.write_text(RATIO)
    task = load_task(convert(src, tmp_path / "t"))
    assert task.axes["heads"].follows == "hidden"
    assert task.axes["mlp_ratio"].follows is None and task.axes["mlp_ratio"].min == task.axes["mlp_ratio"].max == 4
    assert task.axes["hidden"].multiple_of == 72
    assert task.smoke_workloads() and all(w.axes["mlp_ratio"] == 4 for w in task.workloads)


def test_int16_pcm_inputs_convert_and_draw_as_get_inputs_draws_them(tmp_path):
    """16-bit PCM audio (our operator 150) was refused: 'get_inputs() item 0 has dtype int16'."""
    from forgekernel import instance
    from forgekernel.generate.examples import reference_function

    src = tmp_path / "pcm.py"
    src.write_text('''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, pcm):
        return pcm.float().mean(1) / 32768.0


batch = 4
channels = 2
samples = 48000


def get_inputs():
    return [torch.randint(-32768, 32768, (batch, channels, samples), dtype=torch.int16)]


def get_init_inputs():
    return []
''')
    task = load_task(convert(src, tmp_path / "t"))
    assert task.inputs["pcm"].dtype == "int16" and task.smoke_workloads()
    x = instance.build(task, reference_function(task)[1], task.smoke_workloads()[0], device="cpu", seed=0).inputs[0]
    assert x.dtype.is_floating_point is False and str(x.dtype) == "torch.int16" and int(x.abs().max()) > 1000


NAN_BELOW = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x / float(x.shape[1] >= 512) * 0 + x  # NaN at widths under 512


dim = 4096


def get_inputs():
    return [torch.rand(dim, dim)]


def get_init_inputs():
    return []
'''


def test_a_smoke_size_where_the_reference_gives_nan_is_not_chosen(tmp_path):
    """RAFT's four-level pyramid (our operator 180) gives NaN under 16 x 16 pixels (a level of
    one pixel, normalised by its size - 1): no kernel can be judged there. The converter
    treats NaN as a failure of the sizes, and where every size under the bound fails it takes
    the smallest one that works within SMOKE_LOOSE times the bound, saying so."""
    from forgekernel.kbaxes import SMOKE_LOOSE

    src = tmp_path / "nan_below.py"
    src.write_text(NAN_BELOW)
    root = convert(src, tmp_path / "t")
    task = load_task(root)
    smoke = task.smoke_workloads()
    assert smoke and all(w.axes["dim"] >= 512 for w in smoke), smoke
    assert all(w.axes["dim"] ** 2 <= SMOKE_LOOSE * SMOKE_ELEMENTS for w in smoke)
    assert "over the usual" in (root / "task.toml").read_text()


HASHED = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, log2_size):
        super().__init__()
        self.size = 2 ** log2_size
        self.table = nn.Parameter(torch.randn(self.size, 2))

    def forward(self, ids):
        return self.table[(ids * 2654435761) & (self.size - 1)].sum(-1)


batch = 64
fields = 8
log2_size = 22


def get_inputs():
    return [torch.randint(0, 2 ** 20, (batch, fields))]


def get_init_inputs():
    return [log2_size]
'''


def test_a_table_sized_by_an_exponent_is_scaled_down_to_the_floor(tmp_path):
    """A hash table of 2 ** log2_size rows (our operator 187, Instant-NGP's): the table is 128
    times the smoke limit, so the search divides by four at a step, and 22 / 4 is under the
    smallest size a promoted constant takes (8); such a step now lands on the floor itself
    instead of being skipped, which had left the problem without a smoke workload."""
    src = tmp_path / "hashed.py"
    src.write_text(HASHED)
    task = load_task(convert(src, tmp_path / "t"))
    smoke = task.smoke_workloads()
    assert smoke and all(8 <= w.axes["log2_size"] < 22 for w in smoke), [w.axes for w in smoke]
    assert all(2 ** w.axes["log2_size"] * 2 <= SMOKE_ELEMENTS for w in smoke)
