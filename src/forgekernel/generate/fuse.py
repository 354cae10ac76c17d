"""Fuse the element-wise kernel that follows a convolution into the convolution's kernels.

Inductor leaves a convolution to a library call and writes what follows it (a bias, an
activation, a clamp, a scale) as a pointwise kernel over the call's output. When that kernel
works in place on the output (``in_out_ptr0``: Inductor reuses a buffer only when each
element is read where it is written), forge's convolution can run it on each output tile
right after storing it, while the tile is still in the L2, instead of a second pass over the
whole output through memory: :func:`epilogues` rewrites the ``call`` body to pass the kernel,
as a ``@triton.jit`` function of (offsets, mask, args), to ``convolution(..., epilogue=)``
through the runtime's ``_rt_conv_tail``, which runs it as a pass of its own instead when the
candidate's ``RT_FUSE_TAIL`` knob is 0 (the search tries both).

A fusion is made only when all of this holds, else the body is left as it was:

* between the convolution and the kernel's launch the body only renames the output, deletes
  names, checks sizes and computes sizes (those move above the convolution);
* the kernel is a 1-D pointwise kernel whose body uses neither its block size nor its length;
* every load and store of ``in_out_ptr0`` is at the element's own offset, and the kernel
  covers the output once: checked by evaluating Inductor's index and size expressions at
  random sizes (:func:`_in_memory_order`), since the convolution hands the epilogue memory
  offsets.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from typing import Any

CONV = re.compile(r"^(\w+) = extern_kernels\.convolution\((.*)\)$")
RUN = re.compile(r"^(\w+)\.run\((\w+), ([\w, ]+), stream=\w+\)$")
ALIAS = re.compile(r"^(\w+) = (\w+)(; del \w+)?(\s*#.*)?$")
SIZE = re.compile(r"^(\w+) = ([\w\s+\-*/%(),]+)$")
KEEP = re.compile(r"^(del \w+|assert_size_stride\(.*\)|#.*|\w+ = get_raw_stream\(\w*\)|)$")
SIZE_NAMES = re.compile(r"^(s\d+|ps\d+|u\d+|arg\d+_\d+|\w+_xnumel|max|min)$")
SHAPE_CHECK = re.compile(r"^assert_size_stride\((\w+), ")
SAFE = {"__builtins__": {}, "max": max, "min": min}
"""What Inductor's size and index expressions may call when evaluated here."""
FORBIDDEN = ("XBLOCK", "xnumel", "xoffset", "program_id", "tl.arange")


def epilogues(body: str, kernels: Mapping[str, Any]) -> tuple[str, list[str], list[str]]:
    """(the body with fusions made, the epilogue functions' sources, the fused kernels' names);
    ``kernels``: Inductor's kernels by name (kernels.Kernel: kind, signature, source)."""
    lines, sources, fused = body.splitlines(), [], []
    i = 0
    while i < len(lines):
        found = _fusion(lines, i, kernels)
        if found is not None:
            lines, source, name = found
            sources.append(source)
            fused.append(name)
        i += 1
    return "\n".join(lines) + "\n", sources, fused


def _fusion(lines: list[str], i: int, kernels: Mapping[str, Any]) -> tuple[list[str], str, str] | None:
    conv = CONV.match(lines[i].strip())
    if conv is None or "epilogue=" in lines[i]:  # one epilogue per convolution
        return None
    aliases, sizes, shapes = {conv.group(1)}, [], []
    for j in range(i + 1, len(lines)):
        s = lines[j].strip()
        alias, size, run, check = ALIAS.match(s), SIZE.match(s), RUN.match(s), SHAPE_CHECK.match(s)
        if alias and alias.group(2) in aliases:
            aliases.add(alias.group(1))
        elif check and check.group(1) in aliases:
            shapes.append(_offset(s, check.end()))
        elif KEEP.match(s):
            continue
        elif size and all(SIZE_NAMES.match(n) for n in re.findall(r"[A-Za-z_]\w*", size.group(2))):
            sizes.append(j)
        elif run and run.group(2) in aliases and run.group(1) in kernels:
            return _fuse(lines, i, j, sizes, shapes, kernels[run.group(1)], run)
        else:
            return None
    return None


