"""Compile a CuTe DSL candidate for sm_90a without a GPU, in the sandbox, and read its cubins.

The candidate's own ``cute.compile`` does the work, driven by
:mod:`forgekernel.native.cute_worker` in the same sandbox as any candidate code; the cubins
and PTX it leaves behind are read here: registers, shared memory and local memory from
``cuobjdump --dump-resource-usage``, spills from ``ptxas -v`` on the PTX. The DSL allocates
shared memory at launch, so the figure from the cubin is what the kernel declares
statically (the DSL's dynamic shared memory is not in it).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from pathlib import Path

from forgekernel.native import nvcc
from forgekernel.native.nvcc import CudaBuild, KernelFacts, NativeError

WORKER = "forgekernel.native.cute_worker"


def available() -> bool:
    import importlib.util

    return importlib.util.find_spec("cutlass") is not None


def compile_cute(task_dir: Path, kernel: Path, *, timeout_s: float = 300,
                 inside: bool = False) -> CudaBuild:
    """Compile the CuTe DSL candidate ``kernel`` (its kernel.py) for ``task_dir`` at sm_90a
    (``inside``: this process is already in a sandbox, see :func:`nvcc.contained`)."""
    from forgekernel import sandbox

    if not available():
        raise NativeError("the CuTe DSL (nvidia-cutlass-dsl) is not installed: pip install "
                          "'forgekernel[cute]'")
    kernel, task_dir = Path(kernel).resolve(), Path(task_dir).resolve()
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="fk-cute-") as tmp:
        scratch = Path(tmp)
        dump, reply_path = scratch / "dump", scratch / "reply.json"
        argv = sandbox.python_argv(WORKER, [str(task_dir), str(kernel), str(dump), str(reply_path)])
        code, _, err = nvcc.contained(argv, scratch=scratch, readonly=(*sandbox.python_paths(), task_dir,
                                                                        kernel.parent),
                                      cwd=scratch, timeout_s=timeout_s, what="CuTe DSL code",
                                      inside=inside)
        if code is None:
            return CudaBuild(kernel.name, "sm_90a", False,
                             errors=(f"the CuTe DSL compile did not finish within {timeout_s:.0f} s",))
        seconds = round(time.monotonic() - start, 2)
        reply = _reply(reply_path)
        tool = f"nvidia-cutlass-dsl {reply.get('version') or '?'}"
        cubins = sorted(dump.glob("*.cubin"))
        if not cubins:
            errors = tuple(reply.get("errors") or ()) or (nvcc.last_line(err) or "the DSL compiled nothing",)
            return CudaBuild(kernel.name, "sm_90a", False, errors=errors, tool=tool, seconds=seconds)
        kernels = tuple(k for cubin in cubins for k in _facts(cubin))
    return CudaBuild(kernel.name, "sm_90a", True, kernels=kernels, tool=tool, seconds=seconds)


def _facts(cubin: Path) -> list[KernelFacts]:
    usage = nvcc.parse_resource_usage(nvcc.cuobjdump(["--dump-resource-usage", str(cubin)]))
    ptx = cubin.with_suffix(".ptx")
    verbose: dict[str, dict[str, int]] = {}
    if ptx.is_file():
        proc = subprocess.run([nvcc.find_ptxas(90), "-v", "--gpu-name=sm_90a", str(ptx), "-o",
                               str(cubin.with_suffix(".v.cubin"))], capture_output=True, text=True,
                              timeout=300, check=False)
        verbose = nvcc.parse_ptxas_verbose(proc.stdout + proc.stderr)
    sass = nvcc.split_sass(nvcc.cuobjdump(["-sass", str(cubin)]))
    out = []
    for name, u in usage.items():
        v = verbose.get(name, {})
        code = sass.get(name, "")
        out.append(KernelFacts(name, u.get("REG", v.get("regs")), u.get("SHARED"), v.get("spill_stores"),
                               v.get("spill_loads"), u.get("LOCAL", v.get("stack")),
                               nvcc.uses_wgmma(code), nvcc.uses_tma(code)))
    return out


def _reply(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
