"""What an outside review of the CPU judge found: the verifier works in a directory the
executor can write and must never follow what the executor leaves there (links, FIFOs);
the executor's own checks must not be switched off through the classes of the judge's
modules; a network call through ctypes is an attempt like one through socket."""

import os

import pytest
import torch

from forgekernel.judge import guards, kernel_cache, watch, wire


def test_the_verifier_does_not_write_its_inputs_through_a_link(tmp_path):
    scratch, host = tmp_path / "scratch", tmp_path / "host"
    scratch.mkdir()
    host.mkdir()
    victim = host / "victim.txt"
    victim.write_text("ORIGINAL")
    os.symlink(victim, scratch / "c2_in0.bin")
    os.symlink(host / "new.bin", scratch / "c2_in1.bin")  # dangling: would create a host file
    x = torch.arange(6, dtype=torch.float32)
    for name in ("c2_in0.bin", "c2_in1.bin"):
        with pytest.raises(wire.WireError, match="something already stands where this file is to be written"):
            wire.put(x, scratch, name)
    assert victim.read_text() == "ORIGINAL" and not (host / "new.bin").exists()
    desc = wire.put(x, scratch, "c3_in0.bin")  # a free name is written as a plain file
    assert torch.equal(wire.get(desc, scratch), x)


def test_the_verifier_does_not_read_outputs_through_a_link_or_a_fifo(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    secret = tmp_path / "secret.bin"
    secret.write_bytes(b"s" * 24)
    os.symlink(secret, scratch / "c1_out0.bin")
    desc = {"tensor": "c1_out0.bin", "dtype": "float32", "shape": [6]}
    with pytest.raises(wire.WireError, match="not a regular file the verifier can read"):
        wire.get(desc, scratch)
    os.mkfifo(scratch / "c1_out1.bin")  # opened without blocking, then refused
    with pytest.raises(wire.WireError, match="not a regular file"):
        wire.get({**desc, "tensor": "c1_out1.bin"}, scratch)
    (scratch / "c1_out2.bin").write_bytes(b"\0" * 20)
    with pytest.raises(wire.WireError, match="20 bytes on disk, 24 described"):
        wire.get({**desc, "tensor": "c1_out2.bin"}, scratch)


def test_a_cache_dir_the_executor_replaced_by_a_link_is_not_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "store"))
    host = tmp_path / "host"
    host.mkdir()
    (host / "credentials").write_text("secret")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    os.symlink(host, scratch / "cache")
    assert kernel_cache.keep("k" * 32, scratch / "cache") == 0
    assert not (kernel_cache.store() / ("k" * 32)).exists()
    (scratch / "cache").unlink()
    (scratch / "cache").mkdir()
    (scratch / "cache" / "kernel.cubin").write_bytes(b"x")
    os.symlink(host / "credentials", scratch / "cache" / "linked")
    assert kernel_cache.keep("k" * 32, scratch / "cache") == 1  # the regular file only
    assert sorted(p.name for p in (kernel_cache.store() / ("k" * 32)).iterdir()) == ["kernel.cubin"]


def test_a_method_swapped_on_a_judge_class_is_a_change(monkeypatch):
    harness = guards.Harness(guards.harness_targets())
    assert harness.changes() == []
    monkeypatch.setattr(watch.Attempts, "note", lambda self, what: None)
    monkeypatch.setattr(guards.Harness, "_changes", lambda self: [])  # the check itself: kept as it was
    assert "forgekernel.judge.watch.Attempts.note" in harness.changes()


def test_a_network_call_looked_up_through_ctypes_is_an_attempt(tmp_path):
    """libc's connect reached through ctypes (or numpy's alias of it) raises none of socket's
    audit events; its lookup does (in a subprocess: the hook cannot be removed again)."""
    import subprocess
    import sys

    code = ("import ctypes\nfrom forgekernel.judge import watch\n"
            f"a = watch.install({str(tmp_path)!r})\n"
            "libc = ctypes.CDLL(None)\nlibc.memcpy\nprint(len(a.seen))\nlibc.connect\nprint(a.seen[-1])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    lines = out.stdout.splitlines()
    assert lines[0] == "0" and "connect through ctypes" in lines[1], out.stdout + out.stderr
