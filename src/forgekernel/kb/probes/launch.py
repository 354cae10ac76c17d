"""Kernel launch cost: back-to-back eager launches and CUDA-graph replay of tiny kernels.

Both time a run of ``KERNELS`` tiny kernels (an in-place add on 1024 floats) with CUDA
events around the whole run and divide: the per-kernel cost of a launch-bound sequence,
whatever limits it (host issue or device turnaround). The Triton launch path's host cost
is recorded as a detail.
"""

from __future__ import annotations

import time

import triton
import triton.language as tl

from forgekernel.kb.probes import ProbeContext, ProbeResult
from forgekernel.kb.probes.timing import median, spread

KERNELS = 500
ROUNDS = 15


@triton.jit
def _bump(X, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(X + offs, tl.load(X + offs, mask=m) + 1.0, mask=m)


def _per_kernel_us(run) -> dict:
    import torch

    run()
    torch.cuda.synchronize()
    rounds = []
    for _ in range(ROUNDS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        torch.cuda.synchronize()
        rounds.append(start.elapsed_time(end) * 1e3 / KERNELS)
    return {"median_us": median(rounds), "spread_us": spread(rounds), "rounds": len(rounds),
            "kernels_per_round": KERNELS}


def launch_eager(ctx: ProbeContext) -> ProbeResult:
    import torch

    x = torch.randn(1024, device=ctx.device)

    def run() -> None:
        for _ in range(KERNELS):
            x.add_(1.0)

    stats = _per_kernel_us(run)
    details = {**stats, "triton_host_us": _triton_host_us(ctx),
               "method": f"events around {KERNELS} back-to-back x.add_(1.0) on 1024 floats"}
    return ProbeResult(probe="launch_eager", value=stats["median_us"], unit="us", details=details)


def launch_graph(ctx: ProbeContext) -> ProbeResult:
    import torch

    x = torch.randn(1024, device=ctx.device)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            x.add_(1.0)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(KERNELS):
            x.add_(1.0)
    start = x.clone()
    graph.replay()
    torch.cuda.synchronize()
    if not torch.allclose(x, start + KERNELS, rtol=1e-5, atol=1e-2):
        raise RuntimeError("graph replay did not apply every captured kernel")
    stats = _per_kernel_us(graph.replay)
    details = {**stats, "method": f"events around one replay of a graph of {KERNELS} "
                                  "x.add_(1.0) on 1024 floats"}
    return ProbeResult(probe="launch_graph", value=stats["median_us"], unit="us", details=details)


def _triton_host_us(ctx: ProbeContext) -> float:
    """Host microseconds per launch of a tiny Triton kernel (launch path only)."""
    import torch

    x = torch.randn(1024, device=ctx.device)
    _bump[(1,)](x, x.numel(), BLOCK=1024)
    torch.cuda.synchronize()
    samples = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(200):
            _bump[(1,)](x, x.numel(), BLOCK=1024)
        samples.append((time.perf_counter() - t0) * 1e6 / 200)
        torch.cuda.synchronize()
    return round(median(samples), 3)
