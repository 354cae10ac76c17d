"""Kernel templates for the built-in agent (Triton, and CUDA C++ for row norms), and the
catalog that describes them.

Each template is a complete ``kernel.py`` (a module in this package, shipped as data and
never imported here) whose knobs and semantic constants sit in a header block::

    # --- knobs ---
    NUM_WARPS = 0
    # --- semantics ---
    EPS = 1e-6
    # --- end ---

and which defines one function per operator it implements (``rmsnorm``, ``softmax``, ...).
:func:`render` rewrites the header with chosen values, drops the functions the chosen
operator does not use (the other operators of the file and their helpers) and appends a
``run`` with the reference's own parameter names that calls the operator function.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from importlib import resources
from typing import Any


@dataclass(frozen=True)
class Knob:
    """A tunable constant of a template: its default and the values worth searching."""

    name: str
    default: int
    space: tuple[int, ...]
    doc: str = ""


@dataclass(frozen=True)
class Template:
    """One kernel structure ("one row per program", "looped over column blocks", ...)."""

    name: str
    family: str
    structure: str
    """What the structure is, in words (goes into the curriculum's decision lines)."""
    ops: tuple[str, ...]
    """Operator functions the template defines (the semantics it implements)."""
    knobs: tuple[Knob, ...]
    lever: str = ""
    """What this structure buys, in words."""
    language: str = "triton"
    """What the kernel is written in (a task's ``language``)."""

    def defaults(self) -> dict[str, int]:
        return {k.name: k.default for k in self.knobs}

    def space(self) -> dict[str, list[int]]:
        return {k.name: list(k.space) for k in self.knobs}

    def knob(self, name: str) -> Knob:
        for k in self.knobs:
            if k.name == name:
                return k
        raise KeyError(f"template {self.name} has no knob {name}")

    def source(self) -> str:
        return resources.files(__package__).joinpath(f"{self.name}.py").read_text()


@dataclass(frozen=True)
class Config:
    """A fully specified candidate: template plus every knob's value."""

    template: str
    knobs: dict[str, int] = field(default_factory=dict)

    def key(self) -> str:
        """Canonical JSON, used as the coder's summary and to recognise repeats."""
        return json.dumps({"template": self.template, "knobs": dict(sorted(self.knobs.items()))},
                          separators=(",", ":"))

    def data(self) -> dict[str, Any]:
        """The config as the coder's machine-readable state (``CoderResult.data``)."""
        return {"config": {"template": self.template, "knobs": dict(sorted(self.knobs.items()))}}

    @staticmethod
    def of(data: dict[str, Any], summary: str = "") -> Config | None:
        """The config in a coder's state written by :meth:`data`, else (an attempt recorded
        before the state was) the one in its summary."""
        raw = data.get("config")
        if isinstance(raw, dict):
            return Config._from(raw)
        return Config.parse(summary)

    @staticmethod
    def parse(text: str) -> Config | None:
        """The config in a summary written by :meth:`key` (None for any other text)."""
        start = text.find("{")
        if start < 0:
            return None
        try:
            raw = json.loads(text[start:])
        except ValueError:
            return None
        return Config._from(raw)

    @staticmethod
    def _from(raw: Any) -> Config | None:
        if not isinstance(raw, dict) or not isinstance(raw.get("template"), str):
            return None
        knobs = raw.get("knobs") or {}
        if not isinstance(knobs, dict):
            return None
        return Config(raw["template"], {str(k): v for k, v in sorted(knobs.items())})


_W = (2, 4, 8, 16, 32)
TEMPLATES: tuple[Template, ...] = (
    Template("rownorm_row", "rownorm", "one program per row, the whole row in registers, fp32 statistics",
             ("rmsnorm", "layernorm", "fused_add_rmsnorm"),
             (Knob("NUM_WARPS", 0, (0, 4, 8, 16, 32), "0 = from the row length"),),
             "all launches fused into one; every element read once, written once"),
    Template("rownorm_multirow", "rownorm", "several rows per program in one 2-D block (short rows)",
             ("rmsnorm", "layernorm", "fused_add_rmsnorm"),
             (Knob("ROWS", 4, (1, 2, 4, 8, 16, 32)), Knob("NUM_WARPS", 0, (0, *_W), "0 = from the tile size"),
              Knob("MAX_TILE", 16384, (8192, 16384, 32768))),
             "one launch; fewer, fatter programs for short rows"),
    Template("rownorm_looped", "rownorm", "one program per row looping over column blocks (very long rows)",
             ("rmsnorm", "layernorm", "fused_add_rmsnorm"),
             (Knob("BLOCK_N", 4096, (1024, 2048, 4096, 8192, 16384)), Knob("NUM_WARPS", 8, _W)),
             "one launch; bounded registers for any row length, re-reads from L2"),
    Template("softmax_row", "softmax", "one program per row, the whole row in registers, fp32 max/exp/sum",
             ("softmax", "log_softmax"),
             (Knob("NUM_WARPS", 0, (0, 4, 8, 16, 32), "0 = from the row length"),),
             "all launches fused into one; every element read once, written once"),
    Template("softmax_multirow", "softmax", "several rows per program in one 2-D block (short rows)",
             ("softmax", "log_softmax"),
             (Knob("ROWS", 4, (1, 2, 4, 8, 16, 32)), Knob("NUM_WARPS", 0, (0, *_W), "0 = from the tile size"),
              Knob("MAX_TILE", 16384, (8192, 16384, 32768))),
             "one launch; fewer, fatter programs for short rows"),
    Template("softmax_looped", "softmax", "online softmax over column blocks, one row per program (long rows)",
             ("softmax", "log_softmax"),
             (Knob("BLOCK_N", 4096, (1024, 2048, 4096, 8192, 16384)), Knob("NUM_WARPS", 8, _W)),
             "one launch; bounded registers for any row length, one re-read from L2"),
    Template("gated_flat", "elementwise", "flat 1-D blocks over the contiguous tensors",
             ("swiglu",),
             (Knob("BLOCK", 4096, (1024, 2048, 4096, 8192, 16384)), Knob("NUM_WARPS", 8, _W)),
             "one launch; every element read once, written once"),
    Template("gated_rows", "elementwise", "2-D grid of ROWS x BLOCK_N tiles (strided rows, no copy)",
             ("swiglu",),
             (Knob("BLOCK_N", 1024, (256, 512, 1024, 2048, 4096)), Knob("ROWS", 4, (1, 2, 4, 8, 16)),
              Knob("NUM_WARPS", 8, _W)),
             "one launch; tile shape decoupled from the row length"),
    Template("matmul_tiled", "matmul", "output tiles, grouped program order, tl.dot with fp32 accumulation "
             "(persistent TMA path for large M, skinny tiles for small M)",
             ("matmul",),
             (Knob("BLOCK_M", 128, (64, 128, 256)), Knob("BLOCK_N", 256, (64, 128, 256)),
              Knob("BLOCK_K", 64, (32, 64, 128)), Knob("GROUP_M", 8, (1, 4, 8, 16)),
              Knob("NUM_WARPS", 8, (4, 8)), Knob("NUM_STAGES", 3, (2, 3, 4, 5)),
              Knob("TMA_MIN_M", 256, (0, 128, 256, 1024), "persistent TMA kernel from this M; 0 = never"),
              Knob("SKINNY_M", 64, (0, 16, 32, 64, 128), "skinny tiles up to this M; 0 = never"),
              Knob("SKINNY_BLOCK_N", 64, (32, 64, 128)), Knob("SKINNY_BLOCK_K", 256, (64, 128, 256))),
             "tensor cores with operand reuse in L2 through grouped ordering"),
    Template("xent_looped", "cross_entropy", "one program per row, online logsumexp over vocabulary chunks, then a fixed-order mean",
             ("cross_entropy",),
             (Knob("BLOCK_V", 4096, (1024, 2048, 4096, 8192, 16384)), Knob("NUM_WARPS", 8, _W),
              Knob("CHUNK_MAX", 1, (0, 1), "1: one running max per chunk (one exponential per logit, not two)")),
             "logits read once in bf16 (no fp32 copy), two launches"),
    Template("rope_rows", "rope", "ROWS (batch, position, head) rows per program, both halves in registers",
             ("rope",),
             (Knob("ROWS", 16, (1, 2, 4, 8, 16, 32, 64)), Knob("NUM_WARPS", 4, _W),
              Knob("LAYOUT", 0, (0, 1), "1: whole positions per program, cos/sin loaded once per position")),
             "one launch; q read once, written once, cos/sin from L2"),
    Template("rownorm_cuda", "rownorm", "one CUDA C++ thread block per row, 16-byte vector accesses, "
             "warp-shuffle fp32 reductions (built with load_inline)",
             ("rmsnorm", "layernorm", "fused_add_rmsnorm"),
             (Knob("THREADS", 0, (0, 64, 128, 256, 512, 1024), "0 = from the row length"),
              Knob("VEC", 8, (1, 2, 4, 8), "elements per vector access")),
             "one launch, every element read once from DRAM and written once; "
             "one compiled extension serves every knob value", language="cuda"),
    Template("rownorm_cute", "rownorm", "one CuTe DSL CTA per row, 16-byte vector copies, warp-shuffle fp32 reduction, "
             "dynamic row length (cute.compile once per dtype)",
             ("rmsnorm",),
             (Knob("THREADS", 256, (64, 128, 256, 512, 1024)),
              Knob("VEC", 8, (1, 2, 4, 8), "elements per vector access; 1 where a row cannot")),
             "one launch; every element read once from DRAM and written once", language="cute-dsl"),
)
"""Every template, by family; the first of a family is its default structure."""


_REGISTERED: dict[str, Template] = {}


def register(tpl: Template) -> None:
    """Make a structure built at run time (the generated one) known by its name."""
    _REGISTERED[tpl.name] = tpl


def template(name: str) -> Template:
    for t in TEMPLATES:
        if t.name == name:
            return t
    if name in _REGISTERED:
        return _REGISTERED[name]
    raise KeyError(f"no template named {name!r}")


def for_op(op: str, language: str = "triton") -> list[Template]:
    """Templates implementing ``op`` in ``language``, default structure first."""
    return [t for t in TEMPLATES if op in t.ops and t.language == language]


def languages(op: str) -> list[str]:
    """The languages some template implements ``op`` in."""
    return sorted({t.language for t in TEMPLATES if op in t.ops})


def complete(tpl: Template, knobs: dict[str, Any] | None = None) -> Config:
    """Defaults overlaid with ``knobs`` (unknown knob names are an error)."""
    values = tpl.defaults()
    for name, value in (knobs or {}).items():
        tpl.knob(name)
        values[name] = int(value)
    return Config(tpl.name, values)


_HEADER = re.compile(r"^# --- knobs ---\n(?P<body>.*?)^# --- end ---\n", re.M | re.S)
_ASSIGN = re.compile(r"^(?P<name>[A-Z_][A-Z0-9_]*) = (?P<value>[^#\n]*?)(?P<comment>\s*#.*)?$", re.M)


def header_values(text: str) -> dict[str, Any]:
    """The integer assignments of a kernel text's knob header, in order."""
    head = _HEADER.search(text)
    if head is None:
        return {}
    out: dict[str, Any] = {}
    for m in _ASSIGN.finditer(head.group("body")):
        try:
            out[m.group("name")] = int(m.group("value"))
        except ValueError:
            continue
    return out


def with_values(text: str, values: dict[str, Any]) -> str:
    """``text`` with the header's assignments of ``values`` replaced (others kept)."""
    head = _HEADER.search(text)
    if head is None:
        raise ValueError("the kernel text has no knob header")

    def subst(m: re.Match) -> str:
        name = m.group("name")
        value = repr(values[name]) if name in values else m.group("value")
        return f"{name} = {value}{m.group('comment') or ''}"

    body = _ASSIGN.sub(subst, head.group("body"))
    return text[:head.start("body")] + body + text[head.end("body"):]


def render(cfg: Config, op: str, params: tuple[str, ...], constants: dict[str, Any],
           note: str = "", call: tuple[str, ...] = ()) -> str:
    """The kernel.py text for ``cfg`` implementing ``op`` with ``run(*params)``; the operator
    takes the parameters in the order ``call`` (default: as ``run`` receives them)."""
    tpl = template(cfg.template)
    if op not in tpl.ops:
        raise KeyError(f"template {tpl.name} does not implement {op}")
    text = with_values(tpl.source(), {**constants, **cfg.knobs})
    if tpl in TEMPLATES:  # shipped files define several operators: keep what ``op`` uses
        text = only_needed(text, op)
    args = ", ".join(params)
    entry = (f"\n\n# --- entry point: {op} ({note or 'built-in agent'}) ---\n"
             f"def run({args}):\n    return {op}({', '.join(call or params)})\n")
    return text.rstrip("\n") + "\n" + entry


def only_needed(text: str, op: str) -> str:
    """``text`` without the top-level functions that neither ``op`` nor the module's other
    top-level statements reach (by name, transitively); everything else is kept verbatim."""
    tree = ast.parse(text)
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    if op not in funcs:
        return text
    wanted, todo = set(), [op, *(name for n in tree.body if not isinstance(n, ast.FunctionDef)
                                 for name in _names(n))]
    while todo:
        name = todo.pop()
        if name in funcs and name not in wanted:
            wanted.add(name)
            todo.extend(_names(funcs[name]))
    lines = text.splitlines(keepends=True)
    for name, node in sorted(funcs.items(), key=lambda kv: -kv[1].lineno):
        if name not in wanted:
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
            del lines[start:node.end_lineno]
    return re.sub(r"\n{4,}", "\n\n\n", "".join(lines))


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
