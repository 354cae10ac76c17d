"""One definition of a candidate (forgekernel.candidate): its sources, its id, its staged copy.

The id of `best/` (which also holds `verdict.json`) and of `best/kernel.py` must be the id the
ledger recorded; ids recorded by the earlier all-files hash must still verify on resume.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from engine_support.fake_judge import judge_in_process
from engine_support.runs import REPO, agents, new_run, step, write_script
from forgekernel import candidate
from forgekernel.delivery import make_runner
from forgekernel.judge.candidate import candidate_hash
from forgekernel.records import Attempt
from forgekernel.run import engine, ledger, rundir

RESULTS = REPO / "benchmarks" / "results"


def recorded_best(run: Path) -> str:
    """The id of the last attempt the ledger marked best."""
    best = ""
    for line in (run / "ledger.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event.get("kind") is None and event.get("best"):
            best = event["candidate"]
    return best


def h200_runs() -> list[Path]:
    return sorted(p.parent.parent for p in RESULTS.glob("**/best/kernel.py"))


def test_best_dir_and_its_kernel_file_hash_to_the_recorded_best():
    runs = h200_runs()
    assert len(runs) >= 10
    for run in runs:
        want = recorded_best(run)
        assert (run / "best" / "verdict.json").is_file()
        assert candidate.source_hash(run / "best") == want, run
        assert candidate.source_hash(run / "best" / "kernel.py") == want, run
        assert candidate_hash(run / "best" / "kernel.py") == want  # the judge's name for it
        assert rundir.content_hash(run / "best") == want  # the run dir's


def test_sources_only(tmp_path):
    d = tmp_path / "cand"
    (d / "sub" / "__pycache__").mkdir(parents=True)
    (d / ".git").mkdir()
    (d / "kernel.py").write_text("def run(x):\n    return x\n")
    (d / "sub" / "helper.cu").write_text("__global__ void k() {}\n")
    (d / "sub" / "__pycache__" / "helper.cpython-311.pyc").write_bytes(b"\0cache")
    (d / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    first = candidate.source_hash(d)
    for name, data in (("verdict.json", "{}"), ("profile.json", "{}"), ("notes.md", "why"),
                       ("lib.so", "\0")):
        (d / name).write_text(data)
    assert candidate.source_hash(d) == first
    assert [p.as_posix() for p in candidate.source_files(d)] == ["kernel.py", "sub/helper.cu"]
    (d / "tuned.json").write_text('{"BLOCK": 128}')  # data a kernel may load is a source
    assert candidate.source_hash(d) != first
    staged = candidate.stage(d, tmp_path / "staged")
    assert sorted(p.relative_to(staged).as_posix() for p in staged.rglob("*") if p.is_file()) == [
        "kernel.py", "sub/helper.cu", "tuned.json"]
    assert candidate.source_hash(staged) == candidate.source_hash(d)


def test_forge_judge_names_best_kernel_py_as_the_report_does(tmp_path):
    run = RESULTS / "engine_h200_2026-12-03b" / "rmsnorm"
    proc = subprocess.run([sys.executable, "-m", "forgekernel.cli", "judge", str(REPO / "tasks" / "rmsnorm"),
                           str(run / "best" / "kernel.py"), "--json", "--delivery", "cpu", "--no-timing"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    assert json.loads(proc.stdout)["candidate"] == recorded_best(run)
    assert recorded_best(run) in (run / "report.md").read_text().splitlines()[2]


def _legacy_run(tmp_path: Path) -> tuple[Path, str, str]:
    """A run dir as the all-files hash recorded it: a best and a started, unjudged candidate,
    each with a non-source file (notes.md) that the legacy id covered."""
    root = new_run(tmp_path)
    kernel = (REPO / "tests" / "fixtures" / "engine" / "kernels" / "torch_fast.py").read_text()
    notes = {"kernel.py": kernel, "notes.md": "why this kernel"}
    script = write_script(tmp_path / "s.json", [{"row": "", "files": notes}])
    coder, architect = agents(script)
    engine.run(root, coder, architect, judge_in_process, make_runner("cpu"), limits={"iterations": 1})
    rd = rundir.open(root)
    new_id = next(e.candidate for e in ledger.read(rd.ledger)[0] if isinstance(e, Attempt))
    old_id = candidate.legacy_hash(rd.candidate_src(new_id))
    assert old_id != new_id
    os.replace(rd.candidate(new_id), rd.candidate(old_id))
    text = rd.ledger.read_text().replace(new_id, old_id)
    pending = rd.candidate("0123456789abcdef")
    (pending / "src").mkdir(parents=True)
    (pending / "src" / "kernel.py").write_text(kernel.replace("\n", "\n\n", 1))
    (pending / "src" / "notes.md").write_text("second try")
    pend_id = candidate.legacy_hash(pending / "src")
    os.replace(pending, rd.candidate(pend_id))
    start = ledger.StartedEvent(seq=2, milestone="M0", row="M0.1", candidate=pend_id,
                                agent={"agent": "scripted"})
    # that forge sealed no ledger either: no run id, no signatures
    lines = [ledger.split_sig(line)[0] for line in text.splitlines()]
    rd.ledger.write_text("".join(line + "\n" for line in lines) + start.model_dump_json() + "\n")
    toml = root / "run.toml"
    toml.write_text("".join(line for line in toml.read_text().splitlines(keepends=True)
                            if not line.startswith("id ")))
    assert rundir.open(root).ledger_key() is None
    return root, old_id, pend_id


def test_a_run_dir_with_legacy_ids_resumes(tmp_path):
    root, old_id, pend_id = _legacy_run(tmp_path)
    steps = [step("torch_fast.py")] * 2 + [step("torch_slow.py")]  # step i answers attempt i
    coder, architect = agents(write_script(tmp_path / "s2.json", steps))
    outcome = engine.run(root, coder, architect, judge_in_process, make_runner("cpu"),
                         limits={"iterations": 3})
    attempts = {e.seq: e for e in ledger.read(root / "ledger.jsonl")[0] if isinstance(e, Attempt)}
    assert attempts[1].candidate == old_id and attempts[1].best
    assert attempts[2].candidate == pend_id and attempts[2].verdict.passed  # judged once, kept its id
    assert sorted(attempts) == [1, 2, 3] and outcome.iterations == 3
    assert candidate.matches(root / "candidates" / old_id / "src", old_id)
