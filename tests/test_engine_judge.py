"""`forge run` with the real judge (forgekernel.judge) on the CPU interpreter: Triton
candidates from the scripted agent, judged in fresh worker processes, ids that agree."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from engine_support.runs import KERNELS, REPO, new_run, step, write_script
from forgekernel import ledger, rundir
from forgekernel.judge.candidate import candidate_hash
from forgekernel.records import Attempt


def test_content_hash_is_the_judges_candidate_hash(tmp_path):
    d = tmp_path / "cand"
    (d / "sub" / "__pycache__").mkdir(parents=True)
    (d / ".git").mkdir()
    (d / "kernel.py").write_text("def run(x):\n    return x\n")
    (d / "sub" / "helper.cu").write_text("__global__ void k() {}\n")
    (d / "sub" / "__pycache__" / "helper.cpython-311.pyc").write_bytes(b"\0cache")
    (d / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (d / ".hidden").write_text("not part of the candidate")
    assert rundir.content_hash(d) == candidate_hash(d)
    (d / "sub" / "helper.cu").write_text("__global__ void k2() {}\n")
    assert rundir.content_hash(d) == candidate_hash(d)
    assert [p.as_posix() for p in rundir.candidate_files(d)] == ["kernel.py", "sub/helper.cu"]


@pytest.mark.slow
def test_forge_run_with_the_real_judge_on_the_cpu(tmp_path):
    root = new_run(tmp_path)
    script = write_script(tmp_path / "s.json", [
        step("triton_wrong.py", "M0.1", summary="forgot the weight"),
        step("triton_row_slow.py", "M0.1", summary="row kernel, slow"),
        step("triton_row.py", "M1.1", summary="row kernel")])
    proc = subprocess.run([sys.executable, "-m", "forgekernel.cli", "run", str(root), "--script", str(script),
                           "--delivery", "cpu"], capture_output=True, text=True, cwd=REPO, timeout=580)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    rd = rundir.open(root)
    got = [a for a in ledger.read(rd.ledger)[0] if isinstance(a, Attempt)]
    assert [a.verdict.status.value for a in got] == ["WRONG_VALUES", "PASSED", "PASSED"]
    assert [a.best for a in got] == [False, True, True]
    assert all(a.verdict.judge.startswith("forgekernel") and a.verdict.candidate == a.candidate for a in got)
    assert got[0].verdict.feedback  # written for the next attempt
    assert rd.best_kernel.read_text() == (KERNELS / "triton_row.py").read_text()
    verdict = json.loads(rd.best_verdict.read_text())
    assert verdict["status"] == "PASSED" and verdict["candidate"] == got[2].candidate
    assert {w["timing_label"] for w in verdict["workloads"] if not w["hidden"]} == {"cpu-interpret"}
    report = rd.report.read_text()
    assert report.splitlines()[2].startswith(f"best: {got[2].candidate} -- cpu-interpret median ")
    assert "(exit code 2)" in report and rundir.content_hash(rd.workspace) == got[2].candidate
