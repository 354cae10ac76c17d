"""The CUDA C++ a candidate carries, and the language a candidate is written in.

A CUDA candidate either ships ``*.cu`` files next to ``kernel.py`` or, the KernelBench way,
holds its CUDA source in a string constant that it hands to
``torch.utils.cpp_extension.load_inline``. Both are found statically (no import): string
constants of the candidate's Python files that define a ``__global__`` function count as CUDA
sources, and literal ``extra_cuda_cflags`` of a ``load_inline`` call in the same file are kept
so the compile sees the flags the candidate asked for.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

GLOBAL_FN = re.compile(r"__global__\s+void\b")
"""A kernel definition (a ``__global__`` function returns void); prose that mentions
``__global__`` is not CUDA."""
SAFE_FLAG = re.compile(r"^-{1,2}[A-Za-z][\w.,=+-]*$")
"""A compiler flag taken over from the candidate: one token, no paths (``-I/home/...`` or
``--include-path``-style values with slashes are dropped)."""
CUTE_MARKERS = ("cutlass.cute", "import cutlass", "from cutlass")


@dataclass(frozen=True)
class CudaSource:
    """One translation unit: its text, where it came from, the flags the candidate gave."""

    name: str
    """A file name for the compiler (``kernel_py_L12.cu`` for an embedded source)."""
    text: str
    origin: str
    """The candidate file it is in, relative to the candidate dir."""
    first_line: int = 1
    """The line of ``origin`` that holds the source's first line."""
    flags: tuple[str, ...] = ()

    def origin_line(self, line: int) -> int:
        """The line of ``origin`` that holds line ``line`` of the source."""
        return self.first_line + line - 1

    def uses_torch(self) -> bool:
        return "<torch/" in self.text or "<ATen/" in self.text or "<c10/" in self.text


def cuda_sources(root: Path) -> list[CudaSource]:
    """Every CUDA source of the candidate at ``root`` (a dir, or one file)."""
    root = Path(root)
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file()
                                                  and "__pycache__" not in p.parts)
    base = root.parent if root.is_file() else root
    out: list[CudaSource] = []
    for path in files:
        rel = path.relative_to(base).as_posix()
        if path.suffix == ".cu":
            out.append(CudaSource(path.name, _read(path), rel))
        elif path.suffix == ".py":
            out.extend(_embedded(_read(path), rel))
    return out


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return ""


def _embedded(text: str, rel: str) -> list[CudaSource]:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    flags = _cflags(tree)
    stem = rel.replace("/", "_").replace(".", "_")
    out = []
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    for node in ast.walk(tree):
        if id(node) in docs:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and GLOBAL_FN.search(node.value):
            out.append(CudaSource(f"{stem}_L{node.lineno}.cu", node.value, rel, node.lineno, flags))
    return sorted(out, key=lambda s: s.first_line)


def _cflags(tree: ast.AST) -> tuple[str, ...]:
    """Literal ``extra_cuda_cflags`` of ``load_inline``/``load`` calls (safe tokens only)."""
    found: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for kw in node.keywords:
            if kw.arg == "extra_cuda_cflags" and isinstance(kw.value, (ast.List, ast.Tuple)):
                found += [e.value for e in kw.value.elts if isinstance(e, ast.Constant)
                          and isinstance(e.value, str) and SAFE_FLAG.match(e.value)]
    return tuple(dict.fromkeys(found))


def language_of(root: Path) -> str:
    """``cute-dsl``, ``cuda`` or ``triton``: what the candidate at ``root`` is written in."""
    root = Path(root)
    files = [root] if root.is_file() else [p for p in root.rglob("*.py") if "__pycache__" not in p.parts]
    if any(marker in _read(p) for p in files for marker in CUTE_MARKERS):
        return "cute-dsl"
    return "cuda" if cuda_sources(root) else "triton"
