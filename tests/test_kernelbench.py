"""KernelBench-style problem files convert into task dirs that load and run."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
import torch

from forgekernel.errors import ForgeError
from forgekernel.kernelbench import KernelBenchError, _family, convert, is_kernelbench_file
from forgekernel.profile.roofline import formula_flops, minimal_bytes, output_specs
from forgekernel.task import check_reference_module, load_task, shape_of

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "kernelbench"
REPO = Path(__file__).resolve().parents[1]

# fixture -> (family, axes of the one workload, smoke, number of outputs)
EXPECTED = {
    "1_square_matmul.py": ("matmul", {"N": 1024}, False, 1),
    "2_relu.py": ("elementwise", {"batch_size": 16, "dim": 16384}, False, 1),
    "3_row_softmax.py": ("softmax", {"batch_size": 8, "num_features": 2048}, True, 1),
    "4_layer_norm_affine.py": ("rownorm", {"tokens": 64, "features": 512}, True, 1),
    "5_cross_entropy_loss.py": ("cross_entropy", {"batch_size": 128, "num_classes": 1000}, False, 1),
}


def run_model(module, seed: int = 0):
    torch.manual_seed(seed)
    model = module.Model(*module.get_init_inputs())
    args = module.get_inputs()
    with torch.no_grad():
        out = model(*args)
    return args, (tuple(out) if isinstance(out, (tuple, list)) else (out,))


@pytest.mark.parametrize("fixture", sorted(EXPECTED))
def test_fixture_converts_loads_and_runs(tmp_path, fixture):
    src = FIXTURES / fixture
    assert is_kernelbench_file(src)
    family, axes, smoke, n_out = EXPECTED[fixture]
    task_dir = convert(src, tmp_path / "task")
    assert task_dir == tmp_path / "task"
    assert (task_dir / "reference.py").read_bytes() == src.read_bytes()
    task = load_task(task_dir)
    assert task.format == "kernelbench" and task.family == family
    assert task.policy.forbid == () and task.judge.hidden is False
    (wl,) = task.workloads
    assert wl.axes == axes and wl.smoke is smoke
    module = check_reference_module(task)
    args, outs = run_model(module)
    assert [shape_of(s, wl.axes) for s in task.inputs.values()] == [tuple(a.shape) for a in args]
    assert [f"torch.{s.dtype}" for s in task.inputs.values()] == [str(a.dtype) for a in args]
    assert len(outs) == n_out and all(torch.isfinite(o).all() for o in outs)
    declared = output_specs(task, module, wl)
    assert declared == [(tuple(o.shape), str(o.dtype).removeprefix("torch.")) for o in outs]
    in_bytes = sum(a.numel() * a.element_size() for a in args)
    out_bytes = sum(o.numel() * o.element_size() for o in outs)
    assert minimal_bytes(task, wl, declared) == in_bytes + out_bytes


def test_model_is_reproducible_under_one_seed(tmp_path):
    task = load_task(convert(FIXTURES / "2_relu.py", tmp_path / "t"))
    module = check_reference_module(task)
    (first,), (again,), (other,) = (run_model(module, seed=s)[1] for s in (5, 5, 6))
    assert torch.equal(first, again) and not torch.equal(first, other)


def test_square_matmul_flops_and_names(tmp_path):
    task = load_task(convert(FIXTURES / "1_square_matmul.py", tmp_path / "t"))
    assert task.name == "1_square_matmul"
    assert list(task.inputs) == ["A", "B"]
    assert task.cost.flops == "2 * N * N * N"
    assert formula_flops(task, task.workloads[0]) == 2 * 1024**3


def test_integer_inputs_get_a_randint_range(tmp_path):
    task = load_task(convert(FIXTURES / "5_cross_entropy_loss.py", tmp_path / "t"))
    labels = task.inputs["labels"]
    assert labels.dtype == "int64" and labels.dist.kind == "randint"
    assert 0 <= labels.dist.low < labels.dist.high <= 1000
    assert task.outputs["out"].shape == ()


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


HEAD = "import torch\nimport torch.nn as nn\n\n\n"


def test_batched_matmul_with_ambiguous_constants(tmp_path):
    src = write(tmp_path, "bmm.py", HEAD + (
        "class Model(nn.Module):\n"
        "    def forward(self, a, b):\n"
        "        return torch.bmm(a, b)\n\n\n"
        "batch = 4\nm = 32\nk = 32\nn = 48\n\n\n"
        "def get_inputs():\n    return [torch.randn(batch, m, k), torch.randn(batch, k, n)]\n\n\n"
        "def get_init_inputs():\n    return []\n"))
    task = load_task(convert(src, tmp_path / "t"))
    # m and k share the value 32, so that axis cannot take either name
    assert task.workloads[0].axes == {"batch": 4, "D1": 32, "n": 48}
    assert task.cost.flops == "2 * batch * D1 * D1 * n"
    assert task.family == "matmul" and task.workloads[0].smoke


def test_get_inputs_that_needs_real_tensors(tmp_path):
    src = write(tmp_path, "np_inputs.py", HEAD + "import numpy as np\n\n\n" + (
        "class Model(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x * float(x.abs().max().item())\n\n\n"
        "def get_inputs():\n    return [torch.from_numpy(np.ones((3, 5), dtype=np.float32))]\n\n\n"
        "def get_init_inputs():\n    return []\n"))
    task = load_task(convert(src, tmp_path / "t"))
    assert task.workloads[0].axes == {"D0": 3, "D1": 5}
    # forward calls .item(), which meta tensors cannot do: the outputs come from a CPU call
    assert task.outputs["out"].shape == ("D0", "D1")


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
    task_dir = convert(src, tmp_path / "t")
    task = load_task(task_dir)
    assert task.inputs["A"].dtype == "float16" and task.inputs["A"].shape == ("M", "N")
    assert task.inputs["s"].dtype == "float64" and task.inputs["s"].shape == ()
    assert "# a plain number (2.5), passed as is" in (task_dir / "task.toml").read_text()
    assert task.outputs["out"].dtype == "float16" and task.workloads[0].smoke
    module = check_reference_module(task)
    assert run_model(module)[1][0].shape == (64, 48)


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
]


@pytest.mark.parametrize(("text", "words"), [pytest.param(*c[1:], id=c[0]) for c in BAD_FILES])
def test_bad_file_is_one_line_naming_it(tmp_path, text, words):
    src = write(tmp_path, "problem.py", text)
    with pytest.raises(KernelBenchError) as info:
        convert(src, tmp_path / "out")
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


@pytest.mark.parametrize(("text", "family"), [
    ("19_ReLU\nreturn torch.relu(x)", "elementwise"),
    ("@torch.no_grad()\ndef forward(self, x):\n    return torch.sigmoid(x)", "elementwise"),
    ("Gemm_ReLU\nself.linear = nn.Linear(a, b)", "matmul"),
    ("C = A @ B", "matmul"),
    ("Conv2d_ReLU_BiasAdd\nself.conv = nn.Conv2d(3, 16, 3)", "other"),
    ("attention\nw = torch.softmax(q @ k.T, -1)\nreturn w @ v", "other"),
    ("36_RMSNorm_", "rownorm"),
    ("BatchNorm\nreturn self.bn(x)", "other"),
    ("return torch.cumsum(x, 1)", "other"),
])
def test_family_guess(text, family):
    assert _family(text) == family


def test_converted_toml_is_plain_toml(tmp_path):
    task_dir = convert(FIXTURES / "3_row_softmax.py", tmp_path / "t")
    raw = tomllib.loads((task_dir / "task.toml").read_text())
    assert raw["format"] == "kernelbench" and raw["policy"] == {"forbid": []}
