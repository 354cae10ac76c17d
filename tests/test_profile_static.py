"""Compile-time reports without a GPU: Triton for sm_90a through a worker, CUDA through nvcc."""

from __future__ import annotations

import shutil

import pytest

from forgekernel.delivery import make_runner
from forgekernel.profile import static
from forgekernel.profile.api import static_reports
from forgekernel.records import Workload
from forgekernel.task import load_task

CUDA_SRC = r'''
__global__ void stage_sum(const float* x, float* y, int n) {
    __shared__ float buf[1024];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    buf[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    if (threadIdx.x == 0) {
        float s = 0.0f;
        for (int j = 0; j < blockDim.x; ++j) s += buf[j];
        y[blockIdx.x] = s;
    }
}
'''


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_cuda_report_from_nvcc(tmp_path):
    src = tmp_path / "stage_sum.cu"
    src.write_text(CUDA_SRC)
    report = static.cuda_static([src])
    assert report.target == "sm_90a"
    (k,) = report.kernels
    assert "stage_sum" in k.name
    assert k.regs and k.regs > 0
    assert k.smem_bytes == 4096
    assert k.spill_stores == 0
    assert k.uses_wgmma is False and k.uses_tma is False
    assert report.metrics() == {"regs": k.regs, "smem_bytes": 4096, "spills": 0,
                                "uses_wgmma": False, "uses_tma": False}


def test_ptxas_verbose_parser_reads_spills():
    text = """ptxas info    : Compiling entry function '_Z3fooPf' for 'sm_90a'
ptxas info    : Function properties for _Z3fooPf
    48 bytes stack frame, 40 bytes spill stores, 36 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 16384 bytes smem, 368 bytes cmem[0]
"""
    facts = static.parse_ptxas_verbose(text)["_Z3fooPf"]
    assert facts == {"stack": 48, "spill_stores": 40, "spill_loads": 36, "regs": 255,
                     "smem_bytes": 16384}


def test_triton_rmsnorm_report_has_registers_and_shared_memory(repo):
    task = load_task(repo / "tasks" / "rmsnorm")
    big = Workload(axes={"M": 16384, "N": 8192})
    small = Workload(axes={"M": 16, "N": 256})
    reports = static_reports(task, make_runner("cpu"), repo / "benchmarks" / "kernels" / "rmsnorm_triton",
                             (small, big))
    for rep in reports:
        (k,) = rep.kernels
        assert k.name == "rmsnorm_row_kernel"
        assert k.regs and k.regs > 0
        assert k.spill_stores == 0
        assert k.uses_wgmma is False
    # captured at the real shape on meta tensors: BLOCK follows N
    assert "'BLOCK': 8192" in reports[1].kernels[0].config
    assert "'BLOCK': 256" in reports[0].kernels[0].config
    # one warp reduces in registers; sixteen warps need a shared-memory scratch
    assert reports[0].kernels[0].smem_bytes == 0
    assert reports[1].kernels[0].smem_bytes > 0


def test_triton_matmul_report_sees_wgmma(repo):
    task = load_task(repo / "tasks" / "matmul")
    wl = Workload(axes={"M": 4096, "N": 4096, "K": 4096})
    (rep,) = static_reports(task, make_runner("cpu"), repo / "benchmarks" / "kernels" / "matmul_triton",
                            (wl,))
    m = rep.metrics()
    assert m["uses_wgmma"] is True
    assert m["smem_bytes"] > 32 * 1024  # multi-stage operand buffers
    assert m["regs"] > 0
