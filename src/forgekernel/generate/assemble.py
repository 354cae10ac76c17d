"""Turn Inductor's wrapper module (text) into a standalone candidate ``kernel.py``.

The candidate holds Inductor's Triton kernels as plain ``@triton.jit`` functions (their
autotuning decorators dropped), forge's launch runtime (:mod:`.library.runtime`: block
sizes from the call's sizes, the knobs forge's search tunes), forge's own Triton kernels
for the parts Inductor leaves to libraries (matrix products, convolutions: the
``extern_kernels`` shim), Inductor's ``call`` body unchanged, and the entry point the task
format asks for: ``run(*inputs)`` or ``class ModelNew``. It imports torch, triton and
Inductor's device-side helper functions (``torch._inductor.runtime.triton_helpers``) only.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import textwrap
from dataclasses import dataclass, field

from forgekernel.generate import dispatch, fuse, guards
from forgekernel.generate import kernels as kernels_mod
from forgekernel.generate.inductor import Lowered, LoweringError
from forgekernel.generate.libops import LIBRARY_NAMESPACE, RNN_KINDS


@dataclass(frozen=True)
class Wrapper:
    """The parsed wrapper: kernels, the ``call`` body and the extern calls it makes."""

    kernels: tuple[kernels_mod.Kernel, ...]
    body: str
    externs: tuple[str, ...]
    fallbacks: tuple[str, ...]
    """Eager aten ops the body calls (ops Inductor did not lower)."""
    returns: int


@dataclass(frozen=True)
class Entry:
    """The candidate's entry point.

    ``params``: the forge task's ``run`` parameter names; or, for KernelBench, ``init_source``
    (Model's ``__init__`` text) with ``imports`` (the reference's import lines)."""

    params: tuple[str, ...] = ()
    init_source: str = ""
    imports: tuple[str, ...] = ()

    @property
    def kernelbench(self) -> bool:
        return bool(self.init_source)


@dataclass
class Assembly:
    """What was generated, for the plan and the report."""

    text: str
    kernels: tuple[str, ...]
    library: tuple[str, ...] = ()
    fallbacks: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)


def parse(code: str, suffix: str = "", first: int | None = None) -> Wrapper:
    """Kernels and the ``call`` body of an Inductor wrapper module; ``suffix`` appended to
    every kernel's name (and its helpers numbered apart), so that a second lowering's kernels
    can sit beside the first's in one candidate (``first``: the helpers' first number)."""
    tree = ast.parse(code)
    first = (1000 if suffix else 0) if first is None else first
    kernels = [kernels_mod.read(node, first + k) for k, node in enumerate(kernels_mod.assignments(tree))]
    call = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "call"), None)
    if call is None:
        raise LoweringError("Inductor's wrapper has no call() function")
    body = textwrap.dedent("\n".join(ast.get_source_segment(code, call).splitlines()[1:]))
    body = re.sub(rf"\btorch\.ops\.{LIBRARY_NAMESPACE}\.(\w+)\.default\(", r"extern_kernels.\1(", body)
    externs, fallbacks = _calls(call)
    ret = next((n for n in ast.walk(call) if isinstance(n, ast.Return)), None)
    returns = len(ret.value.elts) if ret is not None and isinstance(ret.value, ast.Tuple) else 1
    if suffix:
        for k in kernels:
            body = re.sub(rf"\b{k.name}\b", k.name + suffix, body)
        kernels = [dataclasses.replace(k, name=k.name + suffix, source=re.sub(
            rf"\bdef {k.name}_jit\(", f"def {k.name}{suffix}_jit(", k.source, count=1)) for k in kernels]
    return Wrapper(tuple(kernels), body, externs, fallbacks, returns)


def _calls(call: ast.FunctionDef) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(extern kernels, eager aten ops) the call body calls, by name."""
    externs, fallbacks = set(), set()
    for node in ast.walk(call):
        if not isinstance(node, ast.Call):
            continue
        chain = _dotted(node.func)
        if chain[:1] == ["extern_kernels"] and len(chain) == 2:
            externs.add(chain[1])
        elif chain[:3] == ["torch", "ops", LIBRARY_NAMESPACE]:
            externs.add(chain[3])
        elif chain[:1] == ["aten"] or chain[:3] == ["torch", "ops", "aten"]:
            fallbacks.add(chain[1] if chain[0] == "aten" else chain[3])
    return tuple(sorted(externs)), tuple(sorted(fallbacks))


