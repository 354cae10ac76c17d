"""The built-in agent's structure for any operator it can trace: a generated candidate.

:func:`resolve` decides the structure for a task by what its reference computes: a
hand-written template when the reference computes a template's operator
(:mod:`builtin_ops`), otherwise a candidate generated from the reference through
TorchInductor's Triton code generation (:mod:`forgekernel.generate`). The generated
candidate is a structure like any template: its knobs (block sizes and warps of the launch
runtime, tile sizes of forge's matrix-product and convolution kernels) are what the search
tunes, per task, on forge's own timings. Lowering takes seconds, so results are kept per
task for the life of the process.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from forgekernel import templates
from forgekernel.agents import builtin_ops
from forgekernel.agents.base import AgentError
from forgekernel.records import TaskSpec

GENERATED = "generated"

KNOB_SPACES: dict[str, tuple[int, ...]] = {
    "RT_PW_BLOCK": (256, 512, 1024, 2048, 4096),
    "RT_PW_WARPS": (1, 2, 4, 8, 16),
    "RT_TILE_X": (16, 32, 64, 128),
    "RT_TILE_Y": (8, 16, 32, 64),
    "RT_TILE_WARPS": (2, 4, 8),
    "RT_RED_RBLOCK": (256, 512, 1024, 2048, 4096, 8192),
    "RT_RED_TILE": (1024, 2048, 4096, 8192, 16384),
    "RT_RED_OUTER_XBLOCK": (8, 16, 32, 64, 128),
    "RT_RED_OUTER_RBLOCK": (4, 8, 16, 32, 64),
    "RT_RED_WARPS": (2, 4, 8, 16),
    "GEMM_BLOCK_M": (32, 64, 128, 256),
    "GEMM_BLOCK_N": (32, 64, 128, 256),
    "GEMM_BLOCK_K": (16, 32, 64, 128),
    "GEMM_GROUP_M": (1, 4, 8, 16),
    "GEMM_NUM_WARPS": (2, 4, 8),
    "GEMM_NUM_STAGES": (2, 3, 4, 5),
    "CONV_BLOCK_M": (32, 64, 128, 256),
    "CONV_BLOCK_N": (16, 32, 64, 128),
    "CONV_BLOCK_K": (16, 32, 64),
    "CONV_NUM_WARPS": (2, 4, 8),
    "CONV_NUM_STAGES": (1, 2, 3, 4),
    "CONV_COPY_NHWC": (0, 1),
    "CONV_LIBRARY": (0, 1, 2),
    "RT_FUSE_TAIL": (0, 1),
    "CONV_DIRECT_BLOCK": (256, 512, 1024, 2048, 4096),
    "CONV_DIRECT_WARPS": (2, 4, 8),
    "RNN_BLOCK_B": (16, 32, 64),
    "RNN_BLOCK_H": (16, 32, 64, 128),
    "RNN_BLOCK_K": (16, 32, 64, 128),
    "RNN_NUM_WARPS": (2, 4, 8),
    "RNN_SEQ_WARPS": (4, 8, 16),
}
"""Values worth searching for each knob a generated candidate may carry."""
KNOB_GROUPS: dict[str, tuple[tuple[str, ...], ...]] = {
    "pointwise": (("RT_PW_BLOCK", "RT_PW_WARPS"),),
    "tiled": (("RT_TILE_X", "RT_TILE_Y"), ("RT_TILE_WARPS",)),
    "reduction": (("RT_RED_RBLOCK", "RT_RED_TILE"), ("RT_RED_OUTER_XBLOCK", "RT_RED_OUTER_RBLOCK"),
                  ("RT_RED_WARPS",)),
    "gemm": (("GEMM_BLOCK_M", "GEMM_BLOCK_N"), ("GEMM_BLOCK_K", "GEMM_NUM_STAGES"),
             ("GEMM_NUM_WARPS",), ("GEMM_GROUP_M",)),
    "conv": (("CONV_LIBRARY",), ("CONV_BLOCK_M", "CONV_BLOCK_N"), ("CONV_BLOCK_K", "CONV_NUM_STAGES"),
             ("CONV_NUM_WARPS",), ("CONV_COPY_NHWC",), ("RT_FUSE_TAIL",)),
    "conv_direct": (("CONV_LIBRARY",), ("CONV_DIRECT_BLOCK", "CONV_DIRECT_WARPS"), ("RT_FUSE_TAIL",)),
    "rnn": (("RNN_BLOCK_B", "RNN_BLOCK_H"), ("RNN_BLOCK_K", "RNN_NUM_WARPS"), ("RNN_SEQ_WARPS",)),
}
"""Knobs swept together in one tuning row, by the kind of kernel they shape."""


@dataclass(frozen=True)
class Generated:
    """A generated candidate for a task (knobs at their defaults) and what it contains."""

    text: str
    kernels: tuple[str, ...]
    library: tuple[str, ...]
    kinds: tuple[str, ...]
    """Kernel kinds present: pointwise, tiled, reduction, gemm, conv, conv_direct, rnn (their knobs
    matter)."""
    template: templates.Template
    graph: str
    launches: int
    """Kernel launches per call: Inductor's kernels, forge's library kernels, eager fallbacks."""
    conv_library: bool = False
    """Whether CONV_LIBRARY may be 1 (:func:`conv_library`); it is then the default."""


_CACHE: dict[str, Generated | AgentError] = {}
_MATCHES: dict[str, builtin_ops.OpMatch | AgentError] = {}


def _key(task: TaskSpec) -> str:
    root = Path(task.root)
    text = (root / "reference.py").read_bytes() + (root / "task.toml").read_bytes()
    return f"{root}:{','.join(task.allowed_languages())}:{hashlib.sha256(text).hexdigest()[:16]}"


def resolve(task: TaskSpec, source: str) -> builtin_ops.OpMatch:
    """The structure for ``task`` (a template's operator, else ``generated``), or AgentError."""
    key = _key(task)
    if key not in _MATCHES:
        try:
            _MATCHES[key] = _resolve(task, source)
        except AgentError as exc:
            _MATCHES[key] = exc
    found = _MATCHES[key]
    if isinstance(found, AgentError):
        raise found
    return found


def _resolve(task: TaskSpec, source: str) -> builtin_ops.OpMatch:
    from forgekernel.generate import classify, examples

    kernelbench = task.format == "kernelbench"
    params = () if kernelbench else builtin_ops.reference_params(source)
    if params is None:
        raise builtin_ops.unsupported(task, "reference.py's run() takes *args or keyword-only "
                                      "arguments, so its inputs cannot be bound by position")
    try:
        fn, first, _ = examples.flat_example(task, seed=0)
        graph = classify.trace(fn, first)
        if not kernelbench:
            second = examples.flat_example(task, seed=1)[1]
            found = builtin_ops.semantic_match(fn, [first, second], params,
                                               list(graph.small_constants))
            if found is not None:
                return _in_language(task, builtin_ops.template_match(*found, params, graph.describe(),
                                                                     task.allowed_languages()))
    except AgentError:
        raise
    except Exception as exc:  # the user's reference: any failure is one line
        raise builtin_ops.unsupported(task, f"tracing the reference failed ({_one_line(exc)})") from None
    if graph.random:
        raise builtin_ops.unsupported(task, "the reference draws random numbers (dropout or "
                                      "similar in training mode), so no kernel can match it")
    _triton_only(task, "its operator is none the built-in agent has a structure in that language "
                 "for (it writes rmsnorm, layernorm and fused_add_rmsnorm in cuda, rmsnorm in cute-dsl)")
    gen = generate(task)
    return builtin_ops.OpMatch(GENERATED, params, {}, (gen.template,), call=params,
                               graph=graph.describe(), notes=gen.library, launches=gen.launches)


def preview(task: TaskSpec, source: str) -> builtin_ops.OpMatch:
    """The structure decision without lowering: a template's operator when the reference
    computes one, else ``generated`` with what the traced graph says (the lowering itself
    runs when the run starts). For ``forge new --dry-run``."""
    from forgekernel.generate import classify, examples

    kernelbench = task.format == "kernelbench"
    params = () if kernelbench else (builtin_ops.reference_params(source) or ())
    try:
        fn, first, _ = examples.flat_example(task, seed=0, thorough=False)
        graph = classify.trace(fn, first)
    except Exception as exc:  # the user's reference: one line
        raise builtin_ops.unsupported(task, f"tracing the reference failed ({_one_line(exc)})") from None
    if not kernelbench and params:
        second = examples.flat_example(task, seed=1, thorough=False)[1]
        found = builtin_ops.semantic_match(fn, [first, second], params, list(graph.small_constants))
        if found is not None:
            return _in_language(task, builtin_ops.template_match(*found, params, graph.describe(),
                                                                 task.allowed_languages()))
    _triton_only(task, "its operator is none the built-in agent has a structure in that language "
                 "for (it writes rmsnorm, layernorm and fused_add_rmsnorm in cuda, rmsnorm in cute-dsl)")
    return builtin_ops.OpMatch(GENERATED, params, {}, (), graph=graph.describe())


def _triton_only(task: TaskSpec, why: str) -> None:
    if "triton" not in task.allowed_languages():
        raise builtin_ops.unsupported(task, f"the task's language is {task.language} and {why}")


def _in_language(task: TaskSpec, match: builtin_ops.OpMatch) -> builtin_ops.OpMatch:
    """``match``, unless no template writes its operator in the task's language."""
    if not match.templates:
        have = ", ".join(templates.languages(match.op)) or "none"
        raise builtin_ops.unsupported(task, f"it writes {match.op} in {have}, and the task's "
                                      f"language is {' or '.join(task.allowed_languages())}")
    return match


def generate(task: TaskSpec) -> Generated:
    """The generated candidate for ``task`` (cached), or AgentError saying why there is none."""
    key = _key(task)
    if key not in _CACHE:
        try:
            _CACHE[key] = _generate(task)
        except AgentError as exc:
            _CACHE[key] = exc
    found = _CACHE[key]
    if isinstance(found, AgentError):
        raise found
    return found


def _generate(task: TaskSpec) -> Generated:
    from forgekernel.generate import assemble, classify, examples, variants
    from forgekernel.generate.inductor import (
        STATIC_MODULE,
        SYMBOLIC_FLOATS,
        LoweringError,
        lower_sizes,
    )

    try:
        fn, args, names = examples.flat_example(task, seed=0)
        graph = classify.trace(fn, args)
        dynamo = {"fixed": STATIC_MODULE, "floats": SYMBOLIC_FLOATS}.get(examples.module_variation(task) or "")
        lowered, small = lower_sizes(fn, args, names=names, dynamo=dynamo)
        more = variants.more(task, lowered, small, dynamo=dynamo)
        asm = assemble.render(lowered, _entry(task), small=small, more=more,
                              title=f"Generated for task {task.name}: {graph.describe()}.")
    except LoweringError as exc:
        raise builtin_ops.unsupported(task, str(exc)) from None
    except Exception as exc:  # Inductor on the user's reference: one line, never a traceback
        raise builtin_ops.unsupported(task, f"lowering failed ({_one_line(exc)})") from None
    tf32 = int(task.judge.tf32)
    cudnn = conv_library(task, asm.text, asm.kernels)
    text = templates.with_values(asm.text, {"GEMM_ALLOW_TF32": tf32, "CONV_ALLOW_TF32": tf32,
                                            **({"CONV_LIBRARY": 1} if cudnn else {})})
    body = text[text.index("def _inductor_call("):text.index("def _inductor_args(")]
    _no_eager_compute(task, asm.fallbacks, body)
    launches = body.count(".run(") + body.count("extern_kernels.") + len(asm.fallbacks)
    library = asm.library + ((LIBRARY_CONV_NOTE,) if cudnn else ())
    return Generated(text, asm.kernels, library, _kinds(text, graph.conv_groups),
                     _template(text), graph.describe(), max(launches, 1), cudnn)


LIBRARY_CONV_NOTE = ("convolution by PyTorch's library (cuDNN on a GPU), as the task's [policy] "
                     "library_ops allows (CONV_LIBRARY = 1; 0 runs forge's Triton convolution)")


def conv_library(task: TaskSpec, text: str, kernels: tuple[str, ...]) -> bool:
    """Whether the candidate may leave its convolutions to PyTorch's library: the task's
    ``library_ops`` lists ``convolution`` and the candidate has Triton kernels of its own
    besides (a convolution's tail, say), so that what it runs is not the library alone."""
    return "convolution" in task.policy.library_ops and "CONV_LIBRARY" in text and bool(kernels)


def _no_eager_compute(task: TaskSpec, fallbacks: tuple[str, ...], body: str) -> None:
    """Refuse, with the op's name, a candidate whose whole compute Inductor left to ATen (its
    call launches no Triton kernel and calls no library kernel of forge's): the judge would
    find none of its kernels ran, so judging it would only spend a verdict (an FFT has no
    Triton lowering, say)."""
    if fallbacks and ".run(" not in body and "extern_kernels." not in body:
        raise builtin_ops.unsupported(task, f"TorchInductor leaves its compute to ATen (aten.{sorted(fallbacks)[0]}) "
                                      "and forge has no Triton kernel of its own for it")


def _entry(task: TaskSpec) -> Any:
    from forgekernel.generate import assemble, modelnew

    if task.format == "kernelbench":
        init, imports = modelnew.model_source(task)
        return assemble.Entry(init_source=init, imports=imports)
    params = builtin_ops.reference_params((Path(task.root) / "reference.py").read_text()) or ()
    return assemble.Entry(params=params)


def _kinds(text: str, conv_groups: tuple[tuple[int, int], ...] = ()) -> tuple[str, ...]:
    launches = re.findall(r"= _RtLaunch\(\w+, '(\w+)', (\{.*?\}), '\w+'(?:, rnumel=\d+)?\)", text)
    found = []
    if any(kind == "pointwise" and "YBLOCK" not in sig for kind, sig in launches):
        found.append("pointwise")
    if any(kind == "pointwise" and "YBLOCK" in sig for kind, sig in launches):
        found.append("tiled")
    if any(kind in ("reduction", "persistent_reduction") for kind, _ in launches):
        found.append("reduction")
    found += [k for k, mark in (("gemm", "GEMM_BLOCK_M"), ("conv", "CONV_BLOCK_M"), ("rnn", "RNN_BLOCK_B"))
              if mark in text]
    if "conv" in found and conv_groups:  # which kernels of conv.py run
        from forgekernel.generate.classify import thin_group

        thin = [thin_group(cin, cout) for cin, cout in conv_groups]
        at = found.index("conv")
        found[at:at + 1] = (["conv"] if not all(thin) else []) + (["conv_direct"] if any(thin) else [])
    return tuple(found)


def _template(text: str) -> templates.Template:
    """The generated structure as a template whose knobs are those in the candidate's header."""
    defaults = templates.header_values(text)
    knobs = tuple(templates.Knob(name, int(value), tuple(sorted({*KNOB_SPACES.get(name, ()),
                                                                  int(value)})))
                  for name, value in defaults.items())
    return templates.Template(
        GENERATED, "any", "TorchInductor's fused Triton kernels for the reference, launched by "
        "forge's runtime; forge's Triton kernels for matrix products and convolutions",
        (GENERATED,), knobs, "every fusable op in one kernel per fusion group; no eager launches")


def render(task: TaskSpec, knobs: dict[str, Any]) -> str:
    """The generated candidate with ``knobs`` written into its header."""
    gen = generate(task)
    return templates.with_values(gen.text, knobs)


def tuning_groups(gen: Generated) -> list[tuple[str, ...]]:
    """The knob groups worth a tuning row for this candidate, in order. Where the convolution
    may be the library's, whose convolution runs (the library's, in the reference's layout or
    channels-last, or forge's own) is tried first, before any kernel's launch shape: it can
    move the time by several times where a block size moves it by per cent (KernelBench L2 78 on
    an H200, benchmarks/results/kernelbench_h200_2026-12-07_sample30_partial/)."""
    have = {k.name for k in gen.template.knobs}
    if "_rt_conv_tail(" not in gen.text:  # no tail fused into a convolution: nothing to move
        have.discard("RT_FUSE_TAIL")
    if not gen.conv_library:  # the task leaves no convolution to the library
        have.discard("CONV_LIBRARY")
    groups = [g for kind in gen.kinds for g in KNOB_GROUPS.get(kind, ()) if set(g) <= have]
    groups.sort(key=lambda g: g != ("CONV_LIBRARY",))  # stable: the rest keep their order
    return list(dict.fromkeys(groups))  # once, though both convolution kernels run


def _one_line(exc: BaseException) -> str:
    for line in str(exc).strip().splitlines():
        if line.strip():
            return f"{type(exc).__name__}: {line.strip()[:200]}"
    return type(exc).__name__
