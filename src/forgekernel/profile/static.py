"""Compile-time report without a GPU: registers, shared memory, spills, wgmma and TMA use.

Triton candidates: the candidate's Python wrapper is run at each workload on ``meta`` tensors
with Triton in interpreter mode and every launch *captured, not executed* (so even the
largest workload costs nothing); each distinct launch (kernel, signature, constexprs,
options) is then compiled for ``sm_90a`` with ``triton.compile`` and a ``GPUTarget``. From the
compiled kernel: shared memory (metadata), registers and local memory (``cuobjdump
--dump-resource-usage`` on the cubin), spill stores/loads (``ptxas -v`` on the PTX, the same
ptxas Triton uses), wgmma (PTX ``wgmma.mma_async``, SASS ``HGMMA``) and TMA (PTX
``cp.async.bulk.tensor``, SASS ``UTMALDG``/``UTMASTG``). Triton ships ptxas and cuobjdump.

The Triton path flips ``triton.knobs.runtime.interpret`` and imports the candidate: call it
in a worker process (``forgekernel.profile.worker`` does), never in the CLI's process, and in
one started *without* ``TRITON_INTERPRET=1`` (Triton's own library functions such as
``tl.sum`` must be compiled-mode JIT functions; the interpreter is switched on only while
the candidate's launches are captured).

CUDA candidates (``*.cu`` files, or CUDA source strings handed to ``load_inline``): compiled
by :mod:`forgekernel.native.nvcc` (``nvcc -arch=sm_90a -cubin -Xptxas -v`` in the sandbox,
cached by content) and ``cuobjdump -sass``.
"""

from __future__ import annotations

import subprocess
import tempfile
import warnings
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from forgekernel.errors import ForgeError
from forgekernel.native import nvcc
from forgekernel.native.sources import CudaSource, cuda_sources, language_of
from forgekernel.records import TaskSpec, Workload

MAX_VARIANTS = 8
"""Distinct compiled launches reported at most (autotuners can produce many)."""


class StaticError(ForgeError, RuntimeError):
    """The compile-time report cannot be made (no compiler, the kernel does not compile)."""


class StaticKernel(BaseModel):
    """One compiled kernel variant."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    config: str = ""
    """The specialisation it was compiled for (constexprs, num_warps, workload)."""
    regs: int | None = None
    smem_bytes: int | None = None
    spill_stores: int | None = None
    spill_loads: int | None = None
    local_bytes: int | None = None
    uses_wgmma: bool | None = None
    uses_tma: bool | None = None


class StaticReport(BaseModel):
    """Compile-time facts of a candidate's kernels for one target."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    target: str
    tool: str
    kernels: tuple[StaticKernel, ...] = ()
    notes: tuple[str, ...] = ()

    def metrics(self) -> dict[str, int | bool]:
        """Profile metrics (see profile.METRICS): regs, smem_bytes, spills, uses_wgmma, uses_tma."""
        out: dict[str, int | bool] = {}
        for key, name, agg in (("regs", "regs", max), ("smem_bytes", "smem_bytes", max),
                               ("spill_stores", "spills", sum)):
            vals = [getattr(k, key) for k in self.kernels if getattr(k, key) is not None]
            if vals:
                out[name] = int(agg(vals))
        for key in ("uses_wgmma", "uses_tma"):
            vals = [getattr(k, key) for k in self.kernels if getattr(k, key) is not None]
            if vals:
                out[key] = any(vals)
        return out


# ------------------------------------------------------------------ text parsers

parse_ptxas_verbose = nvcc.parse_ptxas_verbose
split_sass = nvcc.split_sass
uses_wgmma = nvcc.uses_wgmma
uses_tma = nvcc.uses_tma


parse_resource_usage = nvcc.parse_resource_usage


# ------------------------------------------------------------------ entry


def static_report(task: TaskSpec, kernel: Path, *, workloads: tuple[Workload, ...] | None = None,
                  arch: int = 90, inside: bool = False) -> StaticReport:
    """Compile the candidate's kernels for sm_<arch> and report their resources (no GPU);
    ``inside``: this process is already in the sandbox (CUDA C++ and CuTe DSL compiles
    then run directly)."""
    kernel = Path(kernel)
    found = cuda_sources(kernel)
    if found:
        return cuda_static(found, arch=arch, inside=inside)
    from forgekernel.profile.subject import kernel_file

    if language_of(kernel) == "cute-dsl":
        return cute_static(task, kernel_file(kernel), inside=inside)

    return triton_static(task, kernel_file(kernel), workloads or task.workloads, arch=arch)