def _dotted(node: ast.AST) -> list[str]:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return list(reversed(parts))


# ------------------------------------------------------------------ rendering

_KNOBS = re.compile(r"^# --- knobs ---\n(?P<body>.*?)^# --- end ---\n", re.M | re.S)
EXTERN_LIBRARY = {"mm": "gemm", "addmm": "gemm", "bmm": "gemm", "baddbmm": "gemm",
                  "convolution": "conv", "sort": "sort", "topk": "sort", "scatter_reduce": "scatter",
                  **{kind: "rnn" for kind in RNN_KINDS}}
"""Inductor extern kernels forge implements in Triton, and the library file holding each."""
LIBRARY_NEEDS = {"rnn": ("gemm",)}
"""Library files that call another's functions (pasted with it)."""


def library_source(name: str) -> str:
    """The text of a library file shipped in forgekernel/generate/library/."""
    from forgekernel.generate import library

    return library.source(name)


def _piece(name: str) -> tuple[str, str]:
    """A library file split into (knob lines, code without its docstring and knob block)."""
    text = library_source(name)
    head = _KNOBS.search(text)
    knobs = head.group("body") if head else ""
    if head:
        text = text[:head.start()] + text[head.end():]
    tree = ast.parse(text)
    if tree.body and isinstance(tree.body[0], ast.Expr) and isinstance(tree.body[0].value, ast.Constant):
        text = "\n".join(text.splitlines()[tree.body[0].end_lineno:])
    return knobs, text.strip("\n") + "\n"


def render(lowered: Lowered, entry: Entry, *, title: str = "", small: Lowered | None = None,
           more: tuple[Lowered, ...] = ()) -> Assembly:
    """The candidate's kernel.py for ``lowered`` with the given entry point; ``more``: the
    reference lowered at workloads whose sizes break ``lowered``'s guards; ``small``: lowered
    with sizes from 0 up (:func:`~forgekernel.generate.inductor.lower`'s ``oblivious``).
    Which one a call runs: :mod:`forgekernel.generate.dispatch`."""
    traced = [(lowered, "")] + [(low, f"_w{i}") for i, low in enumerate(more, 1)]
    variants = [(parse(low.code, suffix, 1000 * (i + 1) if i else 0), low, suffix)
                for i, (low, suffix) in enumerate(traced)]
    variants += [(parse(small.code, SMALL, 1000 * (len(traced) + 1)), small, SMALL)] if small else []
    wrappers = [w for w, _, _ in variants]
    for w, low, _ in variants:
        if w.returns != low.outputs:
            raise LoweringError(f"Inductor's call returns {w.returns} tensors where the reference "
                                f"returns {low.outputs} (outputs that alias inputs are not supported)")
    wrapper = wrappers[0]
    externs = tuple(sorted({e for w in wrappers for e in w.externs}))
    helpers = sorted({f for w in wrappers for f in _helper_files(w)})
    libs = {EXTERN_LIBRARY[e] for e in externs if e in EXTERN_LIBRARY and _available(EXTERN_LIBRARY[e])}
    libs |= {need for lib in libs for need in LIBRARY_NEEDS.get(lib, ())}
    pieces = ["runtime", "interpret", *helpers, *sorted(libs)]
    split = [_piece(p) for p in pieces]
    library = _library_notes(wrapper)
    parts = [_docstring(lowered, wrapper, library, title, small is not None, len(more)), _IMPORTS.format(
        nn="import torch.nn as nn\n" if entry.kernelbench else ""),
        "# --- knobs ---\n" + "".join(k for k, _ in split) + "# --- end ---\n"]
    parts += [code for _, code in split]
    parts.append(_interpret_blocks(pieces))
    parts.append(_externs(externs))
    dispatched = len(variants) > 1  # one lowering alone runs whatever its guards say
    parts.append(guards.FAILING if dispatched else "")
    for w, low, suffix in variants:
        parts += _variant(w, low, suffix, "conv" in pieces, dispatched)
    parts.append(dispatch.render(traced, (small, SMALL) if small else None))
    parts.append(_entry(entry, lowered))
    text = "\n\n".join(p.strip("\n") for p in parts if p.strip()) + "\n"
    return Assembly(text=text, kernels=tuple(k.name for w in wrappers for k in w.kernels), library=library,
                    fallbacks=tuple(sorted({f for w in wrappers for f in w.fallbacks})))


