"""The sandbox's filesystem as a list of steps, the same for every mechanism.

The root is an empty read-only tmpfs. On it: the system directories read-only (``/usr``,
``/etc`` with its secrets masked, the ``/lib*`` and ``/bin`` links), ``/sys`` read-only, a
minimal ``/dev`` (null, zero, full, random, urandom, tty, a private ``/dev/shm``), a fresh
``/proc`` (or the host's without a PID namespace; ``/proc/sys`` and the like read-only in
both), an empty writable ``/tmp``,
the caller's read-only paths and the scratch directory, writable. Home directories,
``/run``, ``/var``, ``/mnt`` and everything else are absent.
"""

from __future__ import annotations

import functools
import glob
import os
import subprocess
from dataclasses import dataclass

from forgekernel.sandbox.spec import SandboxSpec

SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
"""Visible read-only in every sandbox (a symlink such as ``/bin -> usr/bin`` is recreated)."""
MASKED = ("/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/ssh",
          "/etc/ssl/private", "/etc/security/opasswd", "/etc/credstore",
          "/etc/credstore.encrypted")
"""Secrets under ``/etc``, shown empty (a root-run sandbox could otherwise read them)."""
GPU_DRIVER_PATHS = ("/usr/local/nvidia", "/usr/local/cuda", "/opt/nvidia", "/etc/nvidia")
"""Driver and toolkit directories bound read-only for GPU jobs when present (libcuda's own
directory, from the loader cache, and LD_LIBRARY_PATH entries are added too)."""
PROC_COVERS = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs")
"""Bound read-only over any /proc: files there are writable by uid 0 without a capability
(``/proc/sys/kernel/core_pattern`` runs a program as the host's root on the next crash)."""
VIRTUAL = ("/proc", "/dev", "/sys")


@dataclass(frozen=True)
class Mount:
    """One step: ``ro-bind``/``bind``/``dev-bind`` SRC on DST, ``tmpfs`` (writable),
    ``empty`` (read-only tmpfs), ``proc``, ``dev`` (minimal /dev) or ``symlink`` (DST -> SRC)."""

    op: str
    dst: str
    src: str = ""


def _under(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def system_mounts() -> list[Mount]:
    out = []
    for path in SYSTEM_PATHS:
        if os.path.islink(path):
            out.append(Mount("symlink", path, os.readlink(path)))
        elif os.path.isdir(path):
            out.append(Mount("ro-bind", path, path))
    for path in MASKED:
        if os.path.isdir(path) and not os.path.islink(path):
            out.append(Mount("empty", path))
        elif os.path.isfile(path) and not os.path.islink(path):
            out.append(Mount("ro-bind", path, "/dev/null"))
    return out


@functools.lru_cache(maxsize=1)
def _libcuda_dirs() -> tuple[str, ...]:
    """Directories of libcuda.so* in the loader cache (``ldconfig -p``), if any."""
    ldconfig = next((p for p in ("/sbin/ldconfig", "/usr/sbin/ldconfig") if os.path.exists(p)), None)
    if not ldconfig:
        return ()
    try:
        out = subprocess.run([ldconfig, "-p"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ()
    found = {os.path.dirname(line.split("=>")[-1].strip()) for line in out.splitlines()
             if "libcuda.so" in line and "=>" in line}
    return tuple(sorted(d for d in found if d))


def gpu_mounts(spec: SandboxSpec, covered: list[str]) -> list[Mount]:
    """The NVIDIA device nodes (device access allowed) and the driver directories not
    already visible (read-only)."""
    nodes = [str(p) for p in spec.gpu_devices] or sorted(glob.glob("/dev/nvidia*"))
    out = [Mount("dev-bind", "/dev/" + os.path.basename(n), n) for n in nodes]
    libpath = spec.env.get("LD_LIBRARY_PATH", "").split(":")
    for path in (*GPU_DRIVER_PATHS, *_libcuda_dirs(), *libpath):
        real = os.path.realpath(path) if path and os.path.isdir(path) else ""
        if real and not any(_under(real, c) for c in covered) and real not in [m.dst for m in out]:
            out.append(Mount("ro-bind", real, real))
    return out


def _user_mounts(spec: SandboxSpec, covered: list[str]) -> list[Mount]:
    """The caller's read-only paths and the scratch directory, parents first."""
    wanted = [(os.path.realpath(p), "ro-bind") for p in spec.readonly]
    wanted.append((os.path.realpath(spec.scratch), "bind"))
    missing = [p for p, _ in wanted if not os.path.exists(p)]
    if missing:
        raise ValueError(f"sandbox: paths to expose do not exist: {', '.join(missing)}")
    bad = [p for p, _ in wanted if any(_under(p, v) for v in VIRTUAL) or p in ("/", "/tmp")]
    if bad:
        raise ValueError(f"sandbox: cannot expose {', '.join(bad)} (/, /tmp, /proc, /dev, /sys)")
    out: list[Mount] = []
    above = [Mount("ro-bind", c, c) for c in covered]
    for path, op in sorted(set(wanted), key=lambda w: (w[0].count("/"), w[0], w[1])):
        parents = [m for m in above if _under(path, m.dst)]
        nearest = max(parents, key=lambda m: len(m.dst), default=None)
        if op == "ro-bind" and nearest is not None and nearest.op == "ro-bind":
            continue  # already visible read-only through a parent
        out.append(Mount(op, path, path))
        above.append(out[-1])
    return out


def proc_mounts(pid_namespace: bool) -> list[Mount]:
    """A fresh procfs of the sandbox's PID namespace, or else the host's /proc (writable:
    libcuda names its threads through /proc/self/task/*/comm and fails on a read-only
    /proc); in both cases :data:`PROC_COVERS` read-only."""
    first = Mount("proc", "/proc") if pid_namespace else Mount("bind", "/proc", "/proc")
    return [first, *(Mount("ro-bind", p, p) for p in PROC_COVERS if os.path.exists(p))]


def mount_plan(spec: SandboxSpec) -> list[Mount]:
    """Every step that builds the sandbox's filesystem for ``spec``, in order."""
    plan = system_mounts()
    covered = [m.dst for m in plan if m.op == "ro-bind" and m.dst in SYSTEM_PATHS]
    plan += [Mount("ro-bind", "/sys", "/sys"), Mount("dev", "/dev")]
    if spec.share_shm:
        plan.append(Mount("bind", "/dev/shm", "/dev/shm"))
    if spec.gpu:
        plan += gpu_mounts(spec, covered)
    plan += proc_mounts(spec.pid_namespace)
    plan.append(Mount("tmpfs", "/tmp"))
    plan += _user_mounts(spec, covered)
    cwd = os.path.realpath(spec.cwd or spec.scratch)
    visible = [m.dst for m in plan if m.op in ("ro-bind", "bind")]
    if not any(_under(cwd, v) for v in visible):
        raise ValueError(f"sandbox: the working directory {cwd} is not visible inside")
    return plan

