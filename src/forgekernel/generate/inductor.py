"""Lower a reference through TorchInductor's Triton code generation, ahead of time.

:func:`lower` traces ``fn`` with ``torch.compile(dynamic=True, fullgraph=True)`` on small
example arguments and hands the graph to Inductor configured for Triton code (the
``cpu_backend = "triton"`` path, so no GPU is needed), with every size symbolic: the kernels
it writes take their sizes as arguments and serve any workload. Inductor's own wrapper
module is captured as text before Inductor would compile and load it, together with what
each argument of its ``call(args)`` is (an input tensor, or a size or stride of one). Nothing
of Inductor runs later: :mod:`forgekernel.generate.assemble` turns the text into a
standalone candidate.

The Triton compiler needs an active driver to hash its target even when only source is
written; a driver that only names the target (sm_90, cross-compiling) is made active for
the duration of the lowering and the previous one restored.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from forgekernel.errors import ForgeError
from forgekernel.generate import complexes, guards, rewrites
from forgekernel.generate.libops import library_ops, recurrent_ops
from forgekernel.generate.symbolic import TUPLE_ITEM

INDUCTOR_CONFIG = {
    "cpu_backend": "triton",
    "fx_graph_cache": False,
    "triton.persistent_reductions": False,  # the R block becomes a launch knob: any row length
    "triton.cooperative_reductions": False,  # plain 1-D/2-D grids only
    "combo_kernels": False,
    "triton.autotune_pointwise": False,
    "freezing": False,
    "online_softmax": False,  # plain max/sum reductions instead of online-softmax helpers
}
"""Inductor settings for kernels a standalone launcher can drive at any size."""


DYNAMO_CONFIG = {
    "force_parameter_static_shapes": False,  # a module's parameters change size with the workload
    "force_nn_module_property_static_shapes": False,
    "allow_unspec_int_on_nn_module": True,  # so do its int attributes (features, channels)
    "specialize_float": True,  # float constants (eps, scales) stay constants, not 0-d inputs
    "allow_rnn": True,  # nn.RNN/GRU/LSTM traced: rewrites.traced_functions makes them library ops
}
"""Dynamo settings so that nothing a workload changes is frozen into the generated code."""

STATIC_MODULE = {
    "allow_unspec_int_on_nn_module": False,
    "force_parameter_static_shapes": True,
    "force_nn_module_property_static_shapes": True,
}
"""Over DYNAMO_CONFIG for a module that is the same at every workload (``examples.module_variation``):
its int attributes and parameter shapes constants, only the inputs' sizes symbolic."""

SYMBOLIC_FLOATS = {"specialize_float": False}
"""Over DYNAMO_CONFIG for a module with a float attribute that differs between workloads
(``examples.module_variation``): floats become arguments, the candidate reads them from the
module at each call (where an op needs a plain float, Dynamo still keeps the constant)."""


class LoweringError(ForgeError, RuntimeError):
    """The reference could not be traced or lowered; the message is one line, ``detail`` the
    traceback of Inductor's own failure when there was one (for a bug report)."""

    detail: str = ""


@dataclass(frozen=True)
class ArgSource:
    """One argument of Inductor's ``call(args)``: ``kind`` tensor, size, stride, offset or value
    of the traced function's flat argument ``index`` (``dim`` for sizes and strides)."""

    kind: str
    index: int
    dim: int | None = None
    path: str = ""
    """``attr``: the module attribute (``conv.groups``) an int argument is read from."""
    as_tensor: bool = False
    """A Python number Dynamo passes as a 0-d tensor (a float under ``SYMBOLIC_FLOATS``)."""

    def expression(self, flat: str, model: str = "self") -> str:
        """Python text computing this argument from the list named ``flat`` (and, for module
        attributes, the module named ``model``)."""
        if self.kind == "attr":
            owner, _, attr = self.path.rpartition(".")
            base = f"{model}.get_submodule({owner!r})" if owner else model
            name, tag, item = attr.rpartition(TUPLE_ITEM)  # symbolic.varying_int_tuples' ints
            text = f"{base}.{name}[{item}]" if tag and item.isdigit() else f"{base}.{attr}"
            return f"torch.as_tensor({text})" if self.as_tensor else text
        base = f"{flat}[{self.index}]"
        if self.as_tensor:
            return f"torch.as_tensor({base})"
        if self.kind == "size":
            return f"{base}.size({self.dim})"
        if self.kind == "stride":
            return f"{base}.stride({self.dim})"
        if self.kind == "offset":
            return f"{base}.storage_offset()"
        return base