SMALL = "_s01"
"""Suffix of the kernels and functions of the lowering for sizes of 0 or 1."""


def _variant(wrapper: Wrapper, lowered: Lowered, suffix: str, conv: bool, guarded: bool) -> list[str]:
    """One lowering's kernels, launchers, ``_inductor_call`` and ``_inductor_args`` (and,
    where ``guarded``, ``_inductor_fits``: its guards, which the dispatch reads)."""
    body, epilogues, fused = fuse.epilogues(wrapper.body, {k.name: k for k in wrapper.kernels}) \
        if conv else (wrapper.body, [], [])
    kernels = [k for k in wrapper.kernels if k.name not in fused]  # the others run as epilogues
    parts = [kernels_mod.sized(k.source) for k in kernels] + epilogues
    parts.append("\n".join(f"{k.name} = _RtLaunch({k.name}_jit, {k.kind!r}, {k.signature!r}, {k.hint!r}"
                            + (f", rnumel={k.rnumel}" if k.rnumel else "")
                            + (f", unmasked={unmasked(k.source)!r})" if unmasked(k.source) else ")")
                            for k in kernels))
    parts.append(f"def _inductor_call{suffix}(args):\n" + textwrap.indent(body, "    "))
    parts.append(_arg_builder(lowered, suffix))
    parts.append(guards.predicate(lowered.guards, f"_inductor_fits{suffix}") if guarded else "")
    return parts


_MASKS = (("xmask", "XBLOCK", "xnumel"), ("ymask", "YBLOCK", "ynumel"), ("r0_mask", "R0_BLOCK", "r0_numel"))


def unmasked(source: str) -> tuple[tuple[str, str], ...]:
    """(block, length) of the axes a kernel has no mask on (``xmask = tl.full([XBLOCK], True,
    ...)``): Inductor leaves a mask out where the length is a multiple of every block it would
    launch, so forge's runtime must launch blocks that divide the length there too."""
    return tuple((key, numel) for mask, key, numel in _MASKS
                 if re.search(rf"^\s*{mask} = tl\.full\(\[\w+\], True", source, re.M))


INTERPRET_BLOCKS = {"runtime": {"RT_PW_BLOCK": 16384, "RT_TILE_X": 256, "RT_TILE_Y": 64,
                                "RT_RED_RBLOCK": 8192, "RT_RED_TILE": 65536,
                                "RT_RED_OUTER_XBLOCK": 1024, "RT_RED_OUTER_RBLOCK": 64},
                    "gemm": {"GEMM_BLOCK_M": 256, "GEMM_BLOCK_N": 128, "GEMM_BLOCK_K": 128},
                    "conv": {"CONV_BLOCK_M": 1024, "CONV_BLOCK_N": 64, "CONV_BLOCK_K": 128}}
"""Library tile sizes under the CPU interpreter, which pays per program and per loop step
(the knob block keeps the GPU's)."""


def _interpret_blocks(pieces: list[str]) -> str:
    rows = [f"    {k} = {v}" for p in pieces for k, v in INTERPRET_BLOCKS.get(p, {}).items()]
    if not rows:
        return ""
    return ("if RT_INTERPRET:  # the CPU interpreter: fewer, larger tiles (GPU tiles are the knobs)\n"
            + "\n".join(rows) + "\n")


HELPER_FILES = ("runtime", "search")
"""Library files defining the device helpers (``_th_*``) Inductor's kernels call: the runtime
always pasted, the others only when a kernel calls one of theirs."""


