"""KernelBench-style problem files convert into task dirs that load and run.

Every fixture under tests/fixtures/kernelbench/ is a problem written for these tests in
KernelBench's style. A converted task has the problem's own sizes as its first (GPU)
workload and at least one smoke workload small enough for the CPU interpreter; every
workload is checked on meta tensors against the size limits, and the smoke ones for real.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
import torch

from forgekernel import instance
from forgekernel.errors import ForgeError
from forgekernel.kbaxes import SMOKE_ELEMENTS, SMOKE_FLOPS
from forgekernel.kernelbench import KernelBenchError, convert, is_kernelbench_file
from forgekernel.task import check_reference_module, load_task, shape_of

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "kernelbench"
REPO = Path(__file__).resolve().parents[1]

# fixture -> (the problem's own sizes, whether they are small enough to be the smoke workload)
OWN = {
    "1_square_matmul.py": ({"N": 1024}, False),
    "2_relu.py": ({"batch_size": 16, "dim": 16384}, False),
    "3_row_softmax.py": ({"batch_size": 8, "num_features": 2048}, True),
    "4_layer_norm_affine.py": ({"tokens": 64, "features": 512}, False),
    "5_cross_entropy_loss.py": ({"batch_size": 128, "num_classes": 1000}, False),
    "6_batchnorm_train.py": ({"batch_size": 16, "channels": 32, "length": 64}, False),
    "7_conv2d_grouped.py": ({"batch_size": 8, "in_channels": 16, "out_channels": 32, "kernel_size": 3,
                             "stride": 2, "padding": 1, "dilation": 1, "groups": 4, "height": 64,
                             "width": 48}, False),
    "8_mlp_hidden.py": ({"batch_size": 32, "in_features": 256, "hidden": 512, "out_features": 128}, False),
    "9_sum_dim.py": ({"batch_size": 16, "input_shape_0": 256, "input_shape_1": 96, "dim": 1}, False),
    "10_huge_softmax.py": ({"rows": 4096, "cols": 393216}, False),
}


def numel(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


@pytest.mark.parametrize("fixture", sorted(OWN))
def test_fixture_converts_with_its_own_and_smoke_workloads(tmp_path, fixture):
    src = FIXTURES / fixture
    assert is_kernelbench_file(src)
    task_dir = convert(src, tmp_path / "task")
    assert (task_dir / "reference.py").read_bytes() == src.read_bytes()
    task = load_task(task_dir)
    assert task.format == "kernelbench" and task.family == "other" and task.policy.forbid == ()
    own, small = OWN[fixture]
    assert task.workloads[0].axes == own and task.workloads[0].smoke is small
    assert task.smoke_workloads(), "every converted problem gets a smoke workload"
    module = check_reference_module(task)
    for wl in task.workloads:  # every workload is valid on meta; the smoke ones are small
        inst = instance.build(task, module, wl, meta=True)
        outs = inst.reference()
        assert [tuple(t.shape) for t in inst.inputs] == [shape_of(s, wl.axes) for s in task.inputs.values()]
        if wl.smoke:
            tensors = [*inst.inputs, *inst.param_tensors(), *outs]
            assert max(t.numel() for t in tensors) <= SMOKE_ELEMENTS, wl
    for wl in task.smoke_workloads():  # and the smoke ones run for real
        outs = instance.build(task, module, wl, seed=1).reference()
        assert all(torch.isfinite(o).all() for o in outs)


def test_smoke_flops_are_small(tmp_path):
    from forgekernel.refplan import cost

    task = load_task(convert(FIXTURES / "7_conv2d_grouped.py", tmp_path / "t"))
    module = check_reference_module(task)
    for wl in task.smoke_workloads():
        assert cost(task, module, wl).flops <= SMOKE_FLOPS


def test_the_judge_section_says_how_kernelbench_judges(tmp_path):
    task = load_task(convert(FIXTURES / "2_relu.py", tmp_path / "t"))
    assert task.judge.module_mode == "train" and task.judge.tf32 is True
    assert task.judge.tolerance == {"float32": 1e-2, "float16": 1e-2, "bfloat16": 1e-2}
    assert task.judge.hidden is True


def test_dists_say_how_get_inputs_makes_the_values(tmp_path):
    relu = load_task(convert(FIXTURES / "2_relu.py", tmp_path / "a"))
    assert relu.inputs["x"].dist.kind == "normal"  # torch.randn
    conv = load_task(convert(FIXTURES / "7_conv2d_grouped.py", tmp_path / "b"))
    assert (conv.inputs["x"].dist.kind, conv.inputs["x"].dist.low, conv.inputs["x"].dist.high) == \
        ("uniform", 0.0, 1.0)  # torch.rand
    mlp = load_task(convert(FIXTURES / "8_mlp_hidden.py", tmp_path / "c"))
    assert (mlp.inputs["x"].dist.low, mlp.inputs["x"].dist.high) == (-1.0, 1.0)  # rand * 2 - 1
    xent = load_task(convert(FIXTURES / "5_cross_entropy_loss.py", tmp_path / "d"))
    labels = xent.inputs["labels"]
    assert labels.dtype == "int64" and labels.dist.kind == "randint"
    assert (labels.dist.low, labels.dist.high) == (0, 1000)
    assert "high is num_classes" in labels.dist.note
    assert xent.outputs["out"].shape == ()


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


HEAD = "import torch\nimport torch.nn as nn\n\n\n"


def test_batched_matmul_constants_of_equal_value_stay_separate_axes(tmp_path):
    src = write(tmp_path, "bmm.py", HEAD + (
        "class Model(nn.Module):\n"
        "    def forward(self, a, b):\n"
        "        return torch.bmm(a, b)\n\n\n"
        "batch = 4\nm = 32\nk = 32\nn = 48\n\n\n"
        "def get_inputs():\n    return [torch.randn(batch, m, k), torch.randn(batch, k, n)]\n\n\n"
        "def get_init_inputs():\n    return []\n"))
    task = load_task(convert(src, tmp_path / "t"))
    assert task.workloads[0].axes == {"batch": 4, "m": 32, "k": 32, "n": 48}
    assert task.inputs["a"].shape == ("batch", "m", "k") and task.inputs["b"].shape == ("batch", "k", "n")
    assert task.workloads[0].smoke


def test_derived_input_dimensions_become_expressions(tmp_path):
    src = write(tmp_path, "upsampled.py", HEAD + (
        "class Model(nn.Module):\n"
        "    def forward(self, x, y):\n"
        "        return torch.nn.functional.interpolate(x, scale_factor=2) + y\n\n\n"
        "n = 2\nc = 4\nh = 8\nscale = 2\n\n\n"
        "def get_inputs():\n    return [torch.rand(n, c, h, h), torch.rand(n, c, h * scale, h * scale)]\n\n\n"
        "def get_init_inputs():\n    return []\n"))
    task = load_task(convert(src, tmp_path / "t"))
    assert task.inputs["y"].shape == ("n", "c", "2 * h", "2 * h")
    assert task.axes["scale"].min == task.axes["scale"].max == 2
    big = {**task.workloads[0].axes, "h": 5}
    assert shape_of(task.inputs["y"], big) == (2, 4, 10, 10)


def test_get_inputs_built_from_numpy_and_a_forward_that_reads_values(tmp_path):
    src = write(tmp_path, "np_inputs.py", HEAD + "import numpy as np\n\n\n" + (
        "class Model(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x * float(x.abs().max().item())\n\n\n"
        "def get_inputs():\n    return [torch.from_numpy(np.ones((3, 5), dtype=np.float32))]\n\n\n"
        "def get_init_inputs():\n    return []\n"))
    task_dir = convert(src, tmp_path / "t")
    task = load_task(task_dir)
    (wl,) = task.workloads  # no constant: no axis, the one workload is the smoke one
    assert wl.axes == {} and wl.smoke and task.inputs["x"].shape == (3, 5)
    assert task.inputs["x"].dist.kind == "custom" and "without a torch random factory" in task.inputs["x"].dist.note
    # the forward calls .item(), which meta tensors cannot: outputs from one CPU call at smoke size
    text = (task_dir / "task.toml").read_text()
    assert "# [outputs] not declared: forward cannot run on meta tensors" in text and "(3, 5)" in text


def test_forward_that_runs_nowhere_here_leaves_outputs_undeclared(tmp_path):
    src = write(tmp_path, "gpu_only.py", HEAD + (
        "class Model(nn.Module):\n"
        "    def forward(self, x):\n"
        "        if x.device.type != 'cuda':\n"
        "            raise RuntimeError('needs a GPU')\n"
        "        return x\n\n\n") + GOOD_TAIL)
    task_dir = convert(src, tmp_path / "t")
    task = load_task(task_dir)
    assert task.outputs == {}
    text = (task_dir / "task.toml").read_text()
    assert "# [outputs] not declared: forward fails on meta tensors (RuntimeError: needs a GPU)" in text


def test_plain_number_among_the_inputs(tmp_path):
    src = write(tmp_path, "scale.py", HEAD + (
        "class Model(nn.Module):\n"
        "    \"\"\"Matrix times a scalar.\"\"\"\n\n"
        "    def forward(self, A, s: float):\n"
        "        return A * s\n\n\n"
        "M = 64\nN = 48\n\n\n"
        "def get_inputs():\n    return [torch.rand(M, N, dtype=torch.half), 2.5]\n\n\n"
        "def get_init_inputs():\n    return []\n"))
    task = load_task(convert(src, tmp_path / "t"))
    assert task.inputs["A"].dtype == "float16" and task.inputs["A"].shape == ("M", "N")
    assert task.inputs["s"].dtype == "float64" and task.inputs["s"].shape == ()
    assert task.inputs["s"].dist.kind == "custom" and "a plain number (2.5)" in task.inputs["s"].dist.note
    assert task.outputs["out"].dtype == "float16" and task.workloads[0].smoke
    assert task.description == "Matrix times a scalar."


def test_get_inputs_that_reads_values_it_drew_converts(tmp_path):
    """get_inputs() placing image tokens at random cut points (``int(cuts[j])``) cannot read a
    value on meta: it was refused ("Tensor.item() cannot be called on meta tensors"). On meta a
    read value is 0 now (the shapes do not depend on it); the real inputs are drawn for real."""
    src = write(tmp_path, "merge.py", HEAD + (
        "class Model(nn.Module):\n"
        "    def forward(self, ids, x):\n"
        "        return x * (ids == 0).unsqueeze(-1)\n\n\n"
        "batch = 8\nseq = 64\ndim = 32\n\n\n"
        "def get_inputs():\n"
        "    ids = torch.randint(1, 9, (batch, seq))\n"
        "    for i in range(batch):\n"
        "        start = int(torch.randint(0, seq // 2, ()))\n"
        "        ids[i, start:start + seq // 4] = 0\n"
        "    return [ids, torch.randn(batch, seq, dim)]\n\n\n"
        "def get_init_inputs():\n    return []\n"))
    task = load_task(convert(src, tmp_path / "t"))
    assert task.inputs["ids"].shape == ("batch", "seq") and task.smoke_workloads()
    from forgekernel.generate.examples import reference_function

    wl = task.workloads[0]
    assert wl.axes == {"batch": 8, "seq": 64, "dim": 32}
    ids = instance.build(task, reference_function(task)[1], wl, device="cpu", seed=0).inputs[0]
    assert int((ids == 0).sum()) == 8 * 16  # drawn for real: a run of zeros in every row


def test_huge_inputs_are_described_without_allocating(tmp_path):
    # 2**48 elements: only meta tensors can hold that; torch.distributions validation included
    src = write(tmp_path, "huge.py", HEAD + "from torch.distributions import Pareto\n\n\n" + (
        "class Model(nn.Module):\n"
        "    def forward(self, p, t):\n"
        "        return torch.mean(torch.clamp(1 - p * t, min=0))\n\n\n"
        "rows = 1 << 24\n\n\n"
        "def get_inputs():\n"
        "    return [Pareto(0.01, 1.5).sample((rows, rows)), torch.rand(rows) * 2 - 1]\n\n\n"
        "def get_init_inputs():\n    return []\n"))
    task = load_task(convert(src, tmp_path / "t"))
    assert task.workloads[0].axes == {"rows": 1 << 24} and not task.workloads[0].smoke
    assert task.inputs["p"].shape == ("rows", "rows") and task.outputs["out"].shape == ()
    assert task.inputs["p"].dist.kind == "custom"  # no torch random factory made it
    assert task.smoke_workloads()[0].axes["rows"] <= 256


def test_is_kernelbench_file_says_no(tmp_path):
    assert not is_kernelbench_file(REPO / "tasks" / "rmsnorm" / "reference.py")
    assert not is_kernelbench_file(REPO / "tasks" / "rmsnorm" / "task.toml")
    assert not is_kernelbench_file(tmp_path / "missing.py")
    assert not is_kernelbench_file(FIXTURES)
    assert not is_kernelbench_file(write(tmp_path, "broken.py", "class Model(:\n"))


GOOD_TAIL = ("def get_inputs():\n    return [torch.randn(4, 8)]\n\n\n"
             "def get_init_inputs():\n    return []\n")
GOOD_MODEL = "class Model(nn.Module):\n    def forward(self, x):\n        return x + 1\n\n\n"

BAD_FILES = [
    ("forge-reference", "import torch\n\n\ndef run(x):\n    return x\n",
     ["not a KernelBench-style file", "Model", "get_inputs"]),
    ("syntax-error", HEAD + "class Model(nn.Module:\n    pass\n" + GOOD_TAIL, ["SyntaxError", "line"]),
    ("import-error", "import not_a_module_abc\n" + HEAD + GOOD_MODEL + GOOD_TAIL,
     ["fails to import", "ModuleNotFoundError", "not_a_module_abc"]),
    ("raises-at-import", HEAD + GOOD_MODEL + GOOD_TAIL + "raise ValueError('bad\\nworse')\n",
     ["fails to import", "ValueError: bad"]),
    ("exits-at-import", HEAD + "import sys\nsys.exit(4)\n" + GOOD_MODEL + GOOD_TAIL, ["exit (4)"]),
    ("model-not-callable", HEAD + "Model = 3\n" + GOOD_TAIL, ["Model must be callable"]),
    ("non-tensor-input", HEAD + GOOD_MODEL + GOOD_TAIL.replace("[torch.randn(4, 8)]",
                                                               "[torch.randn(4, 8), 'sum']"),
     ["get_inputs() item 1 is str", "get_init_inputs"]),
    ("inputs-not-a-list", HEAD + GOOD_MODEL + GOOD_TAIL.replace("[torch.randn(4, 8)]", "{'x': 1}"),
     ["non-empty list of tensors", "dict"]),
    ("empty-inputs", HEAD + GOOD_MODEL + GOOD_TAIL.replace("[torch.randn(4, 8)]", "[]"),
     ["non-empty list"]),
    ("get-inputs-raises", HEAD + GOOD_MODEL + GOOD_TAIL.replace("return [torch.randn(4, 8)]",
                                                                "raise KeyError('shape')"),
     ["get_inputs() fails", "KeyError"]),
    ("get-init-inputs-raises", HEAD + GOOD_MODEL + GOOD_TAIL.replace("return []", "return 1 / 0"),
     ["get_init_inputs() fails", "ZeroDivisionError"]),
    ("unsupported-dtype", HEAD + GOOD_MODEL + GOOD_TAIL.replace("torch.randn(4, 8)",
                                                                "torch.randn(4, 8, dtype=torch.complex64)"),
     ["dtype complex64", "bfloat16"]),
    ("get-inputs-hangs", HEAD + GOOD_MODEL + GOOD_TAIL.replace("return [torch.randn(4, 8)]",
                                                                "while True:\n        pass"),
     ["did not finish within 1 s"]),
]


@pytest.mark.parametrize(("text", "words"), [pytest.param(*c[1:], id=c[0]) for c in BAD_FILES])
def test_bad_file_is_one_line_naming_it(tmp_path, text, words):
    src = write(tmp_path, "problem.py", text)
    with pytest.raises(KernelBenchError) as info:
        convert(src, tmp_path / "out", deadline_s=1.0)
    msg = str(info.value)
    assert isinstance(info.value, ForgeError)
    assert "\n" not in msg and msg.startswith(f"{src}: "), msg
    for word in words:
        assert word in msg, (word, msg)
    assert not (tmp_path / "out").exists()


def test_missing_file_and_occupied_out_dir(tmp_path):
    with pytest.raises(KernelBenchError, match="no such file"):
        convert(tmp_path / "nope.py", tmp_path / "out")
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "x").write_text("")
    with pytest.raises(KernelBenchError, match="not an empty directory"):
        convert(FIXTURES / "2_relu.py", busy)
    assert sorted(p.name for p in busy.iterdir()) == ["x"]


def test_converted_toml_is_plain_toml(tmp_path):
    task_dir = convert(FIXTURES / "3_row_softmax.py", tmp_path / "t")
    raw = tomllib.loads((task_dir / "task.toml").read_text())
    assert raw["format"] == "kernelbench"
    assert raw["policy"] == {"forbid": [], "library_ops": ["convolution"]}  # KernelBench lets ModelNew call PyTorch
    assert raw["judge"]["module_mode"] == "train"


def test_dropout_active_in_training_mode_is_said(tmp_path):
    src = write(tmp_path, "drop.py", HEAD + (
        "class Model(nn.Module):\n"
        "    def __init__(self, p):\n"
        "        super().__init__()\n"
        "        self.drop = nn.Dropout(p)\n\n"
        "    def forward(self, x):\n"
        "        return self.drop(x)\n\n\n"
        "n = 64\np = 0.25\n\n\n"
        "def get_inputs():\n    return [torch.rand(n, n)]\n\n\n"
        "def get_init_inputs():\n    return [p]\n"))
    text = (convert(src, tmp_path / "t") / "task.toml").read_text()
    assert "# NOTE: drop (Dropout(p=0.25)) drops values at random in training mode" in text


def test_forge_run_takes_a_kernelbench_file_as_forge_new_does(tmp_path):
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("FK_")}
    proc = subprocess.run([sys.executable, "-m", "forgekernel.cli", "run", str(FIXTURES / "2_relu.py"),
                           "--out", str(tmp_path / "run"), "--delivery", "cpu", "--max-iterations", "1"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "Traceback" not in out, out  # 2: cpu-interpret never meets a target
    assert (tmp_path / "run" / "task" / "task.toml").read_text().count('format = "kernelbench"') == 1
    assert (tmp_path / "run" / "best" / "kernel.py").is_file(), out


def test_a_constructor_that_reads_values_builds_with_its_weights_on_meta(tmp_path):
    """KernelBench L3 29 (Swin MLP) reads drop-path rates with .item() while it builds, which
    meta tensors cannot: it is built on the CPU with each weight moved to meta as it is
    registered (nothing of the weights' size allocated at once), and torch's Module is left as
    it was."""
    src = write(tmp_path, "reads_values.py", HEAD + (
        "class Model(nn.Module):\n"
        "    def __init__(self, dim):\n"
        "        super().__init__()\n"
        "        rates = [x.item() for x in torch.linspace(0, 0.1, 3)]\n"
        "        self.scale = rates[1]\n"
        "        self.proj = nn.Linear(dim, dim)\n"
        "        self.register_buffer('shift', torch.ones(dim))\n\n"
        "    def forward(self, x):\n"
        "        return self.proj(x) * self.scale + self.shift\n\n\n"
        "batch_size = 4\ndim = 8\n\n\n"
        "def get_inputs():\n    return [torch.randn(batch_size, dim)]\n\n\n"
        "def get_init_inputs():\n    return [dim]\n"))
    before = torch.nn.Module.register_parameter
    task = load_task(convert(src, tmp_path / "t"))
    assert torch.nn.Module.register_parameter is before
    from forgekernel.task import load_module

    module = load_module(Path(task.root) / "reference.py", name="_reads_values_ref")
    model = instance.model_at(task, module, meta=True)
    assert model.scale == pytest.approx(0.05)
    assert {t.device.type for _, t in instance.named_tensors(model)} == {"meta"}
    assert [n for n, _ in instance.named_tensors(model)] == ["proj.weight", "proj.bias", "shift"]
    assert [list(o.shape) for o in task.outputs.values()] == [["batch_size", "dim"]]  # the forward ran on meta


@pytest.mark.parametrize("command", ["run", "new"])
def test_forge_run_on_the_cpu_refuses_a_problem_without_a_smoke_workload(command, tmp_path):
    """A problem whose smallest set of sizes is over the smoke limits (its image size pinned,
    as KernelBench L3 29's) cannot be judged by the CPU interpreter: one line, a non-zero exit,
    no run dir (the judge would have nothing to run), from `forge run` and from `forge new`
    (which `forge bench` calls first)."""
    import os
    import subprocess
    import sys

    src = write(tmp_path, "pinned_image.py", HEAD + (
        "class Model(nn.Module):\n"
        "    def forward(self, x):\n"
        "        assert tuple(x.shape[1:]) == (3, 512, 512), 'trained at 512 x 512'\n"
        "        return torch.relu(x)\n\n\n"
        "batch_size = 4\n\n\n"
        "def get_inputs():\n    return [torch.randn(batch_size, 3, 512, 512)]\n\n\n"
        "def get_init_inputs():\n    return []\n"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("FK_")}
    extra = ["--max-iterations", "1"] if command == "run" else []
    proc = subprocess.run([sys.executable, "-m", "forgekernel.cli", command, str(src), "--out", str(tmp_path / "run"),
                           "--delivery", "cpu", *extra],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in out, out
    assert "has no smoke workload, and the cpu delivery" in out and len(out.strip().splitlines()) == 1, out
    assert not (tmp_path / "run").exists()
