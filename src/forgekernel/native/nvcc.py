"""Compile a candidate's CUDA C++ for sm_90a without a GPU: inside the sandbox, cached.

``nvcc -arch=sm_90a -cubin -Xptxas -v`` runs in the same sandbox as candidate code (no
credentials, no network, no home directories): the source is the candidate's, and a
preprocessor ``#include`` of a secret file would otherwise echo it into the compiler's
errors and from there into the feedback. A source that includes torch's headers (a
``load_inline`` candidate) gets the include paths and defines torch's own extension build
uses. Results (never binaries) are cached under ``$XDG_CACHE_HOME/forgekernel/nvcc`` by a
hash of the source, the flags, the target and the compiler version: torch's headers make one
compile take half a minute on two cores.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sysconfig
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from forgekernel.errors import ForgeError
from forgekernel.native.sources import CudaSource

TORCH_DEFINES = ("-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
                 "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__",
                 "--expt-relaxed-constexpr", "-DTORCH_API_INCLUDE_EXTENSION_H",
                 "-DTORCH_EXTENSION_NAME=forge_static_check")
"""What torch's extension build adds to nvcc's command line (cpp_extension's common flags)."""
MAX_ERRORS = 5
SUMMARY_KERNELS = 3
CACHE_VERSION = 2


class NativeError(ForgeError, RuntimeError):
    """CUDA sources cannot be compiled here (no nvcc, no sandbox)."""


@dataclass(frozen=True)
class KernelFacts:
    """One compiled ``__global__`` function, from ``ptxas -v``."""

    name: str
    regs: int | None = None
    smem_bytes: int | None = None
    spill_stores: int | None = None
    spill_loads: int | None = None
    stack_bytes: int | None = None
    uses_wgmma: bool | None = None
    uses_tma: bool | None = None


@dataclass(frozen=True)
class CudaBuild:
    """What compiling one source gave: its kernels, or the compiler's first errors."""

    source: str
    """The candidate file (and line, for an embedded source) it came from."""
    target: str
    ok: bool
    kernels: tuple[KernelFacts, ...] = ()
    errors: tuple[str, ...] = ()
    """The first error lines, each naming the candidate's own file and line where it can."""
    tool: str = ""
    seconds: float = 0.0
    cached: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)

    def first_error(self) -> str:
        return self.errors[0] if self.errors else "nvcc failed without an error line"

    def summary(self) -> str:
        if not self.ok:
            return f"{self.source}: {self.first_error()}"
        parts = [f"{k.name}: {k.regs} regs, {k.smem_bytes} B smem, {k.spill_stores} B spilled"
                 for k in self.kernels[:SUMMARY_KERNELS]]
        if len(self.kernels) > SUMMARY_KERNELS:
            regs = [k.regs for k in self.kernels if k.regs is not None]
            spills = sum(k.spill_stores or 0 for k in self.kernels)
            parts.append(f"{len(self.kernels) - SUMMARY_KERNELS} more (at most {max(regs, default=0)} "
                         f"regs, {spills} B spilled in all)")
        return f"{self.source}: " + ("; ".join(parts) or "no __global__ function compiled")

    def to_json(self) -> dict:
        return asdict(self)

    @staticmethod
    def from_json(raw: dict) -> CudaBuild:
        kernels = tuple(KernelFacts(**k) for k in raw.get("kernels", ()))
        return CudaBuild(**{**raw, "kernels": kernels, "errors": tuple(raw.get("errors", ())),
                            "notes": tuple(raw.get("notes", ()))})


def find_nvcc() -> str:
    found = shutil.which("nvcc")
    if found is None:
        raise NativeError("nvcc is not on PATH: CUDA C++ candidates need the CUDA toolkit to compile")
    return found


def nvcc_version(nvcc: str) -> str:
    proc = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60, check=False)
    lines = [ln.strip() for ln in proc.stdout.splitlines() if ln.strip()]
    return lines[-1] if lines else "nvcc (unknown version)"


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "forgekernel" / "nvcc"


def flags_for(src: CudaSource, arch: int) -> list[str]:
    out = [f"-arch=sm_{arch}a", "-cubin", "-Xptxas", "-v", "-std=c++17", "-lineinfo"]
    if src.uses_torch():
        import torch.utils.cpp_extension as ext

        out += [f"-I{p}" for p in (*ext.include_paths(), sysconfig.get_paths()["include"])]
        out += TORCH_DEFINES
    return out + list(src.flags)