def _helper_files(wrapper: Wrapper) -> list[str]:
    """The helper files beyond the runtime that the kernels need; every helper they call must
    exist in one of :data:`HELPER_FILES`."""
    defined = {f: set(re.findall(r"^def (_th_\w+)\(", library_source(f), re.M)) for f in HELPER_FILES}
    have = set().union(*defined.values())
    called: set[str] = set()
    for k in wrapper.kernels:
        calls = set(re.findall(r"\b(_th_\w+)\(", k.source))
        if missing := sorted(calls - have):
            raise LoweringError(f"kernel {k.name} calls Inductor's helper {missing[0][4:]}, which "
                                "forge's runtime does not provide")
        called |= calls
    return [f for f in HELPER_FILES[1:] if defined[f] & called]


def _available(name: str) -> bool:
    try:
        library_source(name)
    except KeyError:
        return False
    return True


def _library_notes(wrapper: Wrapper) -> tuple[str, ...]:
    """Parts computed by a library rather than by a Triton kernel of the candidate."""
    notes = [f"aten.{op} (eager PyTorch: Inductor did not lower it)" for op in wrapper.fallbacks]
    for e in wrapper.externs:
        lib = EXTERN_LIBRARY.get(e)
        if lib is None or not _available(lib):
            notes.append(f"{e} (PyTorch library call: forge has no Triton kernel for it yet)")
    return tuple(notes)


_IMPORTS = """import math

import torch
{nn}import triton
import triton.language as tl
tl_math = tl.math
aten = torch.ops.aten
inf, nan = math.inf, math.nan
"""


def _docstring(lowered: Lowered, wrapper: Wrapper, library: tuple[str, ...], title: str,
               second: bool = False, more: int = 0) -> str:
    lines = [title or "A candidate generated by forge's built-in agent.", "",
             f"Kernels: Triton, from TorchInductor's code generation (torch {lowered.torch_version}),",
             "launched by forge's runtime with the block sizes in the knob block below.",
             f"Kernels: {', '.join(k.name for k in wrapper.kernels) or 'none'}."]
    if more:
        lines += [f"{more} more lowering(s), traced at workloads whose sizes break the first's guards "
                  "(kernels ending _w1, _w2, ...), run where their own guards hold."]
    if second:
        lines += [f"A second lowering, with sizes from 0 up (kernels ending {SMALL}), runs where a call's "
                  "sizes break the first's guards (_inductor_run says how it chooses)."]
    if library:
        lines += ["Library parts: " + "; ".join(library) + "."]
    body = "\n".join(textwrap.fill(line, 96) if line else "" for line in lines)
    return f'"""{body}\n"""'


def _externs(names: tuple[str, ...]) -> str:
    """The extern_kernels namespace Inductor's body calls: forge's Triton kernels (through an
    adapter from the custom op's argument order) or, where forge has none, PyTorch."""
    defs, rows = [], []
    for name in names:
        lib = EXTERN_LIBRARY.get(name)
        text = _LIB_ADAPTER.get(name) if lib and _available(lib) else _TORCH_FALLBACK.get(name)
        if text is None:
            raise LoweringError(f"Inductor calls the library kernel {name}, which forge cannot "
                                "provide in a standalone candidate")
        defs.append(text)
        rows.append(f"    {name} = staticmethod(_lib_{name})")
    return "".join(defs) + "\n\nclass extern_kernels:\n" + ("\n".join(rows) or "    pass") + "\n"


