"""CUDA C++ candidates without a GPU: their sources found, compiled for sm_90a in the sandbox
(cached), errors naming the candidate's line, and refused to run on the CPU interpreter."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from forgekernel import sandbox, templates
from forgekernel.agents import builtin_generated
from forgekernel.agents.base import AgentError
from forgekernel.delivery import make_runner
from forgekernel.judge.api import judge
from forgekernel.native import cute, nvcc, sources
from forgekernel.records import Status
from forgekernel.task import load_task

ROOT = Path(__file__).resolve().parents[1]
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None or sandbox.detect() is None,
                                reason="nvcc or a sandbox is missing")

SAXPY = '''"""A CUDA candidate the KernelBench way (the build itself is never run here)."""

import torch

CUDA_SRC = r"""
__global__ void saxpy_kernel(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


def run(x, weight):
    from torch.utils.cpp_extension import load_inline

    ext = load_inline(name="saxpy", cpp_sources="", cuda_sources=CUDA_SRC,
                      extra_cuda_cflags=["-O3", "-I/home/someone/secrets", "--use_fast_math"])
    return ext
'''


def _candidate(tmp_path: Path, text: str) -> Path:
    d = tmp_path / "cand"
    d.mkdir(exist_ok=True)
    (d / "kernel.py").write_text(text)
    return d


def test_embedded_source_found_with_its_line_and_safe_flags(tmp_path):
    (src,) = sources.cuda_sources(_candidate(tmp_path, SAXPY))
    assert src.origin == "kernel.py" and src.first_line == 5
    assert src.flags == ("-O3", "--use_fast_math")  # a path-bearing flag is dropped
    assert src.origin_line(3) == 7 and "a * x[i]" in SAXPY.splitlines()[src.origin_line(4) - 1]
    assert not src.uses_torch()


def test_language_is_read_from_what_the_candidate_holds(tmp_path):
    assert sources.language_of(_candidate(tmp_path, SAXPY)) == "cuda"
    triton = ROOT / "tests" / "fixtures" / "kernels" / "correct" / "rmsnorm_rowwise"
    assert sources.language_of(triton) == "triton"
    cute = tmp_path / "cute"
    cute.mkdir()
    (cute / "kernel.py").write_text("import cutlass\nimport cutlass.cute as cute\n")
    assert sources.language_of(cute) == "cute-dsl"
    (cute / "extra.cu").write_text("__global__ void k() {}\n")
    assert [s.origin for s in sources.cuda_sources(cute)] == ["extra.cu"]


def test_compiler_errors_are_mapped_to_the_candidates_lines():
    src = sources.CudaSource("kernel_py_L5.cu", "\n\nint x = y;\n", "kernel.py", 5)
    out = ("kernel_py_L5.cu(3): error: identifier \"y\" is undefined\n"
           "kernel_py_L5.cu:3:9: error: expected ';'\n"
           "/usr/include/foo.h(10): error: something in a header\n"
           "ptxas fatal   : Unresolved extern function 'g'\n")
    errors = nvcc.parse_errors(out, src)
    assert errors[0] == 'kernel.py line 7: error: identifier "y" is undefined  [int x = y;]'
    assert errors[1].startswith("kernel.py line 7: error: expected ';'")
    assert errors[2] == "foo.h line 10: error: something in a header"
    assert errors[3].startswith("ptxas: error: Unresolved extern function")


@needs_nvcc
def test_compile_reports_registers_and_is_cached(tmp_path):
    (src,) = sources.cuda_sources(_candidate(tmp_path, SAXPY))
    first = nvcc.compile_cuda(src, cache=tmp_path / "cache")
    assert first.ok and not first.cached and first.target == "sm_90a"
    (k,) = first.kernels
    assert k.name == "saxpy_kernel" and k.regs and k.spill_stores == 0 and k.uses_wgmma is False
    again = nvcc.compile_cuda(src, cache=tmp_path / "cache")
    assert again.cached and again.kernels == first.kernels


@needs_nvcc
def test_the_compile_cannot_read_files_outside_the_sandbox(tmp_path):
    secret = tmp_path / "token.txt"
    secret.write_text("sk-forge-test-SECRET-42 = 1;\n")
    src = sources.CudaSource("leak.cu", f'#include "{secret}"\n__global__ void k() {{}}\n', "leak.cu")
    build = nvcc.compile_cuda(src, cache=tmp_path / "cache")
    assert not build.ok
    assert "SECRET" not in " ".join(build.errors)
    assert "leak.cu line 1" in build.first_error()


@needs_nvcc
def test_cpu_judge_compiles_then_refuses_to_run_a_cuda_candidate(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    task = load_task(ROOT / "tasks" / "rmsnorm")
    verdict = judge(task, _candidate(tmp_path, SAXPY), make_runner("cpu"))
    assert verdict.status is Status.REJECTED
    assert "need a GPU" in verdict.reason and "saxpy_kernel" in verdict.reason
    assert "cpu-interpret" in verdict.reason


@needs_nvcc
def test_a_cuda_syntax_error_is_a_compile_error_naming_the_line(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    broken = SAXPY.replace("y[i] = a * x[i] + y[i];", "y[i] = a * x[i] + y[i]")
    task = load_task(ROOT / "tasks" / "rmsnorm")
    verdict = judge(task, _candidate(tmp_path, broken), make_runner("cpu"))
    assert verdict.status is Status.COMPILE_ERROR
    assert "kernel.py line" in verdict.reason and "expected a \";\"" in verdict.reason


def _cuda_task(name: str):
    return load_task(ROOT / "tasks" / name).model_copy(update={"language": "cuda"})


def test_builtin_agent_picks_the_cuda_structure_for_a_cuda_rmsnorm():
    task = _cuda_task("rmsnorm")
    match = builtin_generated.resolve(task, (Path(task.root) / "reference.py").read_text())
    assert [t.name for t in match.templates] == ["rownorm_cuda"]
    assert all(t.language == "triton" for t in templates.for_op("rmsnorm"))


def test_builtin_agent_says_which_ops_it_writes_in_cuda():
    task = _cuda_task("softmax")
    with pytest.raises(AgentError, match="writes softmax in triton, and the task's language is cuda"):
        builtin_generated.resolve(task, (Path(task.root) / "reference.py").read_text())


@needs_nvcc
def test_builtin_cuda_rmsnorm_compiles_for_sm90a_without_spills(tmp_path):
    task = _cuda_task("rmsnorm")
    match = builtin_generated.resolve(task, (Path(task.root) / "reference.py").read_text())
    cfg = templates.complete(match.templates[0], {"VEC": 4, "THREADS": 256})
    text = templates.render(cfg, match.op, match.params, match.constants, call=match.call)
    assert "VEC = 4" in text and "def layernorm" not in text
    (src,) = sources.cuda_sources(_candidate(tmp_path, text))
    assert src.uses_torch()
    build = nvcc.compile_cuda(src, cache=tmp_path / "cache")
    assert build.ok, build.errors
    names = {k.name for k in build.kernels}
    assert "rownorm_kernel<__nv_bfloat16, 8, 0>" in names and len(names) == 36
    assert all(k.spill_stores == 0 and k.regs and k.regs <= 64 for k in build.kernels)


def _forge(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    import os

    return subprocess.run([sys.executable, "-m", "forgekernel.cli", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd, env={**os.environ, **(env or {})})


def test_run_with_a_native_language_on_cpu_stops_before_a_run_dir(tmp_path):
    out = _forge("run", str(ROOT / "tasks" / "rmsnorm"), "--language", "cuda", "--delivery", "cpu",
                 "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "CUDA C++ candidates run only on a GPU" in out.stderr
    assert not (tmp_path / "run").exists()
    bad = _forge("run", str(ROOT / "tasks" / "rmsnorm"), "--language", "fortran", "--delivery", "cpu",
                 "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert bad.returncode == 2 and "use triton, cuda, cute-dsl" in bad.stderr


def test_a_new_run_dir_takes_the_language_into_its_task_copy(tmp_path):
    from forgekernel.config import load_settings
    from forgekernel.run import rundir

    root = rundir.create(ROOT / "tasks" / "rmsnorm", load_settings({}), tmp_path / "run",
                         languages=["cuda"])
    rd = rundir.open(root)
    assert rd.task().language == "cuda"
    assert 'language = "triton"' in (ROOT / "tasks" / "rmsnorm" / "task.toml").read_text()


def test_the_coder_prompt_carries_the_language_contract():
    from forgekernel.agents import prompting

    cuda = prompting.coder_system(_cuda_task("rmsnorm"), "")
    assert "load_inline" in cuda and "sm_90a" in cuda and "TRITON_INTERPRET" not in cuda
    triton = prompting.coder_system(load_task(ROOT / "tasks" / "rmsnorm"), "")
    assert "TRITON_INTERPRET=1" in triton and "load_inline" not in triton


needs_cute = pytest.mark.skipif(not cute.available() or sandbox.detect() is None,
                                reason="the CuTe DSL or a sandbox is missing")


def _cute_candidate(tmp_path: Path, threads: int = 128, break_it: bool = False) -> Path:
    task = load_task(ROOT / "tasks" / "rmsnorm").model_copy(update={"language": "cute-dsl"})
    match = builtin_generated.resolve(task, (Path(task.root) / "reference.py").read_text())
    assert [t.name for t in match.templates] == ["rownorm_cute"]
    cfg = templates.complete(match.templates[0], {"THREADS": threads})
    text = templates.render(cfg, match.op, match.params, match.constants, call=match.call)
    if break_it:
        assert "acc += (v * v)" in text
        text = text.replace("acc += (v * v)", "acc += (v * undefined_name)")
    return _candidate(tmp_path, text)


@needs_cute
def test_builtin_cute_rmsnorm_compiles_for_sm90a_on_cpu_and_is_refused_to_run(tmp_path):
    task = load_task(ROOT / "tasks" / "rmsnorm")
    verdict = judge(task, _cute_candidate(tmp_path, 512), make_runner("cpu"))
    assert verdict.status is Status.REJECTED and "CuTe DSL candidates need a GPU" in verdict.reason
    m = re.search(r"(kernel_cutlass_\w+): (\d+) regs, (\d+) B smem, (\d+) B spilled", verdict.reason)
    assert m, verdict.reason
    assert m.group(1).startswith("kernel_cutlass__rms_row_") and int(m.group(2)) > 0
    assert m.group(4) == "0"


@needs_cute
def test_a_cute_error_is_a_compile_error_naming_the_line(tmp_path):
    task = load_task(ROOT / "tasks" / "rmsnorm")
    cand = _cute_candidate(tmp_path, break_it=True)
    verdict = judge(task, cand, make_runner("cpu"))
    assert verdict.status is Status.COMPILE_ERROR
    line = next(i for i, t in enumerate((cand / "kernel.py").read_text().splitlines(), 1)
                if "undefined_name" in t)
    assert f"kernel.py line {line}" in verdict.reason and "undefined_name" in verdict.reason


def test_cute_kernels_count_as_the_candidates_own_at_run_time():
    from forgekernel.judge.audit import is_own

    name = "kernel_cutlass__rms_row_tensorptrbf16genericoi641_tensorptrbf16generico1_0"
    assert is_own(name, ["_rms_row", "_rms_launch"])
    assert not is_own(name, ["rms_row"]) and not is_own("kernel_cutlass_gemm_0", ["_rms_row"])


def test_a_task_may_allow_several_languages_with_its_own_first(tmp_path):
    import shutil as sh

    from forgekernel.task import TaskError

    both = load_task(ROOT / "tasks" / "rmsnorm").model_copy(update={"languages": ("cuda", "triton")})
    assert both.allowed_languages() == ("triton", "cuda")
    task_dir = tmp_path / "t"
    sh.copytree(ROOT / "tasks" / "rmsnorm", task_dir)
    text = (task_dir / "task.toml").read_text()
    (task_dir / "task.toml").write_text(text.replace('language = "triton"',
                                                     'language = "triton"\nlanguages = ["cuda"]'))
    with pytest.raises(TaskError, match="language 'triton' is not among languages"):
        load_task(task_dir)


def test_the_builtin_architect_keeps_native_structures_for_a_gpu():
    from forgekernel.agents import builtin_plan

    task = load_task(ROOT / "tasks" / "rmsnorm").model_copy(update={"languages": ("triton", "cuda")})
    match = builtin_generated.resolve(task, (ROOT / "tasks" / "rmsnorm" / "reference.py").read_text())
    names = [t.name for t in match.templates]
    assert "rownorm_row" in names and "rownorm_cuda" in names and "rownorm_cute" not in names
    on_cpu = [t.name for t in builtin_plan.ranked_structures(task, match, gpu=False)]
    on_gpu = [t.name for t in builtin_plan.ranked_structures(task, match, gpu=True)]
    assert "rownorm_cuda" not in on_cpu and on_cpu[0] == on_gpu[0] == "rownorm_row"
    assert "rownorm_cuda" in on_gpu  # a restructure on a GPU can reach for it


def test_prompts_name_every_allowed_language():
    from forgekernel.agents import prompting

    task = load_task(ROOT / "tasks" / "rmsnorm").model_copy(update={"languages": ("triton", "cuda")})
    coder = prompting.coder_system(task, "")
    assert "TRITON_INTERPRET=1" in coder and "load_inline" in coder
    assert "Each decision row names the language" in coder
    assert "also allowed: cuda; pick one per milestone" in prompting.architect_system(task, "")


def test_a_cpu_run_may_allow_cuda_beside_triton(tmp_path):
    out = _forge("run", str(ROOT / "tasks" / "rmsnorm"), "--language", "triton,cuda", "--delivery", "cpu",
                 "--max-iterations", "1", "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert out.returncode in (0, 2) and "Traceback" not in out.stderr, out.stderr[-2000:]
    from forgekernel.run import rundir

    task = rundir.open(tmp_path / "run").task()
    assert task.allowed_languages() == ("triton", "cuda")
    assert "rownorm_cuda" not in (tmp_path / "run" / "curriculum.toml").read_text()


@needs_nvcc
def test_a_compile_inside_a_sandboxed_worker_does_not_nest_another(tmp_path):
    (src,) = sources.cuda_sources(_candidate(tmp_path, SAXPY))
    build = nvcc.compile_cuda(src, cache=tmp_path / "cache", inside=True)
    assert build.ok and build.kernels[0].name == "saxpy_kernel"


@needs_cute
def test_profile_of_a_cute_candidate_on_cpu_is_its_compile_report(tmp_path):
    from forgekernel.profile.api import profile_task

    task = load_task(ROOT / "tasks" / "rmsnorm")
    cand = _cute_candidate(tmp_path, 256)
    profiles = profile_task(task, make_runner("cpu"), kernel=cand / "kernel.py", ncu="off")
    assert profiles and all(p.metrics.get("regs") and p.metrics.get("spills") == 0 for p in profiles)
    assert all("median_ms" not in p.metrics for p in profiles)
    assert any("not run: a cute-dsl candidate" in n for n in profiles[0].notes)


@pytest.mark.skipif(shutil.which("nvcc", path="/usr/bin:/bin") is not None,
                    reason="nvcc is in /usr/bin here: no PATH without it to try")
def test_a_language_whose_compiler_is_missing_stops_before_a_run_dir(tmp_path):
    out = _forge("run", str(ROOT / "tasks" / "rmsnorm"), "--language", "triton,cuda", "--delivery", "cpu",
                 "--out", str(tmp_path / "run"), cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "language cuda: nvcc is not on PATH" in out.stderr and not (tmp_path / "run").exists()


def test_prose_about_cuda_is_not_a_cuda_source(tmp_path):
    text = ('"""A Triton kernel; a __global__ void kernel in CUDA would do the same."""\n'
            'NOTE = "no __global__ functions here"\n'
            'def run(x):\n    """Unlike a __global__ void f(float*) kernel, this is Python."""\n    return x\n')
    cand = _candidate(tmp_path, text)
    assert sources.cuda_sources(cand) == [] and sources.language_of(cand) == "triton"


@needs_cute
def test_a_kernelbench_cute_candidate_compiles_on_cpu_and_is_refused_to_run(tmp_path):
    """A ModelNew written in the CuTe DSL: built as ModelNew(*get_init_inputs()) and called on
    the example inputs in the sandbox, its kernel compiles for sm_90a here, with its report."""
    from forgekernel.kernelbench import convert

    task = load_task(convert(ROOT / "tests" / "fixtures" / "kernelbench" / "2_relu.py", tmp_path / "task"))
    cand = _candidate(tmp_path, (ROOT / "tests" / "fixtures" / "kernelbench_kernels" / "relu_cute.py").read_text())
    verdict = judge(task, cand, make_runner("cpu"))
    assert verdict.status is Status.REJECTED and "CuTe DSL candidates need a GPU" in verdict.reason, verdict.reason
    assert re.search(r"kernel_cutlass__relu_\w+: \d+ regs", verdict.reason), verdict.reason


@pytest.mark.skipif(not cute.available(), reason="needs nvidia-cutlass-dsl")
def test_the_cute_rmsnorm_reaches_its_launch_at_any_row_length(tmp_path):
    """Rows of length 1 (a hidden workload) once stopped the wrapper before its launch: the DSL
    could not deduce the stride order. On the CPU the launch itself fails (no driver), so
    every shape here must get that far: vector width 8, and width 1 for 250, 1 and 7."""
    import importlib.util
    import warnings

    import torch

    path = _cute_candidate(tmp_path, threads=128) / "kernel.py"
    spec = importlib.util.spec_from_file_location("_cute_rows", path)
    module = importlib.util.module_from_spec(spec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the DSL's own
        spec.loader.exec_module(module)
        for m, n in ((16, 256), (16, 250), (16, 1), (1, 1), (3, 7)):
            x, w = torch.randn(m, n, dtype=torch.bfloat16), torch.randn(n, dtype=torch.bfloat16)
            with pytest.raises(Exception) as err:
                module.run(x, w)
            assert "cudaError" in str(err.value), (m, n, str(err.value)[:200])
    assert set(module._COMPILED) == {(torch.bfloat16, 8), (torch.bfloat16, 1)}
