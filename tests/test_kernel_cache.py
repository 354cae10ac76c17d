"""judge.kernel_cache: a candidate's own Triton cache between its verdicts, never another's."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from forgekernel.judge import kernel_cache

REPO = Path(__file__).resolve().parents[1]


def _candidate(root, text):
    root.mkdir(parents=True)
    (root / "kernel.py").write_text(text)
    return root


def test_the_same_candidate_gets_its_files_back_and_another_does_not(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    a = _candidate(tmp_path / "a", "def run(x): return x\n")
    a_again = _candidate(tmp_path / "a2", "def run(x): return x\n")
    b = _candidate(tmp_path / "b", "def run(x): return x + 0\n")
    assert kernel_cache.key(a) == kernel_cache.key(a_again) != kernel_cache.key(b)
    scratch = tmp_path / "s1" / "cache" / "triton"
    (scratch / "abc").mkdir(parents=True)
    (scratch / "abc" / "k.cubin").write_bytes(b"\x7fELF" + b"0" * 100)
    os.symlink("/etc/passwd", scratch / "abc" / "link")  # links are never kept
    assert kernel_cache.keep(kernel_cache.key(a), scratch) == 1
    fresh = tmp_path / "s2" / "cache" / "triton"
    assert kernel_cache.restore(kernel_cache.key(a_again), fresh) == 1
    assert (fresh / "abc" / "k.cubin").read_bytes().startswith(b"\x7fELF")
    assert not (fresh / "abc" / "link").exists()
    other = tmp_path / "s3" / "cache" / "triton"
    assert kernel_cache.restore(kernel_cache.key(b), other) == 0 and not other.exists()


def test_too_much_is_not_kept_and_the_store_keeps_the_most_recent(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(kernel_cache, "CAP_BYTES", 1000)
    big = tmp_path / "big"
    big.mkdir()
    (big / "f").write_bytes(b"0" * 2000)
    assert kernel_cache.keep("k0", big) == 0 and not (kernel_cache.store() / "k0").exists()
    monkeypatch.setattr(kernel_cache, "KEEP", 2)
    small = tmp_path / "small"
    small.mkdir()
    (small / "f").write_bytes(b"1")
    for n, name in enumerate(("k1", "k2", "k3")):
        assert kernel_cache.keep(name, small) == 1
        os.utime(kernel_cache.store() / name, (1000 + n, 1000 + n))
    kernel_cache._trim(kernel_cache.store())
    assert sorted(p.name for p in kernel_cache.store().iterdir()) == ["k2", "k3"]


def test_the_extension_builds_are_named_by_one_path_at_every_verdict(tmp_path, monkeypatch):
    """Two executors' scratch directories have different names; torch's extension builds see
    the same path in both (a link in the sandbox's private /tmp), so a kept build is reused."""
    monkeypatch.delenv("TORCH_EXTENSIONS_DIR", raising=False)
    names = []
    for n in (1, 2):
        cache = tmp_path / f"forge-exec-{n}" / "cache"
        cache.mkdir(parents=True)
        (cache / "marker").write_text(str(n))
        link = tmp_path / f"private_tmp_{n}" / "forge-cache"  # each sandbox has its own /tmp
        kernel_cache.stable_cache(cache, link)
        names.append(os.environ["TORCH_EXTENSIONS_DIR"].replace(f"private_tmp_{n}", "private_tmp"))
        assert (link / "marker").read_text() == str(n)
    assert names[0] == names[1]


@pytest.mark.skipif(not (shutil.which("ninja") and shutil.which("c++")), reason="needs ninja and a C++ compiler")
def test_a_candidates_extension_build_is_reused_at_its_next_verdict(tmp_path, monkeypatch):
    """The sandboxed executor of a candidate that builds a C++ extension at import
    (``load_inline``, as CUDA C++ candidates do) builds it once; the next executor of the same
    candidate finds it kept and ninja has nothing to do."""
    from forgekernel.judge.executor_client import ExecutorClient, ExecutorSpec

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    cand = REPO / ".pytest_extension_candidate"  # not under /tmp: the sandbox cannot expose it
    shutil.rmtree(cand, ignore_errors=True)
    cand.mkdir()
    (cand / "kernel.py").write_text(EXTENSION_CANDIDATE)
    try:
        logs = []
        for _ in range(2):
            client = ExecutorClient(ExecutorSpec(candidate_dir=cand, device="cpu", interpret=True))
            reply = client.ask({"op": "load", "kernel": str(cand / "kernel.py"), "entry": "run",
                                "own": ["_k"], "any_kernel": False}, 600)
            restored = client.cache_restored
            client.close()  # joins the threads draining its output: the whole log, no race
            logs.append(client.tail())
            assert reply.get("ok"), reply
        assert "fk_twice_test.so" in logs[0] and restored > 0
        assert "ninja: no work to do" in logs[1], logs[1][-800:]
    finally:
        shutil.rmtree(cand, ignore_errors=True)


EXTENSION_CANDIDATE = '''
import triton
from torch.utils.cpp_extension import load_inline

EXT = load_inline(name="fk_twice_test", cpp_sources="torch::Tensor twice(torch::Tensor x) { return x * 2; }",
                  functions=["twice"], verbose=True)


@triton.jit
def _k(x):
    pass


def run(x):
    return EXT.twice(x)
'''
