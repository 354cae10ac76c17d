"""Turn a spec and a command into the command line of a sandbox mechanism."""

from __future__ import annotations

import os
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from forgekernel.sandbox.plan import Mount, mount_plan
from forgekernel.sandbox.spec import SandboxSpec, sandbox_env

BOOT = str(Path(__file__).with_name("_boot.py"))
"""The standard-library launcher (run by path with ``python -I -S``; imports no forgekernel)."""


@dataclass(frozen=True)
class Mechanism:
    """A way to build the sandbox: ``bwrap`` (bubblewrap, ``path`` is the binary) or
    ``stdlib`` (namespaces made by :mod:`forgekernel.sandbox._boot`, ``path`` is the Python
    that runs it)."""

    name: Literal["bwrap", "stdlib"]
    path: str
    version: str = ""


@dataclass(frozen=True)
class Launch:
    """A sandboxed command, ready for ``subprocess.Popen(**launch.popen_kwargs(), ...)``.

    Add your own stdin/stdout/stderr, ``pass_fds`` (kept open inside) and
    ``start_new_session``. End it with :func:`forgekernel.sandbox.kill_tree`, not
    ``killpg``: without a PID namespace a ``setsid()`` child left the group.
    """

    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    mechanism: str = ""

    def popen_kwargs(self) -> dict[str, Any]:
        return {"args": list(self.argv), "env": dict(self.env), "cwd": "/"}

    def status(self, returncode: int) -> tuple[int | None, int | None]:
        """(exit code, signal) of the sandboxed command from the launcher's return code.

        bubblewrap reports a command killed by signal N as exit status 128 + N (as a shell
        does); the stdlib launcher re-raises the signal, so Popen shows ``-N``.
        """
        if returncode < 0:
            return None, -returncode
        if self.mechanism == "bwrap" and 128 < returncode < 128 + signal.NSIG:
            return None, returncode - 128
        return returncode, None


_BWRAP_OPS = {"ro-bind": "--ro-bind", "bind": "--bind", "dev-bind": "--dev-bind"}


def _bwrap_mount(m: Mount) -> list[str]:
    if m.op in _BWRAP_OPS:
        return [_BWRAP_OPS[m.op], m.src, m.dst]
    if m.op == "tmpfs":
        return ["--perms", "1777", "--tmpfs", m.dst]
    if m.op == "empty":
        return ["--perms", "0755", "--tmpfs", m.dst, "--remount-ro", m.dst]
    if m.op == "symlink":
        return ["--symlink", m.src, m.dst]
    return ["--" + m.op, m.dst]  # proc, dev


def _boot_mount(m: Mount) -> list[str]:
    if m.op in _BWRAP_OPS:
        return [_BWRAP_OPS[m.op], m.src, m.dst]
    if m.op == "symlink":
        return ["--symlink", m.src, m.dst]
    return ["--" + m.op, m.dst]  # tmpfs, empty, proc, dev


def bwrap_argv(bwrap: str, spec: SandboxSpec, argv: list[str], cwd: str) -> list[str]:
    """The bubblewrap command line (wrapped in the stdlib supervisor without a PID namespace,
    so an orphan that left the process group is still re-parented to something we kill)."""
    out = [bwrap, "--die-with-parent", "--cap-drop", "ALL", "--unshare-uts", "--unshare-cgroup-try"]
    if not spec.network:
        out.append("--unshare-net")
    if spec.pid_namespace:
        out += ["--unshare-pid", "--unshare-ipc"]
    for m in mount_plan(spec):
        out += _bwrap_mount(m)
    out += ["--remount-ro", "/", "--chdir", cwd, "--", *argv]
    if spec.pid_namespace:
        return out
    return [sys.executable, "-I", "-S", BOOT, "--mode", "supervise", "--", *out]


def boot_argv(python: str, spec: SandboxSpec, argv: list[str], cwd: str) -> list[str]:
    """The stdlib launcher's command line."""
    out = [python, "-I", "-S", BOOT, "--mode", "sandbox"]
    if spec.pid_namespace:
        out += ["--unshare-pid", "--unshare-ipc"]
    if spec.network:
        out.append("--share-net")
    for m in mount_plan(spec):
        out += _boot_mount(m)
    return [*out, "--chdir", cwd, "--", *argv]


def command(mechanism: Mechanism, spec: SandboxSpec, argv: list[str]) -> Launch:
    """``argv`` run inside a sandbox built by ``mechanism`` as ``spec`` says."""
    if not argv:
        raise ValueError("sandbox: empty command")
    env = sandbox_env(spec)
    cwd = os.path.realpath(spec.cwd or spec.scratch)
    if mechanism.name == "bwrap":
        full = bwrap_argv(mechanism.path, spec, list(argv), cwd)
    elif mechanism.name == "stdlib":
        full = boot_argv(mechanism.path, spec, list(argv), cwd)
    else:
        raise ValueError(f"sandbox: unknown mechanism {mechanism.name!r}")
    return Launch(argv=tuple(full), env=env, mechanism=mechanism.name)
