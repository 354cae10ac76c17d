"""Inductor's Triton kernels as forge holds them: read from the wrapper Inductor wrote (the
``async_compile.triton`` assignments), renamed so that a candidate can hold several, and
written back with their size parameters ready to be compiled in (:func:`sized`)."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from forgekernel.generate.inductor import LoweringError

SUPPORTED_KINDS = ("pointwise", "reduction", "persistent_reduction")
"""Inductor kernel kinds the runtime launches (others are reported as unsupported)."""
LAUNCH_BLOCKS = ("XBLOCK", "YBLOCK", "ZBLOCK", "R0_BLOCK")
"""Block-size parameters the runtime sets at launch (a kernel with others is unsupported)."""
SIZE_CONSTANTS = ("xnumel", "ynumel", "znumel", "r0_numel")
"""Sizes Inductor may specialise into a kernel's signature as constexprs (a reduction to one
value: ``xnumel`` 1); the wrapper passes them in the call like any size, so the launcher does."""


@dataclass(frozen=True)
class Kernel:
    """One kernel of the wrapper: its Triton source and what the launcher needs."""

    name: str
    kind: str
    signature: dict[str, str]
    hint: str
    source: str
    rnumel: int | None = None
    """The reduced length when the kernel fixes it (a persistent reduction over a constant
    length has no ``r0_numel`` argument)."""


def assignments(tree: ast.Module) -> list[ast.Assign]:
    out = []
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        func = node.value.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                and func.value.id == "async_compile":
            if func.attr != "triton":
                raise LoweringError(f"Inductor wrote a {func.attr} kernel; forge launches Triton only")
            out.append(node)
    return out


def read(node: ast.Assign, number: int) -> Kernel:
    name = node.value.args[0].value
    src = node.value.args[1].value
    module = ast.parse(src)
    fns = [n for n in module.body if isinstance(n, ast.FunctionDef)]
    main = next((f for f in fns if f.name == name), None)
    deco = next((d for d in main.decorator_list if isinstance(d, ast.Call)), None) if main else None
    if deco is None or not isinstance(deco.func, ast.Attribute):
        raise LoweringError(f"kernel {name}: no Inductor heuristics decorator to read")
    kind = deco.func.attr
    if kind not in SUPPORTED_KINDS:
        raise LoweringError(f"kernel {name} is an Inductor '{kind}' kernel; forge's launcher "
                            f"drives {', '.join(SUPPORTED_KINDS)} kernels")
    kw = {k.arg: k.value for k in deco.keywords}
    signature = ast.literal_eval(_dict_item(kw["triton_meta"], "signature"))
    unknown = [k for k, v in signature.items() if v == "constexpr"
               and k not in LAUNCH_BLOCKS and k not in SIZE_CONSTANTS]
    if unknown:
        raise LoweringError(f"kernel {name} takes the launch parameter {unknown[0]}, which "
                            f"forge's launcher does not set (it sets {', '.join(LAUNCH_BLOCKS)})")
    fixed = re.search(r"^\s*r0_numel = (\d+)\s*$", ast.get_source_segment(src, main), re.M)
    hint = kw.get("reduction_hint")
    hint_name = hint.attr if isinstance(hint, ast.Attribute) else "DEFAULT"
    texts = []
    for f in fns:
        seg = ast.get_source_segment(src, f)
        texts.append("@triton.jit\n" + seg[seg.index("def "):])
    text = "\n\n\n".join(texts)
    for f in fns:
        if f.name != name:  # helpers (scan combine functions) get names unique to this kernel
            text = re.sub(rf"\b{re.escape(f.name)}\b", f"{f.name}_k{number}", text)
    text = re.sub(rf"\bdef {re.escape(name)}\(", f"def {name}_jit(", text, count=1)
    text = re.sub(r"\btriton_helpers\.(\w+)\b", r"_th_\1", text)
    text = re.sub(r"\btl\.associative_scan\(", "_rt_associative_scan(", text)  # a fast one when interpreted
    return Kernel(name, kind, signature, hint_name, text,
                  int(fixed.group(1)) if fixed and "r0_numel" not in signature else None)


SIZE_PARAM = re.compile("|".join((r"ks\d+", *SIZE_CONSTANTS)))
"""A kernel's size parameters: Inductor's symbolic sizes (ks0, ks1, ...) and its numels."""


def sized(source: str) -> str:
    """The kernel with its size parameters as constexprs: each renamed ``*_c: tl.constexpr``
    and rebound to an int32 scalar (``tl.full([], ...)``, a constant the compiler folds), the
    type Triton gives an int argument below 2**31 (the runtime refuses tensors of more
    elements), so that the body reads as Inductor wrote it. Triton then compiles the kernel
    for each distinct size, and an index division by a size is a division by a constant."""
    def signature(m: re.Match) -> str:
        params = [p.strip() for p in m.group(2).split(",")]
        sizes = [p for p in params if SIZE_PARAM.fullmatch(p)]
        params = [f"{p}_c: tl.constexpr" if p in sizes else p for p in params]
        rebind = "".join(f"\n    {p} = tl.full([], {p}_c, tl.int32)" for p in sizes)
        return f"{m.group(1)}({', '.join(params)}):{rebind}"
    return re.sub(r"^(def \w+_jit)\(([^)]*)\):", signature, source, count=1, flags=re.M)


def _dict_item(node: ast.AST, key: str) -> ast.AST:
    if isinstance(node, ast.Dict):
        for k, v in zip(node.keys, node.values, strict=True):
            if isinstance(k, ast.Constant) and k.value == key:
                return v
    raise LoweringError(f"Inductor's kernel metadata has no '{key}'")