def compile_cuda(src: CudaSource, *, arch: int = 90, timeout_s: float = 600,
                 cache: Path | None = None, inside: bool = False) -> CudaBuild:
    """Compile ``src`` for sm_<arch>a in the sandbox (cached by content); never raises for a
    compile error (that is ``ok=False`` with the errors), only when it cannot compile at all."""
    nvcc = find_nvcc()
    tool = nvcc_version(nvcc)
    flags = flags_for(src, arch)
    where = f"{src.origin}" + (f" (line {src.first_line})" if src.origin.endswith(".py") else "")
    key = hashlib.sha256(json.dumps([CACHE_VERSION, src.text, flags, tool, arch]).encode()).hexdigest()
    path = (cache or cache_root()) / f"{key}.json"
    if path.is_file():
        try:
            return CudaBuild.from_json({**json.loads(path.read_text()), "source": where, "cached": True})
        except (ValueError, TypeError):
            path.unlink(missing_ok=True)
    start = time.monotonic()
    code, output, sass = _run_sandboxed(nvcc, src, flags, timeout_s, inside)
    seconds = round(time.monotonic() - start, 2)
    target = f"sm_{arch}a"
    if code == 0:
        build = CudaBuild(where, target, True, kernels=_kernels(output, sass), tool=tool,
                          seconds=seconds)
    else:
        build = CudaBuild(where, target, False, errors=tuple(parse_errors(output, src)) or
                          (last_line(output),), tool=tool, seconds=seconds)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(build.to_json()))
    tmp.replace(path)
    return build


def contained(argv: list[str], *, scratch: Path, readonly: tuple[Path, ...], cwd: Path,
              timeout_s: float, what: str, inside: bool = False) -> tuple[int | None, str, str]:
    """Run ``argv`` (a compile of candidate code) in a sandbox of its own, or directly when
    this process is already inside one (``inside``: a sandboxed worker cannot nest another).
    Returns (exit code, None on a timeout; stdout; stderr)."""
    from forgekernel import sandbox

    if inside:
        popen = {"args": argv, "cwd": str(cwd)}
        launch = None
    else:
        mech = sandbox.detect()
        if mech is None:
            raise NativeError(f"no sandbox on this machine ({sandbox.probe().reason}): a "
                              f"candidate's {what} runs only inside one")
        spec = sandbox.SandboxSpec(scratch=scratch, readonly=readonly,
                                   env=sandbox.filter_env(os.environ), cwd=cwd)
        launch = sandbox.command(mech, spec, argv)
        popen = launch.popen_kwargs()
    proc = subprocess.Popen(**popen, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        sandbox.kill_tree(proc)
        proc.wait()
        return None, "", ""
    if launch is None:
        return proc.returncode, out or "", err or ""
    code, signal = launch.status(proc.returncode)
    return (code if code is not None else 128 + (signal or 0)), out or "", err or ""


def _run_sandboxed(nvcc: str, src: CudaSource, flags: list[str], timeout_s: float,
                   inside: bool = False) -> tuple[int, str, dict[str, str]]:
    """nvcc's exit code and output, and the SASS of each function of the cubin it wrote."""
    with tempfile.TemporaryDirectory(prefix="fk-nvcc-") as tmp:
        scratch = Path(tmp)
        work = scratch / "src"
        work.mkdir()
        (work / src.name).write_text(src.text)
        seen = tuple(Path(f[2:]) for f in flags if f.startswith("-I") and Path(f[2:]).is_dir())
        argv = [nvcc, *flags, "-o", str(work / "out.cubin"), src.name]
        code, out, err = contained(argv, scratch=scratch, readonly=seen, cwd=work,
                                   timeout_s=timeout_s, what="CUDA source", inside=inside)
        if code is None:
            return 124, f"error: nvcc did not finish within {timeout_s:.0f} s", {}
        cubin = work / "out.cubin"
        sass = split_sass(cuobjdump(["-sass", str(cubin)])) if code == 0 and cubin.is_file() else {}
        return code, out + err, sass


_NVCC_ERR = re.compile(r"^(?P<file>[^\s:()]+)\((?P<line>\d+)\): (?P<kind>(?:catastrophic )?error)[^:]*: (?P<msg>.*)$")
_GCC_ERR = re.compile(r"^(?P<file>[^\s:()]+):(?P<line>\d+):(?:\d+:)? (?P<kind>(?:fatal )?error): (?P<msg>.*)$")
_TOOL_ERR = re.compile(r"^(?:ptxas|nvlink|nvcc) (?:fatal|error)\s*:\s*(?P<msg>.*)$")


def parse_errors(output: str, src: CudaSource) -> list[str]:
    """The compiler's first errors, the candidate's own file and line named where the error
    is in its source (errors inside a header keep the header's name)."""
    out: list[str] = []
    for line in output.splitlines():
        line = line.strip()
        m = _NVCC_ERR.match(line) or _GCC_ERR.match(line)
        if m:
            name, num = Path(m.group("file")).name, int(m.group("line"))
            if name == src.name:
                where = f"{src.origin} line {src.origin_line(num)}"
                text = src.text.splitlines()[num - 1].strip() if num <= len(src.text.splitlines()) else ""
                msg = f"{where}: error: {m.group('msg')}" + (f"  [{text[:120]}]" if text else "")
            else:
                msg = f"{name} line {num}: error: {m.group('msg')}"
        elif t := _TOOL_ERR.match(line):
            msg = f"{line.split()[0]}: error: {t.group('msg')}"
        else:
            continue
        if msg not in out:
            out.append(msg[:400])
        if len(out) >= MAX_ERRORS:
            break
    return out


_FUNC = re.compile(r"(?:Compiling entry function|Function properties for) '?([\w$.]+)'?")
_SPILL = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")


def parse_ptxas_verbose(text: str) -> dict[str, dict[str, int]]:
    """``ptxas -v`` output -> {function: {regs, smem_bytes, spill_stores, spill_loads, stack}}."""
    out: dict[str, dict[str, int]] = {}
    current = None
    for line in text.splitlines():
        m = _FUNC.search(line)
        if m:
            current = m.group(1)
            out.setdefault(current, {})
            continue
        if current is None:
            continue
        if m := _SPILL.search(line):
            out[current].update(stack=int(m.group(1)), spill_stores=int(m.group(2)),
                                spill_loads=int(m.group(3)))
        if m := _USED.search(line):
            out[current]["regs"] = int(m.group(1))
            s = _SMEM.search(line)
            out[current]["smem_bytes"] = int(s.group(1)) if s else 0
    return out


def demangle(names: list[str]) -> dict[str, str]:
    """Itanium-mangled names -> readable ones (``c++filt``; a name it cannot read stays)."""
    tool = shutil.which("c++filt") or shutil.which("cu++filt")
    if tool is None or not names:
        return {n: n for n in names}
    proc = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True,
                          timeout=60, check=False)
    readable = proc.stdout.splitlines()
    if proc.returncode != 0 or len(readable) != len(names):
        return {n: n for n in names}
    return {n: _short(r.removeprefix("void ")) for n, r in zip(names, readable, strict=True)}


