"""What a remote delivery carries: the judge (this forgekernel package) and a job's inputs.

The judge travels as a tar of the installed package's source tree, named by version and
content hash so a remote host keeps one copy per version and reuses it. A job's inputs are
the files and directories its payload names by absolute path (a candidate, a task): they
travel as a tar next to the payload, and the payload's paths are rewritten to a
placeholder that the far side replaces with the directory it unpacked them into.
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import tarfile
from pathlib import Path
from typing import Any

from forgekernel.errors import ForgeError

PLACEHOLDER = "@FORGEKERNEL_JOBDIR@"
"""Stands for the job's directory on the far side in a shipped payload."""

MAX_INPUT_BYTES = 64 * 1024 * 1024
_SKIP_DIRS = {"__pycache__", ".git", ".pytest_cache", ".ruff_cache"}


class DeliveryError(ForgeError):
    """A job could not be delivered or its answer not fetched (the job itself said nothing)."""


def _package_files(root: Path) -> list[Path]:
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        files.extend(Path(dirpath) / f for f in sorted(filenames) if not f.endswith((".pyc", ".pyo")))
    return files


@functools.lru_cache(maxsize=1)
def judge_bundle() -> tuple[str, bytes]:
    """(name, gzipped tar) of the installed forgekernel package; name has version + hash."""
    import forgekernel

    root = Path(forgekernel.__file__).resolve().parent
    digest = hashlib.sha256()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=6) as tar:
        for path in _package_files(root):
            rel = path.relative_to(root.parent).as_posix()
            data = path.read_bytes()
            digest.update(rel.encode() + b"\0" + hashlib.sha256(data).digest())
            info = tarfile.TarInfo(rel)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    return f"forgekernel-{forgekernel.__version__}-{digest.hexdigest()[:16]}", buf.getvalue()


def _is_input(value: str) -> bool:
    return os.path.isabs(value) and os.path.exists(value) and value != os.sep


def _collect(value: Any, found: list[str]) -> None:
    if isinstance(value, str) and _is_input(value):
        found.append(os.path.normpath(value))
    elif isinstance(value, dict):
        for v in value.values():
            _collect(v, found)
    elif isinstance(value, list | tuple):
        for v in value:
            _collect(v, found)


def _layout(paths: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    """(path -> its name in the tar, for every path) and (the top-level ones -> name).

    A path inside another shipped directory is not shipped twice: it points into that
    directory's copy, so a kernel keeps its siblings.
    """
    tops: dict[str, str] = {}
    for path in sorted(set(paths), key=lambda p: (p.count(os.sep), p)):
        if not any(path.startswith(top + os.sep) for top in tops if os.path.isdir(top)):
            tops[path] = f"inputs/{len(tops)}/{Path(path).name}"
    names = {}
    for path in set(paths):
        top = next(t for t in tops if path == t or path.startswith(t + os.sep))
        rel = os.path.relpath(path, top)
        names[path] = tops[top] if rel == "." else f"{tops[top]}/{Path(rel).as_posix()}"
    return names, tops


def pack_inputs(payload: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    """Rewrite the payload's absolute paths to placeholders; return it with their tar."""
    found: list[str] = []
    _collect(payload, found)
    if not found:
        return payload, b""
    names, tops = _layout(found)

    def walk(value: Any) -> Any:
        if isinstance(value, str) and _is_input(value):
            return f"{PLACEHOLDER}/{names[os.path.normpath(value)]}"
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [walk(v) for v in value]
        return value

    buf = io.BytesIO()
    total = [0]
    with tarfile.open(fileobj=buf, mode="w:gz", dereference=True) as tar:
        for local, rel in tops.items():
            tar.add(local, arcname=rel, filter=_budget(total, local))
    return walk(payload), buf.getvalue()


def _budget(total: list[int], origin: str):
    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        parts = Path(info.name).parts
        if any(p in _SKIP_DIRS for p in parts) or info.name.endswith(".pyc"):
            return None
        total[0] += info.size
        if total[0] > MAX_INPUT_BYTES:
            raise DeliveryError(f"job inputs exceed {MAX_INPUT_BYTES >> 20} MiB while packing "
                                f"{origin}; a payload path names something too large to ship")
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        return info

    return keep


def unpack_inputs(payload: dict[str, Any], data: bytes, jobdir: Path) -> dict[str, Any]:
    """Unpack shipped inputs into ``jobdir`` and point the payload's placeholders at them."""
    if data:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            tar.extractall(jobdir, filter="data")

    def walk(value: Any) -> Any:
        if isinstance(value, str) and value.startswith(PLACEHOLDER):
            return str(jobdir) + value[len(PLACEHOLDER):]
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    return walk(payload)
