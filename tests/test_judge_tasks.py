"""Task shapes beyond the examples: KernelBench files, a float32 task (precision downgrades
must fail its tight calibrated tolerance), a performance reference, a broken reference."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from forgekernel.delivery import make_runner
from forgekernel.judge import JudgeError, JudgeOptions, judge
from forgekernel.records import Status
from forgekernel.task import load_task

ROOT = Path(__file__).resolve().parents[1]
ROWWISE = ROOT / "tests" / "fixtures" / "kernels" / "correct" / "rmsnorm_rowwise"
FAST = JudgeOptions(trials=2, timing=False, hidden=False, timeout_s=120)


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


KB_TOML = """
name = "kb_scaled_relu"
format = "kernelbench"
[axes]
[inputs.x]
dtype = "float32"
shape = [8, 96]
[[workload]]
smoke = true
"""
KB_REFERENCE = """
import torch

class Model(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.randn(n))

    def forward(self, x):
        return torch.relu(x) * self.scale

def get_inputs():
    return [torch.randn(8, 96)]

def get_init_inputs():
    return [96]
"""
KB_CANDIDATE = """
import torch
import triton
import triton.language as tl


@triton.jit
def _scaled_relu(x_ptr, s_ptr, out_ptr, n, cols, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    s = tl.load(s_ptr + offs % cols, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0) * {scale}, mask=mask)


class ModelNew(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.randn(n))

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        _scaled_relu[(triton.cdiv(x.numel(), 256),)](x, self.scale, out, x.numel(), x.shape[-1], BLOCK=256)
        return out
"""


def test_kernelbench_model_new_under_the_same_seed(tmp_path):
    _write(tmp_path / "task" / "task.toml", KB_TOML)
    _write(tmp_path / "task" / "reference.py", KB_REFERENCE)
    task = load_task(tmp_path / "task")
    _write(tmp_path / "good" / "kernel.py", KB_CANDIDATE.replace("{scale}", "s"))
    _write(tmp_path / "bad" / "kernel.py", KB_CANDIDATE.replace("{scale}", "1.0"))
    good = judge(task, tmp_path / "good", make_runner("cpu"), FAST)
    assert good.status is Status.PASSED, good.feedback
    assert good.workloads[0].axes == {} and good.workloads[0].passed
    bad = judge(task, tmp_path / "bad", make_runner("cpu"), FAST)
    assert bad.status is Status.WRONG_VALUES


def _fp32_task(tmp_path: Path) -> Path:
    task = tmp_path / "rmsnorm_fp32"
    shutil.copytree(ROOT / "tasks" / "rmsnorm", task)
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace('dtype = "bfloat16"', 'dtype = "float32"')
                    .replace('name = "rmsnorm"', 'name = "rmsnorm_fp32"'))
    return task


def test_float32_task_rejects_a_precision_downgrade(tmp_path):
    task = load_task(_fp32_task(tmp_path))
    good = judge(task, ROWWISE, make_runner("cpu"), FAST)
    assert good.status is Status.PASSED, good.feedback
    assert good.profile["tolerances"][0]["tol"] == pytest.approx(1e-5)  # the fp32 floor
    source = (ROWWISE / "kernel.py").read_text()
    downgraded = source.replace("x = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=0.0).to(tl.float32)",
                                "x = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=0.0).to(tl.float16)")
    assert downgraded != source
    _write(tmp_path / "fp16" / "kernel.py", downgraded)
    bad = judge(task, tmp_path / "fp16", make_runner("cpu"), FAST)
    assert bad.status is Status.WRONG_VALUES
    assert bad.workloads[0].max_rel_err > 10 * bad.workloads[0].tolerance


def test_perf_reference_is_timed_instead_of_the_reference(tmp_path):
    task = load_task(ROOT / "tasks" / "rmsnorm")
    opts = JudgeOptions(trials=1, hidden=False, reps=2, perf_reference=ROWWISE)
    verdict = judge(task, ROWWISE, make_runner("cpu"), opts)
    assert verdict.status is Status.PASSED, verdict.feedback
    # candidate and performance reference are the same interpreted kernel: comparable times
    for w in verdict.workloads:
        assert w.reference_ms > 1.0 and w.timing_label == "cpu-interpret"


def test_a_broken_reference_is_a_judge_error_not_a_verdict(tmp_path):
    task_dir = tmp_path / "broken"
    shutil.copytree(ROOT / "tasks" / "rmsnorm", task_dir)
    (task_dir / "reference.py").write_text("def run(x, weight):\n    raise ValueError('broken')\n")
    task = load_task(task_dir)
    with pytest.raises(JudgeError, match="reference fails"):
        judge(task, ROWWISE, make_runner("cpu"), FAST)


GLOBAL_INIT_REFERENCE = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(batch_size, n))

    def forward(self, x):
        return x + self.bias


batch_size = 16
n = 32


def get_inputs():
    return [torch.randn(batch_size, n)]


def get_init_inputs():
    return [n]
"""
GLOBAL_INIT_CANDIDATE = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _add(x_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(batch_size, n))

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        _add[(triton.cdiv(x.numel(), 256),)](x, self.bias.contiguous(), out, x.numel(), BLOCK=256)
        return out
"""


def test_model_new_reads_the_workloads_module_constants(tmp_path):
    """A KernelBench __init__ that reads a module constant (``batch_size``, an axis the hidden
    workloads vary), copied into ModelNew whose file does not define it: the verifier lends
    the candidate module each workload's value, as the reference's module gets it."""
    from forgekernel.kernelbench import convert

    _write(tmp_path / "problem.py", GLOBAL_INIT_REFERENCE)
    task = load_task(convert(tmp_path / "problem.py", tmp_path / "task"))
    _write(tmp_path / "cand" / "kernel.py", GLOBAL_INIT_CANDIDATE)
    verdict = judge(task, tmp_path / "cand", make_runner("cpu"),
                    JudgeOptions(trials=1, timing=False, hidden=True, timeout_s=120))
    assert verdict.status is Status.PASSED, verdict.feedback
    assert len({w.axes.get("batch_size") for w in verdict.workloads if not w.hidden}) > 1
