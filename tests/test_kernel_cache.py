"""judge.kernel_cache: a candidate's own Triton cache between its verdicts, never another's."""

from __future__ import annotations

import os

from forgekernel.judge import kernel_cache


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
