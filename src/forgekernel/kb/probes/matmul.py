"""Dense matrix peak through the library (torch.matmul -> cuBLAS) on random data."""

from __future__ import annotations

from forgekernel.kb.probes import ProbeContext, ProbeResult
from forgekernel.kb.probes.timing import timed_median

CLAIM_N = 8192
DETAIL_N = (4096, 8192)


def tflops(n: int, ms: float) -> float:
    """TFLOP/s of an n x n x n product (2 n^3 flops) taking ``ms`` milliseconds."""
    return 2.0 * n ** 3 / (ms * 1e-3) / 1e12


def _measure(ctx: ProbeContext, dtype_name: str, probe: str) -> ProbeResult:
    import torch

    dtype = getattr(torch, dtype_name)
    by_n = {}
    for n in DETAIL_N:
        gen = torch.Generator(device=ctx.device).manual_seed(n)
        a = torch.randn(n, n, dtype=dtype, device=ctx.device, generator=gen)
        b = torch.randn(n, n, dtype=dtype, device=ctx.device, generator=gen)
        c = a @ b
        if not torch.isfinite(c).all():
            raise RuntimeError(f"{dtype_name} matmul {n}^3 produced non-finite values")
        stats = timed_median(lambda a=a, b=b: torch.matmul(a, b), budget_ms=150.0)
        by_n[str(n)] = {**stats, "tflops": round(tflops(n, stats["median_ms"]), 2)}
        del a, b, c
    value = by_n[str(CLAIM_N)]["tflops"]
    details = {"by_n": by_n, "dtype": dtype_name,
               "method": "torch.matmul of random n x n operands, no flush, events per rep"}
    return ProbeResult(probe=probe, value=value, unit="TFLOP/s", details=details)


def matmul_bf16(ctx: ProbeContext) -> ProbeResult:
    return _measure(ctx, "bfloat16", "matmul_bf16")


def matmul_fp16(ctx: ProbeContext) -> ProbeResult:
    return _measure(ctx, "float16", "matmul_fp16")
