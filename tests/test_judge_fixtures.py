"""Every kernel fixture through the real CPU judge (fresh worker, Triton interpreter).

correct/ must PASS, wrong/ must fail with the right status, cheating/ must never PASS.
Fixtures whose docstring starts with "[gpu-only]" run only with a CUDA GPU. Options keep
the interpreter work small (two trials; hidden workloads and timing where the fixture
needs them).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from forgekernel.delivery import make_runner
from forgekernel.judge import JudgeOptions, candidate_hash, judge
from forgekernel.records import Status
from forgekernel.task import load_task

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "tests" / "fixtures" / "kernels"
TASKS = sorted((p.name for p in (ROOT / "tasks").iterdir() if (p / "task.toml").is_file()),
               key=len, reverse=True)

WRONG = {
    "rmsnorm_wrong_shape": Status.WRONG_SHAPE, "rmsnorm_wrong_dtype": Status.WRONG_DTYPE,
    "rmsnorm_wrong_values": Status.WRONG_VALUES, "rmsnorm_unmasked_tail": Status.WRONG_VALUES,
    "rmsnorm_syntax_error": Status.COMPILE_ERROR, "rmsnorm_no_run": Status.COMPILE_ERROR,
    "rmsnorm_import_error": Status.COMPILE_ERROR, "rmsnorm_runtime_error": Status.RUNTIME_ERROR,
    "rmsnorm_timeout": Status.TIMEOUT, "rmsnorm_segfault": Status.RUNTIME_ERROR,
    "rmsnorm_os_exit": Status.RUNTIME_ERROR, "rmsnorm_sys_exit": Status.RUNTIME_ERROR,
    "rmsnorm_flood": Status.RUNTIME_ERROR, "fused_add_rmsnorm_one_output": Status.WRONG_SHAPE,
}
NEEDS_HIDDEN = {"rmsnorm_visible_shapes_only", "rmsnorm_task_toml_shapes"}
NEEDS_TIMING = {"rmsnorm_memo_pointer", "rmsnorm_gpu_side_stream", "rmsnorm_unobserved_fast_path"}
"""Cheats that behave honestly unless hidden workloads (or timed calls) are judged."""


def _task_of(name: str) -> str:
    return next(t for t in TASKS if name.startswith(t + "_"))


def _gpu_only(path: Path) -> bool:
    return (path / "kernel.py").read_text().lstrip('"').startswith("[gpu-only]")


def _cases(kind: str) -> list:
    out = []
    for path in sorted((KERNELS / kind).iterdir()):
        marks = [pytest.mark.gpu] if _gpu_only(path) else []
        out.append(pytest.param(path, id=path.name, marks=marks))
    return out


def _judge(path: Path, **kw):
    task = load_task(ROOT / "tasks" / _task_of(path.name), check_reference=False)
    opts = {"trials": 2, "timing": False, "hidden": False, "timeout_s": 120, **kw}
    delivery = "local" if _gpu_only(path) else "cpu"
    return judge(task, path, make_runner(delivery), JudgeOptions(**opts))


def _common(verdict, path: Path) -> None:
    assert verdict.candidate == candidate_hash(path)
    assert verdict.judge.startswith("forgekernel ")
    assert all(w.axes == {} and w.max_rel_err is None for w in verdict.workloads if w.hidden)
    if not verdict.passed:
        assert verdict.feedback and verdict.reason
        assert verdict.speedup is None


@pytest.mark.parametrize("path", _cases("correct"))
def test_correct_kernels_pass(path):
    timed = path.name == "rmsnorm_rowwise"
    verdict = _judge(path, hidden=True, timing=timed)
    _common(verdict, path)
    assert verdict.status is Status.PASSED, verdict.feedback
    assert any(w.hidden and w.passed for w in verdict.workloads)
    assert all(w.passed for w in verdict.workloads)
    if timed:
        visible = [w for w in verdict.workloads if not w.hidden]
        assert all(w.timing_label == "cpu-interpret" and w.median_ms > 0 for w in visible)
        assert verdict.speedup > 0 and verdict.profile["timing_label"] == "cpu-interpret"
        assert verdict.profile["kernels"][0]["own"] is True


@pytest.mark.parametrize("path", _cases("wrong"))
def test_wrong_kernels_fail_with_the_right_status(path):
    hangs = path.name.endswith("timeout")
    verdict = _judge(path, timeout_s=20 if hangs else 120)
    _common(verdict, path)
    assert verdict.status is WRONG[path.name], verdict.reason
    assert verdict.wall_s < 60
    if hangs:  # stopped by the verifier before its own deadline: the verdict names the workload
        assert verdict.wall_s < 20 and "no answer on M=16 x N=256" in verdict.reason


@pytest.mark.parametrize("path", _cases("cheating"))
def test_cheating_kernels_never_pass(path):
    text = (path / "kernel.py").read_text()
    assert "Exploit:" in text.split('"""')[1], "each cheating fixture names its exploit"
    verdict = _judge(path, hidden=path.name in NEEDS_HIDDEN, timing=path.name in NEEDS_TIMING)
    _common(verdict, path)
    assert verdict.status is not Status.PASSED, f"{path.name} fooled the judge"
    assert verdict.status in (Status.REJECTED, Status.WRONG_VALUES), verdict.reason


