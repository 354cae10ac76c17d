"""What one sandboxed command may see: its spec, its environment, the Python it runs."""

from __future__ import annotations

import fnmatch
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ENV_ALLOW: tuple[str, ...] = (
    "PATH", "LANG", "LANGUAGE", "LC_*", "TZ", "TERM",
    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_LAUNCH_BLOCKING", "CUDA_MODULE_LOADING",
    "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH", "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES", "TRITON_INTERPRET", "TORCH_CUDA_ARCH_LIST",
    "PYTORCH_CUDA_ALLOC_CONF", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
    "PYTHONUNBUFFERED", "PYTHONFAULTHANDLER", "PYTHONHASHSEED", "PYTHONSAFEPATH",
    "PYTHONDONTWRITEBYTECODE",
)
"""Environment names (``fnmatch`` patterns) a sandboxed command may receive. Nothing here is a
credential; HOME, TMPDIR, TRITON_CACHE_DIR and XDG_* are set by the sandbox itself."""

SCRATCH_DIRS = {"HOME": "home", "TMPDIR": "tmp", "XDG_CACHE_HOME": "cache",
                "TRITON_CACHE_DIR": "cache/triton", "XDG_CONFIG_HOME": "config",
                "XDG_DATA_HOME": "data", "XDG_STATE_HOME": "state", "XDG_RUNTIME_DIR": "run"}
"""Variables the sandbox points into its scratch directory (name -> subdirectory)."""


@dataclass(frozen=True)
class SandboxSpec:
    """What one sandboxed command may see and do.

    ``scratch`` is the only writable directory (besides a private, empty ``/tmp``);
    ``readonly`` paths are visible read-only at the same place (the staged candidate, the
    task, the Python prefix and site-packages: see :func:`python_paths`); everything else
    of the host, home directories included, is absent except the system directories
    (``/usr``, ``/etc`` minus its secrets, ...). ``env`` is the whole environment; names
    not matching ``env_allow`` are refused. ``gpu`` adds the NVIDIA device nodes
    (``gpu_devices``, default every ``/dev/nvidia*``) and driver files; ``network`` keeps
    the host's network (default: a private one with only loopback); ``pid_namespace``
    False shares the host's PID and IPC namespaces (the tree is still killed, through a
    subreaper); ``share_shm`` binds the host's ``/dev/shm`` writable instead of a private
    one (PyTorch's CUDA tensor sharing with a process outside needs it: see docs/sandbox.md).
    """

    scratch: Path
    readonly: tuple[Path, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    gpu: bool = False
    network: bool = False
    pid_namespace: bool = True
    cwd: Path | None = None
    env_allow: tuple[str, ...] = ENV_ALLOW
    gpu_devices: tuple[Path, ...] = ()
    share_shm: bool = False


def env_allowed(name: str, allow: Iterable[str] = ENV_ALLOW) -> bool:
    """Whether ``name`` matches one of the ``allow`` patterns (case-sensitive)."""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in allow)


def filter_env(environ: Mapping[str, str], allow: Iterable[str] = ENV_ALLOW) -> dict[str, str]:
    """The part of ``environ`` a sandboxed command may see (credentials never match)."""
    allow = tuple(allow)
    return {k: v for k, v in environ.items() if env_allowed(k, allow)}


def sandbox_env(spec: SandboxSpec) -> dict[str, str]:
    """The command's whole environment: ``spec.env`` (checked against the allow-list) plus
    HOME, TMPDIR, TRITON_CACHE_DIR and XDG_* in the scratch directory (created here) and
    PWD (bubblewrap sets it; the stdlib launcher gets the same)."""
    own = (*SCRATCH_DIRS, "PWD")  # replaced below, whatever the caller gave
    refused = sorted(k for k in spec.env if k not in own and not env_allowed(k, spec.env_allow))
    if refused:
        raise ValueError(f"sandbox: environment names not on the allow-list: {', '.join(refused)} "
                         "(use filter_env, or extend SandboxSpec.env_allow)")
    env = dict(spec.env)
    scratch = Path(os.path.realpath(spec.scratch))
    for name, sub in SCRATCH_DIRS.items():
        path = scratch / sub
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        env[name] = str(path)
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env["PWD"] = os.path.realpath(spec.cwd or spec.scratch)
    return env


def _existing(paths: Iterable[str | os.PathLike]) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        if p and os.path.exists(p):
            real = Path(os.path.realpath(p))
            if real not in out:
                out.append(real)
    return out


def python_paths(python_path: Sequence[str] | None = None) -> tuple[Path, ...]:
    """What this Python needs visible, read-only: its prefixes (venv and base), the
    interpreter's directory, every existing ``sys.path`` entry (``python_path``, default
    this process's) and the directory of the installed forgekernel package."""
    import forgekernel

    entries = sys.path if python_path is None else python_path
    return tuple(_existing([
        sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
        os.path.dirname(os.path.realpath(sys.executable)),
        *[e for e in entries if e], os.path.dirname(forgekernel.__file__),
    ]))


def python_argv(module: str, args: Sequence[str] = (), *, python: str | None = None,
                python_path: Sequence[str] | None = None) -> list[str]:
    """``python -I`` running ``module`` as ``__main__`` with a fixed ``sys.path``.

    ``-I`` ignores PYTHON* variables, the user site and the working directory, so neither
    a ``PYTHONPATH`` nor a ``.pth``/``sitecustomize`` planted in the scratch directory runs;
    ``sys.path`` becomes exactly ``python_path`` (default: this process's existing entries).
    """
    path = [str(p) for p in _existing(sys.path if python_path is None else python_path)]
    code = (f"import sys; sys.path[:] = {path!r}; import runpy; "
            f"runpy.run_module({module!r}, run_name='__main__', alter_sys=True)")
    return [python or sys.executable, "-I", "-c", code, *args]
