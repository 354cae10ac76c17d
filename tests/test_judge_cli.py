"""`forge judge` and `forge check` as a user runs them (real subprocesses, CPU delivery)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "tests" / "fixtures" / "kernels"
RMSNORM = str(ROOT / "tasks" / "rmsnorm")


def forge(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "FK_DELIVERY"}
    return subprocess.run([sys.executable, "-m", "forgekernel.cli", *args], capture_output=True,
                          text=True, timeout=300, env=env, cwd=cwd)


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def test_judge_json_prints_only_the_verdict_and_exits_0(tmp_path):
    kernel = KERNELS / "correct" / "rmsnorm_rowwise" / "kernel.py"
    out = forge("judge", RMSNORM, str(kernel), "--json", "--delivery", "cpu", "--trials", "1")
    assert out.returncode == 0, out.stderr
    verdict = json.loads(out.stdout)
    assert verdict["status"] == "PASSED" and verdict["delivery"] == "cpu"
    assert verdict["judge"].startswith("forgekernel ")
    assert set(verdict["versions"]) >= {"python", "torch", "triton"}
    timed = [w for w in verdict["workloads"] if w["median_ms"] is not None]
    assert timed and all(w["timing_label"] == "cpu-interpret" for w in timed)


def test_judge_wrong_kernel_exits_1_with_feedback():
    out = forge("judge", RMSNORM, str(KERNELS / "wrong" / "rmsnorm_wrong_values"), "--delivery", "cpu",
                "--trials", "1", "--no-timing")
    assert out.returncode == 1
    assert out.stdout.startswith("WRONG_VALUES")
    assert "What to look at" in out.stdout and "index (" in out.stdout


def test_a_segfaulting_candidate_does_not_take_forge_down():
    out = forge("judge", RMSNORM, str(KERNELS / "wrong" / "rmsnorm_segfault"), "--json", "--delivery", "cpu")
    assert out.returncode == 1
    verdict = json.loads(out.stdout)
    assert verdict["status"] == "RUNTIME_ERROR" and "SIGSEGV" in verdict["reason"]


def test_check_runs_visible_smoke_only_without_timing(tmp_path):
    # run from inside a workspace, as an agent does: the kernel path is relative
    work = tmp_path / "workspace"
    work.mkdir()
    (work / "kernel.py").write_text((KERNELS / "correct" / "rmsnorm_rowwise" / "kernel.py").read_text())
    out = forge("check", RMSNORM, "kernel.py", "--json", "--delivery", "cpu", cwd=work)
    assert out.returncode == 0, out.stderr
    verdict = json.loads(out.stdout)
    assert verdict["status"] == "PASSED"
    assert [w["axes"] for w in verdict["workloads"]] == [{"M": 16, "N": 256}, {"M": 7, "N": 384}]
    assert all(w["median_ms"] is None and not w["hidden"] for w in verdict["workloads"])


@pytest.mark.parametrize("args", [
    ("judge", str(ROOT / "tasks" / "no_such_task"), str(KERNELS / "correct" / "rmsnorm_rowwise")),
    ("judge", RMSNORM, str(ROOT / "no_such_kernel.py")),
    ("judge", RMSNORM, str(KERNELS / "correct")),
    ("check", RMSNORM, str(KERNELS / "correct" / "rmsnorm_rowwise"), "--delivery", "pigeon"),
])
def test_bad_input_is_one_line_and_exit_2(args):
    out = forge(*args)
    assert out.returncode == 2
    assert out.stderr.startswith("forge: error: ") and out.stderr.strip().count("\n") == 0
    assert "Traceback" not in out.stderr and out.stdout == ""


def test_local_without_a_gpu_is_an_error_not_a_fallback():
    if _cuda():
        pytest.skip("this machine has a GPU")
    out = forge("judge", RMSNORM, str(KERNELS / "correct" / "rmsnorm_rowwise"), "--delivery", "local")
    assert out.returncode == 2 and "CUDA" in out.stderr and out.stderr.count("\n") == 1