def _fuse(lines: list[str], i: int, j: int, sizes: list[int], shapes: list[str], kernel: Any,
          run: re.Match) -> tuple[list[str], str, str] | None:
    params = [p for p in kernel.signature if p != "XBLOCK"]
    args = [a.strip() for a in run.group(3).split(",")]
    if kernel.kind != "pointwise" or params[:1] != ["in_out_ptr0"] or params[-1:] != ["xnumel"] \
            or len(args) != len(params) - 1 or set(kernel.signature) - {*params, "XBLOCK"}:
        return None
    body = _kernel_body(kernel.source)
    if body is None or not shapes or None in shapes or not _in_memory_order(lines[:j], body, params, args, shapes[0]):
        return None
    name = kernel.name + "_epi"
    source = "\n".join(["@triton.jit", f"def {name}(xindex, xmask, args):",
                        *(f"    {p} = args[{k}]" for k, p in enumerate(params[:-1])), *body])
    indent = lines[i][:len(lines[i]) - len(lines[i].lstrip())]
    # sizes reach the epilogue as constexprs (the convolution is compiled per geometry anyway):
    # its index arithmetic then divides by constants, not per element by run-time sizes
    passed = [f"tl.constexpr({a})" if re.fullmatch(r"ks\d+", p) else a
              for p, a in zip(params[1:-1], args[:-1], strict=True)]
    out_name, conv_args = CONV.match(lines[i].strip()).groups()  # fused or not: the RT_FUSE_TAIL knob
    call = (f"{indent}{out_name} = _rt_conv_tail(extern_kernels.convolution, {conv_args}, "
            f"epilogue=({name}, ({''.join(a + ', ' for a in passed)})))")
    moved = [lines[k] for k in sizes]
    out = lines[:i] + moved + [call] + [ln for k, ln in enumerate(lines[i + 1:j], i + 1) if k not in sizes]
    out += [f"{indent}# {kernel.name} is the tail of the convolution above (inside its kernels at RT_FUSE_TAIL = 1)"] + lines[j + 1:]
    return out, source, kernel.name


def _kernel_body(source: str) -> list[str] | None:
    """The kernel's lines after its mask (its element-wise work), or None when they use the
    launch's block, length or program index (its other tensors are fine: every index it
    computes comes from xindex, which the check below ties to memory order)."""
    text = source[source.index("def "):]
    lines = text.splitlines()[1:]
    at = next((k for k, ln in enumerate(lines) if ln.strip().startswith("xmask = ")), None)
    if at is None or source.count("@triton.jit") != 1:
        return None
    body = lines[at + 1:]
    if any(word in ln for ln in body for word in FORBIDDEN):
        return None
    return body


def _in_memory_order(head: list[str], body: list[str], params: list[str], args: list[str],
                     shape: str, draws: int = 6) -> bool:
    """Whether every in_out_ptr0 offset in ``body`` equals xindex and xnumel is the output's
    element count, at ``draws`` random assignments of the call's size arguments."""
    rng = random.Random(0)
    index_lines = [ln.strip() for ln in body if re.match(r"^\s*x\d+ = [\w\s+\-*/%()]+$", ln)]
    offsets = [_offset(ln, m.end()) for ln in body for m in re.finditer(r"in_out_ptr0 \+ ", ln)]
    if not offsets or None in offsets:
        return False
    checked = 0
    for _ in range(draws * 40):  # draws where some output size comes out <= 0 are skipped
        env = _sizes(head, rng)
        try:
            ks = {p: eval(a, SAFE, env)  # sizes (not the tensors)
                  for p, a in zip(params[1:], args, strict=True) if re.fullmatch(r"ks\d+|xnumel", p)}
            dims = eval(shape, SAFE, env)
        except Exception:
            return False
        if min(dims, default=1) <= 0:  # sizes this output cannot have
            continue
        numel = 1
        for d in dims:
            numel *= d
        if ks["xnumel"] != numel:
            return False
        for x in {0, numel - 1, *(rng.randrange(numel) for _ in range(64))}:
            if not _offsets_are(x, index_lines, offsets, ks):
                return False
        checked += 1
        if checked == draws:
            return True
    return checked >= 2


def _offsets_are(x: int, index_lines: list[str], offsets: list[str], ks: dict[str, int]) -> bool:
    scope = {**ks, "xindex": x}
    try:
        for ln in index_lines:
            var, expr = ln.split(" = ", 1)
            scope[var] = eval(expr, SAFE, scope)
        return all(eval(o, SAFE, scope) == x for o in offsets)
    except Exception:
        return False


def _offset(line: str, start: int) -> str | None:
    """The parenthesised expression at ``start`` in ``line`` (Inductor writes ptr + (expr))."""
    if line[start:start + 1] != "(":
        m = re.match(r"\w+", line[start:])
        return m.group(0) if m else None
    depth = 0
    for k in range(start, len(line)):
        depth += {"(": 1, ")": -1}.get(line[k], 0)
        if depth == 0:
            return line[start:k + 1]
    return None


class _Draw(dict):
    """Sizes by name; a name no size line defines (a size read off a tensor, ``s70 =
    arg8_1_size[0]``) is drawn at random the first time it is read."""

    def __init__(self, rng: random.Random) -> None:
        super().__init__()
        self.rng = rng

    def __missing__(self, name: str) -> int:
        self[name] = self.rng.randint(2, 24)
        return self[name]


def _sizes(head: list[str], rng: random.Random) -> _Draw:
    """The body's size assignments evaluated in order, the sizes they start from drawn."""
    env = _Draw(rng)
    for ln in head:
        m = SIZE.match(ln.strip())
        if m and all(SIZE_NAMES.match(n) for n in re.findall(r"[A-Za-z_]\w*", m.group(2))):
            try:
                env[m.group(1)] = eval(m.group(2), SAFE, env)
            except ArithmeticError:
                continue
    return env