@dataclass(frozen=True)
class Lowered:
    """Inductor's wrapper module text and the meaning of each ``call(args)`` argument."""

    code: str
    args: tuple[ArgSource, ...]
    outputs: int
    """How many tensors the traced function returns (a single tensor counts 1)."""
    single: bool
    """True when the function returns one tensor rather than a tuple."""
    torch_version: str
    guards: guards.Guards = guards.Guards()
    """The sizes this code holds for (:mod:`forgekernel.generate.guards`)."""


class _CrossDriver:
    """A Triton driver that only names its target: code generation, never execution."""

    def __init__(self, arch: int, warp: int = 32) -> None:
        from triton.backends.compiler import GPUTarget

        self.target = GPUTarget("cuda", arch, warp)

    def get_current_target(self) -> Any:
        return self.target

    def is_active(self) -> bool:
        return True


@contextlib.contextmanager
def _codegen_only(arch: int, config: dict[str, Any] | None = None,
                  dynamo: dict[str, Any] | None = None, oblivious: bool = False) -> Iterator[list[str]]:
    """Inductor configured for standalone Triton code; yields the list the code lands in."""
    import torch
    import torch._inductor.config as icfg
    import torch.fx.experimental._config as fxcfg
    from torch._inductor import ir
    from torch._inductor.graph import GraphLowering
    from triton.runtime.driver import driver

    codes: list[str] = []
    # Inductor precompiles the module it made for a device this process lacks: expected, quiet
    quiet = logging.getLogger("torch._inductor.runtime.triton_heuristics")
    level = quiet.level
    quiet.setLevel(logging.CRITICAL)
    previous = dict(vars(driver))  # whatever this Triton version keeps (lazily made drivers)
    saved, scan_splits = GraphLowering.save_output_code, ir.Scan.__dict__["num_splits"]
    ir.Scan.num_splits = classmethod(_one_scan_split(scan_splits.__func__))
    driver.set_active(_CrossDriver(arch))
    GraphLowering.save_output_code = staticmethod(codes.append)
    torch._dynamo.reset()
    try:
        with icfg.patch({**INDUCTOR_CONFIG, "post_grad_custom_pre_pass": complexes.as_real, **(config or {})}), \
                fxcfg.patch(use_duck_shape=False, backed_size_oblivious=oblivious), torch._dynamo.config.patch({**DYNAMO_CONFIG, **(dynamo or {})}), torch.no_grad():
            yield codes
    finally:
        GraphLowering.save_output_code = saved
        ir.Scan.num_splits = scan_splits
        quiet.setLevel(level)
        vars(driver).clear()
        vars(driver).update(previous)
        torch._dynamo.reset()


def _one_scan_split(num_splits: Callable[..., Any]) -> Callable[..., Any]:
    """Inductor's scan split count, held at 1: a scan over a large flat range (the running
    count ``masked_scatter`` takes of its mask) would be a 'split_scan' kernel, which needs a
    workspace and a launch forge's launcher does not drive; one program per row scans it."""
    def one(cls: Any, *args: Any, **kwargs: Any) -> Any:
        hint, _ = num_splits(cls, *args, **kwargs)
        return hint, 1
    return one


LOWERING_LIMIT_S = 300.0
"""How long tracing and lowering one reference may take: with every size symbolic, Inductor's
index simplification can run for tens of minutes on some graphs (a 3-D transposed
convolution followed by a group norm, say); past this the agent says so instead."""


RETRY_CONFIG = {"triton.coalesce_tiling_analysis": False}
"""Inductor settings for a second lowering when Inductor itself failed on the first: its
memory-coalescing analysis (a tiling heuristic that does not apply to symbolic sizes, and
forge tunes the tiles itself) fails an assertion on some references under torch 2.11
(KernelBench L2 36, a transposed convolution with min and sum)."""


