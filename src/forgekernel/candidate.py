"""A candidate kernel: which files make it, its identity, and a staged copy of it.

Which files: under a candidate directory, every regular file whose suffix marks a source
(:data:`SOURCE_SUFFIXES`: the code a kernel is built from and the small text files it may
load), except dot paths (``.git``), ``__pycache__``, symlinks and the records forge itself
writes beside a kernel (:data:`RECORDS`, at the top of the directory: ``best/verdict.json``
is a verdict, not a source). A single kernel file stands for itself, named ``kernel.py``,
plus the source files beside it (not recursive).

Identity: :func:`source_hash`, 16 hex digits of sha256 over each source's relative path and
the sha256 of its bytes; never times or locations. The run dir, the engine, the judge and
the CLI all use this one function, so a ledger id, a verdict's ``candidate`` and
``forge judge TASK RUN/best/kernel.py`` name the same kernel the same way.

Ids recorded before this definition hashed every file of a directory, sources or not
(:func:`legacy_hash`); :func:`matches` accepts those, so existing run dirs still resume.
Pure: the standard library only.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from pathlib import Path

from forgekernel.errors import ForgeError

KERNEL_FILE = "kernel.py"
IGNORED = ("__pycache__", "*.pyc", ".pytest_cache")
"""Patterns git ignores in a workspace (dotfiles and caches are never part of a candidate)."""
MAX_FILES = 200
MAX_BYTES = 16 * 1024 * 1024
SOURCE_SUFFIXES = (".py", ".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".ptx",
                   ".json", ".toml", ".txt")
"""Suffixes of the files that make a candidate."""
RECORDS = ("verdict.json", "profile.json", "agent.json")
"""Files forge writes beside a kernel (``best/``, ``candidates/<id>/``); never sources."""

Member = tuple[str, Path]
"""(path inside the candidate, file on disk)."""


class CandidateError(ForgeError, ValueError):
    """The candidate path cannot be judged (missing, no kernel.py, too large)."""


def _hidden(rel: Path) -> bool:
    return any(part.startswith(".") or part == "__pycache__" for part in rel.parts)


def is_source(rel: Path) -> bool:
    """Whether the file at ``rel`` (relative to its candidate dir) is one of its sources."""
    if _hidden(rel) or rel.suffix not in SOURCE_SUFFIXES:
        return False
    return not (len(rel.parts) == 1 and rel.name in RECORDS)


def all_files(root: str | Path) -> list[Path]:
    """Every regular file of a directory (sorted, relative), but dot paths, ``__pycache__``
    and symlinks: what a run dir stores and restores of a candidate."""
    root = Path(root)
    out = [p.relative_to(root) for p in root.rglob("*")
           if not _hidden(p.relative_to(root)) and p.is_file() and not p.is_symlink()]
    return sorted(out, key=lambda p: p.as_posix())


def source_files(root: str | Path) -> list[Path]:
    """The sources of a candidate directory (sorted, relative paths)."""
    files = [rel for rel in all_files(root) if is_source(rel)]
    if len(files) > MAX_FILES:
        raise CandidateError(f"{root}: more than {MAX_FILES} source files; a candidate is a "
                             "kernel.py plus the sources it loads")
    return files


def resolve(path: str | Path) -> tuple[Path, Path]:
    """(source dir, kernel file) for a kernel.py path or a directory holding one."""
    path = Path(path)
    if not path.exists():
        raise CandidateError(f"{path}: no such file or directory")
    if path.is_dir():
        kernel = path / KERNEL_FILE
        if not kernel.is_file():
            raise CandidateError(f"{path}: no {KERNEL_FILE} in this directory")
        return path, kernel
    if path.suffix != ".py":
        raise CandidateError(f"{path}: a kernel must be a Python file (kernel.py) or a "
                             "directory holding one")
    return path.parent, path


def members(path: str | Path) -> list[Member]:
    """The files that make the candidate at ``path`` (a directory, or one kernel file with
    its sibling sources), sorted by their path inside the candidate."""
    path = Path(path)
    if path.is_dir():
        return [(rel.as_posix(), path / rel) for rel in source_files(path)]
    src_dir, kernel = resolve(path)
    siblings = [p for p in sorted(src_dir.iterdir()) if p.is_file() and not p.is_symlink()
                and p != kernel and p.name != KERNEL_FILE and is_source(Path(p.name))]
    if len(siblings) > MAX_FILES or sum(p.stat().st_size for p in siblings) > MAX_BYTES:
        siblings = []
    return sorted([(p.name, p) for p in siblings] + [(KERNEL_FILE, kernel)])


def _digest(files: list[Member]) -> str:
    h = hashlib.sha256()
    for rel, file in files:
        h.update(rel.encode() + b"\0")
        h.update(hashlib.sha256(file.read_bytes()).digest())
    return h.hexdigest()[:16]


def source_hash(path: str | Path) -> str:
    """A candidate's identity: the hash of its sources (a directory or one kernel file)."""
    return _digest(members(path))


def legacy_hash(root: str | Path) -> str:
    """The identity ids recorded before sources were told apart: every file of a directory."""
    root = Path(root)
    return _digest([(rel.as_posix(), root / rel) for rel in all_files(root)])


def matches(root: str | Path, cid: str, hasher: Callable[[Path], str] | None = None) -> bool:
    """Whether the directory ``root`` holds candidate ``cid``: its hash (``hasher``, by default
    :func:`source_hash`) or, for an id recorded before sources were told apart, its
    :func:`legacy_hash`."""
    root = Path(root)
    return (hasher or source_hash)(root) == cid or legacy_hash(root) == cid


def stage(path: str | Path, dest: Path) -> Path:
    """Copy the candidate at ``path`` (its sources only) into ``dest`` (created); return it."""
    resolve(path)
    files = members(path)
    total = sum(file.stat().st_size for _, file in files)
    if total > MAX_BYTES:
        raise CandidateError(f"{path}: {total} bytes of sources; the cap is {MAX_BYTES}")
    dest.mkdir(parents=True, exist_ok=True)
    for rel, file in files:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(file, dest / rel)
    return dest


def copy_files(src: Path, dst: Path) -> None:
    """Copy every file of a candidate directory (sources and any others) into ``dst``."""
    for rel in all_files(src):
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / rel, dst / rel)