_LIB_ADAPTER = {
    "mm": "\ndef _lib_mm(a, b):\n    return mm(a, b)\n",
    "bmm": "\ndef _lib_bmm(a, b):\n    return bmm(a, b)\n",
    "addmm": ("\ndef _lib_addmm(bias, a, b, beta=1, alpha=1):\n"
              "    return addmm(bias, a, b, alpha=alpha, beta=beta)\n"),
    "baddbmm": ("\ndef _lib_baddbmm(bias, a, b, beta=1, alpha=1):\n"
                "    return baddbmm(bias, a, b, alpha=alpha, beta=beta)\n"),
    "convolution": ("\ndef _lib_convolution(x, w, bias, stride, padding, dilation, transposed,"
                    " output_padding, groups, epilogue=None):\n"
                    "    if CONV_LIBRARY:  # the knob is conv.py's\n"
                    "        return _rt_aten_conv(x, w, bias, stride, padding, dilation, transposed, "
                    "output_padding, groups, epilogue, CONV_LIBRARY == 2)\n"
                    "    return convolution(x, w, bias, stride, padding, dilation, transposed, output_padding, "
                    "groups, epilogue)\n"),
    "sort": "\ndef _lib_sort(x, dim, descending):\n    return sort(x, dim, descending)\n",
    "topk": ("\ndef _lib_topk(x, k, dim, largest, sorted):\n"
             "    return topk(x, k, dim, largest, sorted)\n"),
    "scatter_reduce": ("\ndef _lib_scatter_reduce(x, dim, index, src, reduce, include_self):\n"
                       "    return scatter_reduce(x, dim, index, src, reduce, include_self)\n"),
    **{kind: (f"\ndef _lib_{kind}(x, hx, params, has_biases, num_layers, dropout, train, bidirectional,"
              f" batch_first):\n    return {kind}(x, hx, params, has_biases, num_layers, dropout, train, "
              "bidirectional, batch_first)\n") for kind in RNN_KINDS},
}
"""forge's library kernels behind the ``forge_lib`` custom ops' argument order."""
_TORCH_FALLBACK = {
    "mm": "\ndef _lib_mm(a, b):\n    return torch.mm(a, b)\n",
    "bmm": "\ndef _lib_bmm(a, b):\n    return torch.bmm(a, b)\n",
    "addmm": ("\ndef _lib_addmm(bias, a, b, beta=1, alpha=1):\n"
              "    return torch.addmm(bias, a, b, alpha=alpha, beta=beta)\n"),
    "baddbmm": ("\ndef _lib_baddbmm(bias, a, b, beta=1, alpha=1):\n"
                "    return torch.baddbmm(bias, a, b, alpha=alpha, beta=beta)\n"),
    "convolution": ("\ndef _lib_convolution(x, w, bias, stride, padding, dilation, transposed,"
                    " output_padding, groups):\n    return torch.convolution(x, w, bias, stride, "
                    "padding, dilation, transposed, output_padding, groups)\n"),
    "sort": ("\ndef _lib_sort(x, dim, descending):\n"
             "    return torch.sort(x, dim=dim, descending=descending)\n"),
    "topk": ("\ndef _lib_topk(x, k, dim, largest, sorted):\n"
             "    return torch.topk(x, k, dim=dim, largest=largest, sorted=sorted)\n"),
    "scatter_reduce": ("\ndef _lib_scatter_reduce(x, dim, index, src, reduce, include_self):\n"
                       "    return torch.scatter_reduce(x, dim, index, src, reduce, include_self=include_self)\n"),
    **{kind: (f"\ndef _lib_{kind}(*args):\n    return torch.ops.aten.{kind}.input(*args)\n")
       for kind in RNN_KINDS},
}
"""PyTorch for the library parts forge has no Triton kernel for (said in the candidate)."""


def _arg_builder(lowered: Lowered, suffix: str = "") -> str:
    items = ",\n        ".join(a.expression("flat", "model") for a in lowered.args)
    return f"def _inductor_args{suffix}(flat, model=None):\n    return [\n        {items},\n    ]\n"


def _entry(entry: Entry, lowered: Lowered) -> str:
    finish = "outs[0]" if lowered.single else "tuple(outs)"
    if not entry.kernelbench:
        params = ", ".join(entry.params)
        return (f"def run({params}):\n    flat = [{params}]\n    _rt_bind_device(flat)\n"
                f"    outs = _inductor_run(flat)\n    return {finish}\n")
    init = textwrap.indent(textwrap.dedent(entry.init_source), "    ")
    init = re.sub(r"super\(\s*Model\s*,\s*self\s*\)", "super()", init)
    imports = "\n".join(entry.imports)
    return (f"{imports}\n\n\nclass ModelNew(nn.Module):\n{init}\n\n"
            "    def forward(self, *inputs):\n"
            "        flat = [t for _, t in self.named_parameters()]\n"
            "        flat += [t for _, t in self.named_buffers()]\n"
            "        flat += list(inputs)\n        _rt_bind_device(flat)\n"
            f"        outs = _inductor_run(flat, self)\n        return {finish}\n")
