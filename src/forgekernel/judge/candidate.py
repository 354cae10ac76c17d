"""The candidate: a directory holding ``kernel.py`` plus any sources it loads.

The judge never runs a candidate from where the agent wrote it: :func:`stage` copies it
into a judge-owned directory, and :func:`candidate_hash` names it by the content of its
files (paths and bytes; never times or locations).
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from forgekernel.errors import ForgeError

KERNEL_FILE = "kernel.py"
MAX_FILES = 200
MAX_BYTES = 16 * 1024 * 1024
SOURCE_SUFFIXES = (".py", ".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".ptx",
                   ".json", ".toml", ".txt")
"""Files copied next to a kernel given as a single file (its siblings, not recursive)."""


class CandidateError(ForgeError, ValueError):
    """The candidate path cannot be judged (missing, no kernel.py, too large)."""


def _skipped(rel: Path) -> bool:
    return any(part.startswith(".") or part == "__pycache__" for part in rel.parts)


def candidate_files(root: Path) -> list[Path]:
    """Relative paths of the files that make up a candidate dir (sorted; no dotfiles,
    no __pycache__, no symlinks)."""
    root = Path(root)
    files = []
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if _skipped(rel) or path.is_symlink() or not path.is_file():
            continue
        files.append(rel)
        if len(files) > MAX_FILES:
            raise CandidateError(f"{root}: more than {MAX_FILES} files; a candidate is a "
                                 "kernel.py plus the sources it loads")
    return sorted(files, key=lambda p: p.as_posix())


def candidate_hash(root: str | Path) -> str:
    """Content hash of a candidate: 16 hex digits over its files' paths and bytes.

    A directory is hashed as it is; a single kernel file is hashed as :func:`stage` would
    copy it (as ``kernel.py`` with its sibling sources), so the hash equals the verdict's.
    """
    root = Path(root)
    if root.is_file():
        import tempfile

        with tempfile.TemporaryDirectory(prefix="forge-hash-") as tmp:
            return candidate_hash(stage(root, Path(tmp) / "c"))
    digest = hashlib.sha256()
    for rel in candidate_files(root):
        digest.update(rel.as_posix().encode() + b"\0")
        digest.update(hashlib.sha256((root / rel).read_bytes()).digest())
    return digest.hexdigest()[:16]


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


def stage(path: str | Path, dest: Path) -> Path:
    """Copy the candidate at ``path`` into ``dest`` (created) and return ``dest``.

    A directory is copied whole (within the size caps). A single file is copied as
    ``kernel.py`` together with its sibling source files (not recursively).
    """
    src_dir, kernel = resolve(path)
    dest.mkdir(parents=True, exist_ok=True)
    if Path(path).is_dir():
        rels = candidate_files(src_dir)
    else:
        rels = [p.relative_to(src_dir) for p in sorted(src_dir.iterdir())
                if p.is_file() and not p.is_symlink() and p.suffix in SOURCE_SUFFIXES
                and not p.name.startswith(".") and p != kernel and p.name != KERNEL_FILE]
        if sum((src_dir / r).stat().st_size for r in rels) > MAX_BYTES or len(rels) > MAX_FILES:
            rels = []
    total = sum((src_dir / r).stat().st_size for r in rels if src_dir / r != kernel)
    total += kernel.stat().st_size
    if total > MAX_BYTES:
        raise CandidateError(f"{src_dir}: {total} bytes of files; the cap is {MAX_BYTES}")
    for rel in rels:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src_dir / rel, dest / rel)
    shutil.copyfile(kernel, dest / KERNEL_FILE)
    return dest