def _short(name: str) -> str:
    """``k<float, 8>(float const*, int)`` -> ``k<float, 8>`` (the parameter list dropped)."""
    depth = 0
    for i, ch in enumerate(name):
        depth += ch == "<"
        depth -= ch == ">"
        if ch == "(" and depth == 0 and i:
            return name[:i]
    return name


def _kernels(output: str, sass: dict[str, str]) -> tuple[KernelFacts, ...]:
    facts = parse_ptxas_verbose(output)
    names = demangle(list(facts))
    return tuple(KernelFacts(names[n], f.get("regs"), f.get("smem_bytes"), f.get("spill_stores"),
                             f.get("spill_loads"), f.get("stack"),
                             uses_wgmma(sass[n]) if n in sass else None,
                             uses_tma(sass[n]) if n in sass else None)
                 for n, f in facts.items())


def split_sass(text: str) -> dict[str, str]:
    """``cuobjdump -sass`` -> {function: its SASS text}."""
    out: dict[str, str] = {}
    current = None
    for line in text.splitlines():
        m = re.match(r"\s*Function : ([\w$.]+)", line)
        if m:
            current = m.group(1)
            out[current] = ""
        elif current:
            out[current] += line + "\n"
    return out


def uses_wgmma(code: str) -> bool:
    return "wgmma.mma_async" in code or "HGMMA" in code


def uses_tma(code: str) -> bool:
    return "cp.async.bulk.tensor" in code or "UTMALDG" in code or "UTMASTG" in code


_RES_FUNC = re.compile(r"^\s*Function ([\w$.]+):\s*$")
_RES_FIELD = re.compile(r"([A-Z]+(?:\[\d+\])?):(\d+)")


def parse_resource_usage(text: str) -> dict[str, dict[str, int]]:
    """``cuobjdump --dump-resource-usage`` -> {function: {REG, SHARED, LOCAL, STACK, ...}}."""
    out: dict[str, dict[str, int]] = {}
    current = None
    for line in text.splitlines():
        if m := _RES_FUNC.match(line):
            current = m.group(1)
            out[current] = {}
        elif current and "REG:" in line:
            out[current] = {k: int(v) for k, v in _RES_FIELD.findall(line)}
    return out


def find_ptxas(arch: int = 90) -> str:
    """Triton's bundled ptxas for sm_<arch>, else the one on PATH."""
    try:
        from triton.backends.nvidia.compiler import get_ptxas

        return get_ptxas(arch).path
    except (ImportError, AttributeError, RuntimeError):
        found = shutil.which("ptxas")
        if found is None:
            raise NativeError("ptxas not found (neither Triton's bundled one nor on PATH)") from None
        return found


def find_cuobjdump() -> str:
    """Triton's bundled cuobjdump, else the one on PATH."""
    try:
        import triton

        path = triton.knobs.nvidia.cuobjdump.path
        if path:
            return path
    except (ImportError, AttributeError):
        pass
    found = shutil.which("cuobjdump")
    if found is None:
        raise NativeError("cuobjdump not found (neither Triton's bundled one nor on PATH)")
    return found


def cuobjdump(args: list[str]) -> str:
    """cuobjdump's output for ``args`` (on a cubin this process wrote; never candidate code)."""
    proc = subprocess.run([find_cuobjdump(), *args], capture_output=True, text=True, timeout=300,
                          check=False)
    if proc.returncode != 0:
        raise NativeError(f"cuobjdump failed: {last_line(proc.stderr)}")
    return proc.stdout + proc.stderr


def last_line(text: str) -> str:
    """The last non-blank line of a tool's output (300 characters at most)."""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "(no output)"