def lower(fn: Callable[..., Any], example: list[Any], *, arch: int = 90,
          names: tuple[str, ...] = (), config: dict[str, Any] | None = None,
          limit_s: float = LOWERING_LIMIT_S, dynamo: dict[str, Any] | None = None,
          oblivious: bool = False) -> Lowered:
    """Trace ``fn(*example)`` and capture Inductor's Triton code for it (sizes symbolic).

    ``names``: the dotted names of the leading arguments that are a module's parameters and
    buffers (dynamo may see them through the module rather than the argument list);
    ``config``: Inductor settings over :data:`INDUCTOR_CONFIG`; ``limit_s``: see
    :data:`LOWERING_LIMIT_S`; ``dynamo``: Dynamo settings over :data:`DYNAMO_CONFIG`
    (:data:`STATIC_MODULE`); ``oblivious``: every size symbolic from 0 up rather than from 2
    (Dynamo's default, under which Inductor's index arithmetic may assume a size is not 1,
    as torch.compile recompiles when one is: a lowering for the workloads where a size is
    0 or 1). When Inductor's own code generation fails, the lowering is tried once more with
    :data:`RETRY_CONFIG` (the first failure is the error if both do)."""
    start = time.monotonic()
    try:
        return _lower(fn, example, arch, names, config or {}, limit_s, dynamo, oblivious)
    except LoweringError as exc:
        retry = {**(config or {}), **RETRY_CONFIG}
        if not exc.detail or retry == (config or {}):
            raise
        first = exc
    try:
        return _lower(fn, example, arch, names, retry, max(1.0, limit_s - (time.monotonic() - start)), dynamo,
                      oblivious)
    except LoweringError:
        raise first from None


def lower_sizes(fn: Callable[..., Any], example: list[Any], **options: Any) -> tuple[Lowered, Lowered | None]:
    """:func:`lower` as Dynamo traces (sizes from 2 up), and again with ``oblivious`` (sizes
    from 0 up) for the calls whose sizes break the first's guards (a size of 1: hidden
    workloads put each axis at its minimum); the second is None where the first has no guard
    but 0/1 and 32-bit index ones (most references: one lowering, as before), or where the
    second fails, has no time left or is the same code (whose guards, the looser, the first
    then takes)."""
    start = time.monotonic()
    lowered = lower(fn, example, **options)
    left = options.pop("limit_s", LOWERING_LIMIT_S) - (time.monotonic() - start)
    if left < 10 or not any(not c.endswith(" <= 2147483647") for c in lowered.guards.conditions):
        return lowered, None  # no time left, or nothing but 0/1 and 32-bit index guards to break
    try:
        small = lower(fn, example, **options, limit_s=left, oblivious=True)
    except LoweringError:
        return lowered, None
    if same_code(small.code, lowered.code):
        return dataclasses.replace(lowered, guards=small.guards), None
    return lowered, small


def same_code(a: str, b: str) -> bool:
    """Whether two wrapper modules are the same code, comments aside (Inductor numbers each
    compilation and quotes the graph, strides and all, in comments)."""
    def strip(code: str) -> list[str]:
        return [line for line in code.splitlines() if not line.lstrip().startswith("#")]
    return strip(a) == strip(b)


def _lower(fn: Callable[..., Any], example: list[Any], arch: int, names: tuple[str, ...],
           config: dict[str, Any], limit_s: float, dynamo: dict[str, Any] | None = None,
           oblivious: bool = False) -> Lowered:
    import warnings

    import torch
    from torch._inductor.compile_fx import compile_fx
    from torch._inductor.decomposition import select_decomp_table

    sources: list[Any] = []
    failures: list[BaseException] = []
    envs: list[Any] = [None]

    def backend(gm: Any, inputs: list[Any]) -> Callable[..., Any]:
        sources[:] = [n.meta["grapharg"] for n in gm.graph.nodes if n.op == "placeholder"]
        try:
            decompositions = {**select_decomp_table(), **library_ops()}
            compile_fx(gm, inputs, decompositions=decompositions)  # only its code is kept
        except Exception as exc:  # the module load compiles for a device this process lacks
            if _restarts(exc):
                raise  # dynamo's own control flow: it traces again and calls back
            failures.append(exc)
        finally:
            envs[:] = [guards.shape_env()]  # read once Inductor has added its own guards
        return gm.forward  # the trace itself runs eagerly

    def traced(*flat: Any) -> Any:
        return fn(*flat)

    from torch.nn.attention import SDPBackend, sdpa_kernel

    # a warning in the reference (InstanceNorm's "num_features does not match", say) is
    # called after the graph instead of breaking it: fullgraph tracing would fail on it
    logging_calls = {*torch._dynamo.config.reorderable_logging_functions, warnings.warn}
    with _codegen_only(arch, config, dynamo, oblivious) as codes, warnings.catch_warnings(), sdpa_kernel([SDPBackend.MATH]), \
            torch._dynamo.config.patch(reorderable_logging_functions=logging_calls), rewrites.traced_functions(recurrent_ops()):
        warnings.simplefilter("ignore")  # attention as matrix products and a softmax: forge's kernels
        out = _compiled_once(torch.compile(traced, backend=backend, dynamic=True, fullgraph=True), example,
                             limit_s)
    if not codes:
        raise _no_code(failures)
    single = isinstance(out, torch.Tensor)
    count = 1 if single else len(out) if isinstance(out, (tuple, list)) else 0
    args = tuple(dataclasses.replace(_arg_source(g.source, names), as_tensor=bool(g.pass_arg_as_tensor))
                 for g in sources)
    held = guards.read(envs[0], lambda source: _arg_source(source, names))
    return Lowered(code=codes[-1], args=args, outputs=count,
                   single=single, torch_version=torch.__version__, guards=held)