HONEST_WITHOUT_SCAN = {"rmsnorm_introspect_judge", "rmsnorm_read_reference_file"}
"""Their exploit looks for the judge in its own process and for reference.py beside it;
in the sandboxed executor both searches come back empty and the honest kernel runs."""
CANNOT_REACH_WITHOUT_SCAN = {"rmsnorm_import_reference": "ModuleNotFoundError"}
"""Their exploit needs a module the executor cannot import (the task's reference): it fails."""


@pytest.mark.parametrize("path", _cases("cheating"))
def test_cheats_fail_with_the_scan_off(path):
    """The source scan is feedback, not the defence: with it off, what the candidate does
    when it runs decides, and no cheat passes on its exploit."""
    verdict = _judge(path, static=False, hidden=path.name in NEEDS_HIDDEN,
                     timing=path.name in NEEDS_TIMING)
    _common(verdict, path)
    if path.name in HONEST_WITHOUT_SCAN:
        assert verdict.status is Status.PASSED, verdict.reason  # nothing found: the honest kernel
        return
    if path.name in CANNOT_REACH_WITHOUT_SCAN:
        assert verdict.status is Status.RUNTIME_ERROR, verdict.reason
        assert CANNOT_REACH_WITHOUT_SCAN[path.name] in verdict.reason
        return
    assert verdict.status in (Status.REJECTED, Status.WRONG_VALUES), verdict.reason


def test_a_kernel_that_reads_nothing_where_the_answer_ignores_the_inputs_passes():
    """At N = 1 an exclusive cumsum is zeros whatever the input, and the kernel rightly reads
    nothing there; the "none of your kernels read the inputs" rule holds only where the
    reference's own answer depends on the input values (KernelBench L1 92 met this)."""
    fixtures = ROOT / "tests" / "fixtures" / "tasks"
    task = load_task(fixtures / "exclusive_cumsum")
    verdict = judge(task, fixtures / "exclusive_cumsum_kernel", make_runner("cpu"),
                    JudgeOptions(trials=2, timing=False, hidden=False, timeout_s=120))
    assert verdict.status is Status.PASSED, verdict.reason


def test_an_answer_the_fp32_reference_gives_passes_where_it_misses_the_float64_oracle(tmp_path):
    """Rounding at values where fp32 and float64 land on different sides: a kernel computing
    as the reference does is 0.1 off the oracle at many elements; the judge's second opinion,
    the reference itself in its own dtype on the same values, accepts it (a KernelBench-style
    fixed tolerance leaves no calibrated room for it). An answer off both is still wrong."""
    fixtures = ROOT / "tests" / "fixtures" / "tasks"
    task = load_task(fixtures / "round_tenths")
    opts = JudgeOptions(trials=2, timing=False, hidden=False, timeout_s=120)
    timed = JudgeOptions(trials=2, timing=True, hidden=False, timeout_s=120)  # timed calls are checked too
    verdict = judge(task, fixtures / "round_tenths_kernel", make_runner("cpu"), timed)
    assert verdict.status is Status.PASSED, verdict.reason
    off = (fixtures / "round_tenths_kernel" / "kernel.py").read_text()
    (tmp_path / "kernel.py").write_text(off.replace("r / 10.0, mask", "(r + 1.0) / 10.0, mask"))
    verdict = judge(task, tmp_path, make_runner("cpu"), opts)
    assert verdict.status is Status.WRONG_VALUES, verdict.reason


@pytest.mark.parametrize("name", ["correct/rmsnorm_rowwise", "cheating/rmsnorm_mutate_inputs",
                                  "cheating/rmsnorm_uninit_accumulator", "wrong/rmsnorm_wrong_values"])
def test_copies_in_host_memory(name):
    """Planned with almost no device memory (``forge judge --device-memory``), the verifier keeps
    its pristine inputs, outputs and inputs after in host memory: the verdict is the same."""
    path = KERNELS / name
    verdict = _judge(path, device_memory_gib=1e-6)
    _common(verdict, path)
    assert verdict.profile["host_copies"], "the plan did not keep any workload's copies on the host"
    if verdict.status is Status.PASSED:  # those workloads got one trial, and the verdict says so
        assert any(n.startswith("one trial of") for n in verdict.profile["notes"]), verdict.profile["notes"]
    usual = _judge(path)
    assert not usual.profile["host_copies"]
    assert not any(n.startswith("one trial of") for n in usual.profile["notes"])
    def words(reason: str) -> str:  # the inputs come from secret seeds: errors differ by draw
        return re.sub(r"\d[\d.e+-]*", "#", reason)

    assert (verdict.status, words(verdict.reason)) == (usual.status, words(usual.reason))
