"""The CPU judge on converted KernelBench tasks: Model and ModelNew in the same module mode,
built per workload under one init seed, and KernelBench's tolerances (with TF32) applied."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from forgekernel.delivery import make_runner
from forgekernel.judge import JudgeOptions, judge
from forgekernel.judge.correctness import DTYPE_FLOOR, TF32_FLOOR, tolerance_for
from forgekernel.kernelbench import convert
from forgekernel.records import JudgeSpec, Status
from forgekernel.task import load_task

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "kernelbench"
KERNELS = ROOT / "tests" / "fixtures" / "kernelbench_kernels"
FAST = JudgeOptions(trials=2, timing=False, timeout_s=300)


def candidate(tmp_path: Path, name: str) -> Path:
    d = tmp_path / name
    d.mkdir()
    shutil.copyfile(KERNELS / f"{name}.py", d / "kernel.py")
    return d


def edit_judge(task_dir: Path, old: str, new: str):
    toml = task_dir / "task.toml"
    text = toml.read_text()
    assert old in text
    toml.write_text(text.replace(old, new))
    return load_task(task_dir)


def test_tolerance_for_applies_the_task_keys():
    kb = JudgeSpec(tolerance={"float32": 1e-2}, tf32=True)
    t = tolerance_for("float32", 1e-7, kb, interpret=False)
    assert (t.tol, t.scale, t.source) == (1e-2, 1.0, "task [judge] tolerance.float32")
    assert tolerance_for("int64", 0.0, kb, interpret=False).tol == 0.0  # exact dtypes stay exact
    assert tolerance_for("float32", 1e-7, JudgeSpec(tf32=True), interpret=False).tol == TF32_FLOOR
    assert tolerance_for("float32", 1e-7, JudgeSpec(), interpret=False).tol == DTYPE_FLOOR["float32"]
    assert tolerance_for("bfloat16", 0.0, JudgeSpec(tolerance={"float32": 1e-2}), interpret=False).source \
        == "calibrated"
    with pytest.raises(ValueError, match="not a floating dtype"):
        JudgeSpec(tolerance={"int64": 1.0})


@pytest.fixture(scope="module")
def batchnorm_task(tmp_path_factory) -> Path:
    return convert(FIXTURES / "6_batchnorm_train.py", tmp_path_factory.mktemp("bn") / "task")


def test_batchnorm_in_training_mode_is_passed(tmp_path, batchnorm_task):
    task = load_task(batchnorm_task)
    verdict = judge(task, candidate(tmp_path, "batchnorm_train"), make_runner("cpu"), FAST)
    assert verdict.status is Status.PASSED, verdict.feedback
    assert len([w for w in verdict.workloads if not w.hidden]) == len(task.smoke_workloads())
    assert verdict.profile["hidden_workloads"] >= 1  # KernelBench tasks get hidden workloads too
    assert verdict.profile["tolerances"][0]["source"] == "task [judge] tolerance.float32"


def test_module_mode_is_the_same_for_both_models(tmp_path, batchnorm_task):
    train = load_task(batchnorm_task)
    wrong = judge(train, candidate(tmp_path, "batchnorm_eval"), make_runner("cpu"), FAST)
    assert wrong.status is Status.WRONG_VALUES  # running statistics where batch statistics are due
    copy = tmp_path / "eval_task"
    shutil.copytree(batchnorm_task, copy)
    evaluated = edit_judge(copy, 'module_mode = "train"', 'module_mode = "eval"')
    right = judge(evaluated, tmp_path / "batchnorm_eval", make_runner("cpu"), FAST)
    assert right.status is Status.PASSED, right.feedback


MATMUL = """import torch
import torch.nn as nn


class Model(nn.Module):
    \"\"\"C = A @ B for (M, K) and (K, N) matrices.\"\"\"

    def forward(self, A, B):
        return torch.matmul(A, B)


M = 256
K = 512
N = 192


def get_inputs():
    return [torch.rand(M, K), torch.rand(K, N)]


def get_init_inputs():
    return []