def _no_code(failures: list[BaseException]) -> LoweringError:
    why = f": {_first_line(failures[-1])}" if failures else " (nothing to compute?)"
    error = LoweringError(f"TorchInductor produced no code for the reference{why}")
    if failures:
        import traceback

        error.detail = "".join(traceback.format_exception(failures[-1]))
    return error


def _compiled_once(compiled: Callable[..., Any], example: list[Any], limit_s: float) -> Any:
    """Run the compiled reference once on ``example`` (tracing and lowering it), within
    ``limit_s``; any failure is one LoweringError line for the plan."""
    from forgekernel.task import _deadline, _ImportDeadline

    start = time.monotonic()
    try:
        with _deadline(limit_s):
            out = compiled(*example)
    except _ImportDeadline:
        raise LoweringError(_past_limit(limit_s)) from None
    except Exception as exc:  # graph breaks, unsupported ops: one line for the plan
        if time.monotonic() - start >= limit_s:  # the deadline surfaced as another error
            raise LoweringError(_past_limit(limit_s)) from None
        raise LoweringError(f"TorchInductor could not trace the reference: {_first_line(exc)}") from None
    if time.monotonic() - start >= limit_s:  # the deadline fired inside Inductor's own handlers
        raise LoweringError(_past_limit(limit_s))
    return out


def _past_limit(limit_s: float) -> str:
    return (f"TorchInductor did not finish lowering the reference within {limit_s:g} s "
            "(its arithmetic on the symbolic sizes grows too large)")


def _restarts(exc: BaseException) -> bool:
    from torch._dynamo import exc as dynamo_exc

    return isinstance(exc, getattr(dynamo_exc, "RestartAnalysis", ()))


def _arg_source(source: Any, names: tuple[str, ...] = ()) -> ArgSource:
    """Map a dynamo placeholder source onto the traced function's flat arguments."""
    prop = getattr(source, "prop", None)
    if prop is not None:
        kind = {"SIZE": "size", "STRIDE": "stride", "STORAGE_OFFSET": "offset"}[prop.name]
        return ArgSource(kind, _flat_index(source.base, names), getattr(source, "idx", None))
    member = getattr(source, "member", None)
    if isinstance(member, str) and not member.startswith("_"):
        owner = _module_path(source.base)
        return ArgSource("attr", -1, path=f"{owner}.{member}" if owner else member)
    listed = getattr(getattr(source, "base", None), "member", None)  # self.res[l]: an int of a list
    if isinstance(listed, str) and not listed.startswith("_") and type(getattr(source, "index", None)) is int:
        owner = _module_path(source.base.base)
        path = f"{listed}{TUPLE_ITEM}{source.index}"
        return ArgSource("attr", -1, path=f"{owner}.{path}" if owner else path)
    return ArgSource("value", _flat_index(source, names))


def _flat_index(source: Any, names: tuple[str, ...] = ()) -> int:
    index = getattr(source, "index", None)
    if isinstance(index, int) and getattr(getattr(source, "base", None), "local_name", None) == "flat":
        return index
    dotted = _module_path(source)
    if dotted is not None and dotted in names:
        return names.index(dotted)
    raise LoweringError(f"TorchInductor asked for an argument forge cannot map: {source}")


def _module_path(source: Any) -> str | None:
    """``conv.weight`` for a source that walks ``_modules['conv']._parameters['weight']``."""
    keys: list[str] = []
    node = source
    while node is not None:
        base = getattr(node, "base", None)
        member = getattr(base, "member", None)
        index = getattr(node, "index", None)
        if isinstance(index, str) and member in ("_modules", "_parameters", "_buffers"):
            keys.append(index)
        node = base
    return ".".join(reversed(keys)) if keys else None


def _first_line(exc: BaseException) -> str:
    for line in str(exc).strip().splitlines():
        if line.strip():
            return f"{type(exc).__name__}: {line.strip()[:300]}"
    return type(exc).__name__
