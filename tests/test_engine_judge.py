"""The engine's candidate ids are the judge's (test_engine.py runs the engine with the real
judge end to end; test_engine_cli.py replays a run)."""

from __future__ import annotations

from forgekernel.judge.candidate import candidate_hash
from forgekernel.run import rundir


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