"""


def test_tf32_rounding_passes_the_kernelbench_tolerance_only(tmp_path):
    src = tmp_path / "mm.py"
    src.write_text(MATMUL)
    task_dir = convert(src, tmp_path / "task")
    kernel = candidate(tmp_path, "matmul_tf32")
    kb = judge(load_task(task_dir), kernel, make_runner("cpu"), FAST)
    assert kb.status is Status.PASSED, kb.feedback
    strict = edit_judge(task_dir, "tolerance = { float32 = 0.01, float16 = 0.01, bfloat16 = 0.01 }\n", "")
    strict = edit_judge(task_dir, "tf32 = true", "tf32 = false")
    assert strict.judge.tolerance == {} and not strict.judge.tf32
    calibrated = judge(strict, kernel, make_runner("cpu"), FAST)
    assert calibrated.status is Status.WRONG_VALUES  # fp32's calibrated floor rejects TF32 rounding
    allowed = judge(edit_judge(task_dir, "tf32 = false", "tf32 = true"), kernel, make_runner("cpu"), FAST)
    assert allowed.status is Status.PASSED, allowed.feedback
    assert allowed.profile["tolerances"][0]["source"] == "calibrated (tf32 floor)"


def test_a_model_new_constructor_that_raises_is_the_candidates_runtime_error(tmp_path, batchnorm_task):
    d = tmp_path / "bad_init"
    d.mkdir()
    source = (KERNELS / "batchnorm_train.py").read_text()
    (d / "kernel.py").write_text(source.replace("        super().__init__()\n",
                                                "        super().__init__()\n"
                                                "        if channels < 30:\n"
                                                "            raise ValueError('too few channels')\n", 1))
    verdict = judge(load_task(batchnorm_task), d, make_runner("cpu"), FAST)
    assert verdict.status is Status.RUNTIME_ERROR
    assert "ModelNew(*get_init_inputs()) at" in verdict.reason and "ValueError" in verdict.reason


def test_device_footprint_counts_outputs_as_well_as_inputs_and_parameters(tmp_path):
    """A product over a short K: 2 x 8 MiB of inputs and a 4 GiB output. Sized by its inputs
    alone it was judged beside other jobs on a shared GPU and the verifier ran out of memory."""
    from forgekernel.judge.problem import Problem

    src = tmp_path / "short_k.py"
    src.write_text("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
                   "    def forward(self, a, b):\n        return a @ b\n\n\n"
                   "M = 32768\nN = 32768\nK = 64\n\n\n"
                   "def get_inputs():\n    return [torch.rand(M, K), torch.rand(K, N)]\n\n\n"
                   "def get_init_inputs():\n    return []\n")
    task = load_task(convert(src, tmp_path / "t"))
    full = [w for w in task.workloads if not w.smoke]
    inputs, output = 2 * 32768 * 64 * 4, 32768 * 32768 * 4
    assert Problem(task, "cpu").footprint(full) == inputs + output


def test_oracle_moves_to_host_memory_when_the_device_cannot_hold_it(tmp_path):
    """On an 80 GB H100 a 1.6e9-element ReLU's float64 oracle ran the device out of memory
    beside the executors' pools, and the verifier then tried the reference in its own dtype
    (which ran out too). Out of memory is never a reason for the own-dtype oracle: the float64
    oracle is computed in host memory, with the same parameters, and the verdict says so.
    The fake device here is ``meta`` with a model that raises out of memory there."""
    import torch

    from forgekernel.judge.problem import Problem

    src = tmp_path / "scaled.py"
    src.write_text("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
                   "    def __init__(self):\n        super().__init__()\n"
                   "        self.w = nn.Parameter(torch.randn(N))\n\n"
                   "    def forward(self, x):\n"
                   "        if x.is_meta:\n"
                   "            raise torch.OutOfMemoryError('CUDA out of memory. Tried to allocate 12.00 GiB')\n"
                   "        return torch.relu(x) * self.w\n\n\n"
                   "M = 64\nN = 32\n\n\n"
                   "def get_inputs():\n    return [torch.randn(M, N)]\n\n\n"
                   "def get_init_inputs():\n    return []\n")
    task = load_task(convert(src, tmp_path / "t"))
    wl = task.workloads[0]
    assert wl.axes["M"] == 64  # small enough to be its own smoke workload
    problem = Problem(task, "meta")
    x = torch.randn(64, 32)  # the verifier's pristine copy, kept in host memory
    outs, up = problem.oracle_with_inputs(wl, [x])
    assert outs[0].device.type == "cpu" and outs[0].dtype == torch.float64 and up[0].dtype == torch.float64
    cpu = Problem(task, "cpu")
    cpu.init_seed = problem.init_seed  # the same parameters as the device's model
    assert torch.equal(outs[0], cpu.oracle(wl, [x])[0])
    assert not problem.own_precision
    assert problem.notes == ["correctness oracle: computed in host memory where the device could not hold "
                             "its float64 copies"]
    assert problem.oracle(wl, [x])[0].device.type == "cpu" and len(problem.notes) == 1