def cuda_static(sources: list[CudaSource] | list[Path], *, arch: int = 90,
                inside: bool = False) -> StaticReport:
    """Each CUDA source compiled in the sandbox (``forgekernel.native.nvcc``, cached); a
    compile error is a StaticError naming the candidate's line."""
    kernels: list[StaticKernel] = []
    notes: list[str] = []
    tool = ""
    for src in sources:
        if isinstance(src, Path):
            src = CudaSource(src.name, src.read_text(), src.name)
        try:
            build = nvcc.compile_cuda(src, arch=arch, inside=inside)
        except nvcc.NativeError as exc:
            raise StaticError(str(exc)) from None
        if not build.ok:
            raise StaticError(f"{src.origin} does not compile for sm_{arch}a: {build.first_error()}")
        tool = build.tool
        notes.append(f"{build.source}: compiled in {build.seconds:.1f} s" + (" (cached)" if build.cached else ""))
        kernels += [StaticKernel(name=k.name, config=build.source, regs=k.regs, smem_bytes=k.smem_bytes,
                                 spill_stores=k.spill_stores, spill_loads=k.spill_loads,
                                 local_bytes=k.stack_bytes, uses_wgmma=k.uses_wgmma, uses_tma=k.uses_tma)
                    for k in build.kernels]
    return StaticReport(target=f"sm_{arch}a", tool=f"nvcc ({tool})", kernels=tuple(kernels),
                        notes=tuple(notes))


def cute_static(task: TaskSpec, kernel: Path, inside: bool = False) -> StaticReport:
    """A CuTe DSL candidate compiled by its own ``cute.compile`` for sm_90a (in the sandbox)."""
    from forgekernel.native import cute

    try:
        build = cute.compile_cute(Path(task.root), kernel, inside=inside)
    except nvcc.NativeError as exc:
        raise StaticError(str(exc)) from None
    if not build.ok:
        raise StaticError(f"{kernel.name} does not compile for sm_90a: {build.first_error()}")
    kernels = tuple(StaticKernel(name=k.name, config="cute.compile", regs=k.regs, smem_bytes=k.smem_bytes,
                                 spill_stores=k.spill_stores, spill_loads=k.spill_loads,
                                 local_bytes=k.stack_bytes, uses_wgmma=k.uses_wgmma, uses_tma=k.uses_tma)
                    for k in build.kernels)
    return StaticReport(target="sm_90a", tool=build.tool, kernels=kernels,
                        notes=(f"compiled in {build.seconds:.1f} s; shared memory the DSL allocates at "
                               "launch is not in the cubin",))


def _run_tool(cmd: list[str]) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    if proc.returncode != 0:
        raise StaticError(f"{Path(cmd[0]).name} failed: {nvcc.last_line(proc.stderr)}")
    return proc.stdout + proc.stderr


def triton_static(task: TaskSpec, kernel: Path, workloads: tuple[Workload, ...], *,
                  arch: int = 90) -> StaticReport:
    """Capture launches at each workload (meta tensors), compile each distinct one for sm_<arch>."""
    from forgekernel.profile.triton_compile import capture_specs, compile_spec

    specs, notes = capture_specs(task, kernel, workloads)
    kernels = []
    for spec in specs[:MAX_VARIANTS]:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*FP_FUSION.*")
            compiled = compile_spec(spec, arch)
        kernels.append(_from_compiled(spec, compiled, arch))
    if len(specs) > MAX_VARIANTS:
        notes.append(f"{len(specs) - MAX_VARIANTS} more compiled variants not reported")
    import triton

    return StaticReport(target=f"sm_{arch}a", tool=f"triton {triton.__version__} triton.compile",
                        kernels=tuple(kernels), notes=tuple(notes))


def _from_compiled(spec: Any, compiled: Any, arch: int) -> StaticKernel:
    """Facts of one compiled Triton kernel (cubin resource usage, ptxas -v, PTX/SASS scan)."""
    name = compiled.metadata.name
    with tempfile.TemporaryDirectory(prefix="fk-static-") as tmp:
        cubin = Path(tmp) / "k.cubin"
        cubin.write_bytes(compiled.asm["cubin"])
        ptx = Path(tmp) / "k.ptx"
        ptx.write_text(compiled.asm["ptx"])
        res = parse_resource_usage(_run_tool([nvcc.find_cuobjdump(), "--dump-resource-usage", str(cubin)]))
        sass = split_sass(_run_tool([nvcc.find_cuobjdump(), "-sass", str(cubin)])).get(name, "")
        verbose = parse_ptxas_verbose(_run_tool([_ptxas(arch), "-v", f"--gpu-name=sm_{arch}a",
                                                 str(ptx), "-o", str(Path(tmp) / "v.cubin")]))
    usage = res.get(name, {})
    facts = verbose.get(name, {})
    code = compiled.asm["ptx"] + sass
    smem = int(compiled.metadata.shared) + usage.get("SHARED", 0)
    return StaticKernel(name=name, config=spec.describe(), regs=usage.get("REG", facts.get("regs")),
                        smem_bytes=smem, spill_stores=facts.get("spill_stores"),
                        spill_loads=facts.get("spill_loads"), local_bytes=usage.get("LOCAL"),
                        uses_wgmma=uses_wgmma(code), uses_tma=uses_tma(code))


def _ptxas(arch: int) -> str:
    return nvcc.find_ptxas(arch)
