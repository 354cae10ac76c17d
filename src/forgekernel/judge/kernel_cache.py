"""A candidate's own build caches, kept between the verdicts of the same candidate.

Every executor starts in a fresh scratch directory, so a candidate's Triton kernels compile
again at every verdict, and a CUDA C++ candidate's ``load_inline`` extension builds again
(60-90 s on the H200's host). The attempt and the confirmation of one candidate, or ``forge
judge`` run twice on one file, build the same things. This module keeps what the executor's
cache directory (``XDG_CACHE_HOME``: ``TRITON_CACHE_DIR`` and torch's extension builds
inside it) held at the end of a verdict under a key made of the candidate's own files, and
puts it back (file times kept, so build tools see nothing stale) into the next executor of
*that same candidate* before it starts. It is never shared between candidates:
another candidate's files give another key, so nothing one candidate writes can reach the
kernels of another (which a shared cache would allow). Only regular files are kept (no
links), under relative names, at most ``CAP_BYTES`` in all (more: nothing is kept); the
store holds the ``KEEP`` most recent candidates. The host never runs or parses what it
copies; only the candidate's own sandboxed executor reads it again.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

CAP_BYTES = 256 * 1024 * 1024
KEEP = 64
_SOURCE_CAP = 64 * 1024 * 1024


def store() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "forgekernel" / "triton"


def key(candidate_dir: Path) -> str | None:
    """The hash of the candidate's files (names and bytes); None when they are too large to
    hash cheaply (then nothing is kept)."""
    digest, total = hashlib.sha256(), 0
    for path in sorted(p for p in Path(candidate_dir).rglob("*") if p.is_file() and not p.is_symlink()
                       and "__pycache__" not in p.parts):
        total += path.stat().st_size
        if total > _SOURCE_CAP:
            return None
        digest.update(str(path.relative_to(candidate_dir)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:32]


def _files(root: Path) -> list[Path] | None:
    """Regular files under ``root`` (None when over the cap)."""
    out, total = [], 0
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            path = Path(dirpath) / name
            if path.is_symlink() or not path.is_file():
                continue
            total += path.stat().st_size
            if total > CAP_BYTES:
                return None
            out.append(path)
    return out


def restore(cache_key: str | None, into: Path) -> int:
    """Copy the kept cache of ``cache_key`` into ``into``; the number of files copied."""
    if cache_key is None:
        return 0
    src = store() / cache_key
    files = _files(src) if src.is_dir() and not src.is_symlink() else None
    if not files:
        return 0
    for path in files:
        dst = into / path.relative_to(src)
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, dst)
    os.utime(src)
    return len(files)


def keep(cache_key: str | None, frm: Path) -> int:
    """Keep the regular files under ``frm`` for the next verdict of ``cache_key``; the number
    kept (0 when there is nothing, too much, or the store cannot be written)."""
    if cache_key is None or frm.is_symlink() or not frm.is_dir():
        return 0  # a link here (the candidate's doing) would copy a host directory into the store
    files = _files(frm)
    if not files:
        return 0
    root = store()
    try:
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".new-", dir=root))
        for path in files:
            dst = tmp / path.relative_to(frm)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, dst)
        final = root / cache_key
        shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)
    except OSError:
        return 0
    _trim(root)
    return len(files)


def _trim(root: Path) -> None:
    """Only the ``KEEP`` most recently used candidates stay."""
    entries = sorted((p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")),
                     key=lambda p: p.stat().st_mtime, reverse=True)
    for old in entries[KEEP:]:
        shutil.rmtree(old, ignore_errors=True)


def stable_cache(cache: Path, link: Path) -> None:
    """Point torch's extension builds at ``link`` (a link to ``cache``): a CUDA C++
    candidate's ``load_inline`` build then names its files by one path at every verdict, so a
    build kept for the same candidate (:mod:`forgekernel.judge.kernel_cache`) is up to date
    for ninja; under the scratch directory's own random name every build.ninja differed."""
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(cache, target_is_directory=True)
    os.environ["TORCH_EXTENSIONS_DIR"] = str(link / "torch_extensions")
