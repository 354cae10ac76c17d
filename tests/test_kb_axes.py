"""Axes of a KernelBench problem by perturbation on meta: sizes scale, semantic constants are
pinned; smoke and hidden workloads derived from them are valid problems."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from forgekernel import instance, kbsource
from forgekernel.judge.inputs import hidden_workloads
from forgekernel.kbaxes import SMOKE_ELEMENTS
from forgekernel.kernelbench import convert
from forgekernel.task import check_reference_module, load_task

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "kernelbench"
HEAD = "import torch\nimport torch.nn as nn\n\n\n"


def pinned(task) -> dict[str, int]:
    return {k: a.min for k, a in task.axes.items() if a.max is not None and a.max == a.min}


def sizes(task) -> set[str]:
    return {k for k, a in task.axes.items() if a.max is None}


def test_conv_sizes_scale_and_its_semantic_constants_are_pinned(tmp_path):
    task = load_task(convert(FIXTURES / "7_conv2d_grouped.py", tmp_path / "t"))
    assert sizes(task) == {"batch_size", "in_channels", "out_channels", "height", "width"}
    # stride, padding and dilation change the output's shape without it following them;
    # kernel_size and groups change only the weight's shape
    assert pinned(task) == {"kernel_size": 3, "stride": 2, "padding": 1, "dilation": 1, "groups": 4}
    # channels are only valid in steps of groups
    assert task.axes["in_channels"].multiple_of == 4 and task.axes["out_channels"].multiple_of == 4
    assert "semantic, pinned at 2" in task.axes["stride"].description


def test_hidden_width_is_a_size_and_a_reduction_dim_is_pinned(tmp_path):
    mlp = load_task(convert(FIXTURES / "8_mlp_hidden.py", tmp_path / "a"))
    assert sizes(mlp) == {"batch_size", "in_features", "hidden", "out_features"}
    assert "hidden width" in mlp.axes["hidden"].description
    summed = load_task(convert(FIXTURES / "9_sum_dim.py", tmp_path / "b"))
    assert sizes(summed) == {"batch_size", "input_shape_0", "input_shape_1"}
    assert pinned(summed) == {"dim": 1}
    assert summed.axes["input_shape_0"].constant == "input_shape[0]"
    assert summed.outputs["out"].shape == ("batch_size", 1, "input_shape_1")


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_a_kernel_width_under_same_padding_is_pinned_whatever_its_name(tmp_path):
    """Only the weight follows it, as for a hidden width, but it sets the layer's padding (a
    value a trace freezes into the generated code): a kernel width, pinned."""
    src = write(tmp_path, "causal_conv.py", HEAD + (
        "class Model(nn.Module):\n"
        "    def __init__(self, channels, width):\n"
        "        super().__init__()\n"
        "        self.conv = nn.Conv1d(channels, channels, width, groups=channels, padding=width - 1)\n"
        "\n    def forward(self, x):\n"
        "        return self.conv(x)[..., :x.shape[-1]]\n\n"
        "batch_size = 4\nchannels = 64\nwidth = 4\nseq = 128\n\n"
        "def get_inputs():\n    return [torch.randn(batch_size, channels, seq)]\n\n"
        "def get_init_inputs():\n    return [channels, width]\n"))
    task = load_task(convert(src, tmp_path / "t"))
    assert sizes(task) == {"batch_size", "channels", "seq"}
    assert pinned(task) == {"width": 4}
    assert "kernel size, stride, padding or dilation" in task.axes["width"].description


def test_a_count_of_layers_is_pinned(tmp_path):
    """Doubling ``experts`` adds parameters (a ModuleList entry each) while inputs and outputs
    keep their shapes, as a hidden width would; but code written for the model unrolls its
    layers, so a count of layers or experts is pinned."""
    src = write(tmp_path, "experts.py", HEAD + (
        "class Model(nn.Module):\n"
        "    def __init__(self, dim, experts):\n"
        "        super().__init__()\n"
        "        self.experts = nn.ModuleList([nn.Linear(dim, dim) for _ in range(experts)])\n"
        "\n    def forward(self, x):\n"
        "        return sum(e(x) for e in self.experts)\n\n"
        "tokens = 64\ndim = 32\nexperts = 3\n\n"
        "def get_inputs():\n    return [torch.randn(tokens, dim)]\n\n"
        "def get_init_inputs():\n    return [dim, experts]\n"))
    task = load_task(convert(src, tmp_path / "t"))
    assert sizes(task) == {"tokens", "dim"}
    assert pinned(task) == {"experts": 3}
    assert "how many parameters" in task.axes["experts"].description


def test_constants_that_change_nothing_are_no_axes_and_tied_ones_move_together(tmp_path):
    src = write(tmp_path, "hinge.py", HEAD + (
        "class Model(nn.Module):\n"
        "    def forward(self, p, t):\n"
        "        return torch.mean(torch.clamp(1 - p * t, min=0))\n\n\n"
        "batch_size = 256\ninput_shape = (256,)\nunused = 7\nD, H = 3, 5\n\n\n"
        "def get_inputs():\n"
        "    return [torch.rand(batch_size, *input_shape), torch.rand(batch_size)]\n\n\n"
        "def get_init_inputs():\n    return []\n"))
    task = load_task(convert(src, tmp_path / "t"))
    # p * t broadcasts t over the last dimension: batch_size and input_shape[0] must stay equal
    assert list(task.axes) == ["batch_size"]
    assert task.axes["batch_size"].constant == "batch_size, input_shape[0]"
    module = check_reference_module(task)
    for wl in task.workloads:
        inst = instance.build(task, module, wl, meta=True)
        n = wl.axes["batch_size"]
        assert [tuple(t.shape) for t in inst.inputs] == [(n, n), (n,)]
        inst.reference()


def test_variant_recomputes_what_depends_on_a_constant(tmp_path):
    src = write(tmp_path, "dep.py", "a = b = 8\nD, H = 3, 5\nshape = (a, 2)\nbig = 1 << 4\n"
                "twice = a * 2\nsize = (4096 * 2,)\n")
    consts = {c.axis: (c.ref, c.value) for c in kbsource.constants(src.read_text())}
    assert consts == {"a": ("a", 8), "b": ("b", 8), "D": ("D", 3), "H": ("H", 5), "shape_1": ("shape[1]", 2),
                      "big": ("big", 16), "size_0": ("size[0]", 8192)}
    from forgekernel.task import load_module

    module = load_module(src)
    other = kbsource.variant(module, {("a", None): 3, ("shape", 1): 7, ("H", None): 9})
    assert (other.a, other.b, other.shape, other.twice, other.H, other.D) == (3, 8, (3, 7), 6, 9, 3)
    assert module.a == 8 and module.shape == (8, 2)  # the loaded module is untouched
    assert kbsource.variant(module, {("a", None): 8}) is module
    assert kbsource.variant(module, {("a", None): 3, ("shape", 1): 7, ("H", None): 9}) is other


@pytest.mark.parametrize("fixture", ["7_conv2d_grouped.py", "9_sum_dim.py", "6_batchnorm_train.py"])
def test_hidden_workloads_vary_only_sizes_and_are_valid_on_meta(tmp_path, fixture):
    task = load_task(convert(FIXTURES / fixture, tmp_path / "t"))
    module = check_reference_module(task)
    smoke = list(task.smoke_workloads())
    hidden = hidden_workloads(task, smoke, large=True, rng=random.Random(0))
    assert hidden, "KernelBench tasks get hidden workloads too"
    fixed = pinned(task)
    valid = 0
    for wl in hidden:
        assert {k: wl.axes[k] for k in fixed} == fixed
        try:  # the judge drops the ones the reference rejects; most must be valid
            outs = instance.build(task, module, wl, meta=True).reference()
        except (RuntimeError, ValueError):
            continue
        valid += 1
        assert all(o.numel() <= 64 * SMOKE_ELEMENTS for o in outs) or not wl.smoke
    assert valid >= len(hidden) // 2


def test_sizes_written_as_literals_in_get_inputs_become_axes_when_nothing_else_is_small(tmp_path):
    src = write(tmp_path, "image.py", HEAD + (
        "class Model(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.conv = nn.Conv2d(3, 8, kernel_size=5, stride=2)\n\n"
        "    def forward(self, x):\n"
        "        return self.conv(x)\n\n\n"
        "batch_size = 4\n\n\n"
        "def get_inputs():\n    return [torch.rand(batch_size, 3, 224, 224)]\n\n\n"
        "def get_init_inputs():\n    return []\n"))
    task = load_task(convert(src, tmp_path / "t"))
    assert pinned(task) == {"get_inputs_0": 3}  # the channels the model hard-codes
    assert sizes(task) == {"batch_size", "get_inputs_1", "get_inputs_2"}
    assert task.axes["get_inputs_1"].constant == "get_inputs:1"
    assert task.inputs["x"].shape == ("batch_size", 3, "get_inputs_1", "get_inputs_2")
    module = check_reference_module(task)
    wl = task.smoke_workloads()[0]
    inst = instance.build(task, module, wl, seed=0)
    assert tuple(inst.inputs[0].shape) == (wl.axes["batch_size"], 3, wl.axes["get_inputs_1"], wl.axes["get_inputs_2"])
    assert inst.reference()[0].numel() <= SMOKE_ELEMENTS
    plain = write(tmp_path, "plain.py", src.read_text().replace("3, 224, 224", "3, 8, 8"))
    assert "get_inputs_1" not in load_task(convert(plain, tmp_path / "p")).axes  # small already: untouched


GROUPNORM = HEAD + (
    "class Model(nn.Module):\n"
    "    def __init__(self, in_features, hidden_size, num_groups):\n"
    "        super().__init__()\n"
    "        self.fc = nn.Linear(in_features, hidden_size)\n"
    "        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=hidden_size)\n\n"
    "    def forward(self, x):\n"
    "        return self.gn(self.fc(x)).relu()\n\n\n"
    "batch_size = 1024\nin_features = 4096\nhidden_size = 4096\nnum_groups = 256\n\n\n"
    "def get_inputs():\n    return [torch.rand(batch_size, in_features)]\n\n\n"
    "def get_init_inputs():\n    return [in_features, hidden_size, num_groups]\n")


def test_a_constant_that_divides_a_shrunk_size_shrinks_with_it(tmp_path):
    """GroupNorm's num_groups divides the channels: scaled down alone, the channels would end
    at one per group (a normalised value is then 0, the reference rounding noise). It keeps
    the problem's ratio instead, in the smoke and the hidden workloads."""
    task = load_task(convert(write(tmp_path, "gn.py", GROUPNORM), tmp_path / "t"))
    groups = task.axes["num_groups"]
    assert groups.follows == "hidden_size" and "num_groups" not in pinned(task)
    assert task.axes["hidden_size"].multiple_of == 4096 // 256
    smoke = list(task.smoke_workloads())
    assert smoke and all(w.axes["num_groups"] < 256 for w in smoke)
    module = check_reference_module(task)
    hidden = hidden_workloads(task, smoke, large=True, rng=random.Random(0))
    for wl in [*task.workloads, *hidden]:
        assert wl.axes["hidden_size"] == 16 * wl.axes["num_groups"], wl.axes
        outs = instance.build(task, module, wl, meta=True).reference()
        assert outs[0].shape[1] == wl.axes["hidden_size"]


def test_a_divisor_that_shapes_the_output_stays_pinned(tmp_path):
    """pixel_shuffle's upscale factor divides the channels too (36 = 9 x 2 x 2, and 54 at 3
    would be valid), but changing it changes the output's shape: it is no group count and
    stays pinned."""
    src = write(tmp_path, "ps.py", HEAD + (
        "class Model(nn.Module):\n"
        "    def __init__(self, upscale):\n"
        "        super().__init__()\n"
        "        self.upscale = upscale\n\n"
        "    def forward(self, x):\n"
        "        return torch.nn.functional.pixel_shuffle(x, self.upscale)\n\n\n"
        "batch_size = 4\nchannels = 36\nheight = 8\nwidth = 8\nupscale = 2\n\n\n"
        "def get_inputs():\n    return [torch.rand(batch_size, channels, height, width)]\n\n\n"
        "def get_init_inputs():\n    return [upscale]\n"))
    task = load_task(convert(src, tmp_path / "t"))
    assert pinned(task).get("upscale") == 2 and task.axes["upscale"].follows is None
