"""Run on a remote host before forgekernel is there: probe it, and install the judge bundle.

The ssh runner sends this file's source as ``python -c <source> <command> ...``, so it must
use the standard library only. ``probe WORKDIR BUNDLE`` prints one JSON line describing the
host (Python, torch, CUDA, pydantic, triton, whether the bundle is already installed);
``install WORKDIR BUNDLE`` reads the bundle's gzipped tar on stdin and installs it
atomically under ``WORKDIR/judge/BUNDLE``.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import socket
import sys
import tarfile
import tempfile
import time

_STALE_S = 7 * 24 * 3600


def _module(name: str) -> dict:
    try:
        mod = __import__(name)
    except Exception as exc:  # any import failure (OSError from CUDA libs too) is reported
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
    return {"ok": True, "version": str(getattr(mod, "__version__", "?"))}


def _cuda() -> dict:
    import torch

    if not torch.cuda.is_available():
        return {"available": False, "count": 0, "names": [], "cuda": torch.version.cuda}
    n = torch.cuda.device_count()
    names = [torch.cuda.get_device_name(i) for i in range(n)]
    major, minor = torch.cuda.get_device_capability(0)
    return {"available": True, "count": n, "names": names, "cuda": torch.version.cuda,
            "sm": f"sm{major}{minor}"}


def probe(workdir: str, bundle: str) -> dict:
    """Describe this host for the ssh runner (creates ``workdir`` if needed)."""
    root = os.path.abspath(os.path.expanduser(workdir))
    info = {"host": socket.gethostname(), "python": platform.python_version(),
            "executable": sys.executable,
            "python_ok": sys.version_info >= (3, 11) and hasattr(tarfile, "data_filter"),
            "workdir": root, "workdir_error": ""}
    try:
        os.makedirs(os.path.join(root, "jobs"), exist_ok=True)
        os.makedirs(os.path.join(root, "judge"), exist_ok=True)
    except OSError as exc:
        info["workdir_error"] = str(exc)
    info["bundle_present"] = os.path.isfile(os.path.join(root, "judge", bundle, ".complete"))
    info["modules"] = {m: _module(m) for m in ("pydantic", "torch", "triton")}
    info["gpu"] = _cuda() if info["modules"]["torch"]["ok"] else {"available": False}
    return info


def install(workdir: str, bundle: str) -> str:
    """Unpack the bundle from stdin into ``workdir/judge/bundle`` (atomic); prune stale ones."""
    judge = os.path.join(os.path.abspath(os.path.expanduser(workdir)), "judge")
    final = os.path.join(judge, bundle)
    if os.path.isfile(os.path.join(final, ".complete")):
        return "cached"
    tmp = tempfile.mkdtemp(prefix=f".{bundle}.", dir=judge)
    with tarfile.open(fileobj=sys.stdin.buffer, mode="r|gz") as tar:
        tar.extractall(tmp, filter="data")
    open(os.path.join(tmp, ".complete"), "w").close()
    try:
        os.rename(tmp, final)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)  # another run installed the same bundle first
    _prune(judge, keep=bundle)
    return "installed"


def _prune(judge: str, keep: str) -> None:
    now = time.time()
    for name in os.listdir(judge):
        path = os.path.join(judge, name)
        if name != keep and name.startswith(("forgekernel-", ".forgekernel-")) and \
                now - os.path.getmtime(path) > _STALE_S:
            shutil.rmtree(path, ignore_errors=True)


def main(argv: list[str]) -> int:
    command, workdir, bundle = argv
    if command == "probe":
        out = probe(workdir, bundle)
    elif command == "install":
        out = {"install": install(workdir, bundle)}
    else:
        raise SystemExit(f"remote_boot: unknown command {command!r}")
    sys.stdout.write("FORGEKERNEL-BOOT " + json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
