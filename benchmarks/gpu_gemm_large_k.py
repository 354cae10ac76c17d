"""Where forge's Triton GEMM loses on a long K: KernelBench L1 6 (256 x 256 outputs, K = 524288).

    source scripts/gpu_env.sh && python3 benchmarks/gpu_gemm_large_k.py --out $OUT --commit SHA
    TRITON_INTERPRET=1 python3 benchmarks/gpu_gemm_large_k.py --out /tmp/glk --smoke   # CPU dry run

On 2026-12-07 (H100, ../results/kernelbench_h100_2026-12-07_rest16/) the generated candidate
took 4.84 ms against cuBLAS's fp32 1.30 ms. Commit 560c6ca raised the K-major copy's threshold
from a cost model (gemm._gemm_kmajor); this times both rules and the other pieces with
forge compare's method (forgekernel.compare.timing: L2 flush, spin lead, events around one call,
medians over interleaved rounds), each variant's output checked against an fp64 product first:

* cublas_fp32 / cublas_tf32: torch.mm with TF32 off / on;
* forge_tf32: forge's library mm as generated (its rule for the K-major copy, split K);
* forge_tf32_copy: the row-major B always copied K-major first (the rule at L1 6 until 2026-12-07);
* forge_tf32_nocopy: never copied (Triton feeds the K-strided B);
* forge_tf32_nosplit: as generated, no split along K (4 programs at L1 6);
* forge_ieee: full-precision products (GEMM_ALLOW_TF32 = 0, no copy);
* forge_tf32_kmajor_in: B handed over K-major already (the GEMM alone, no copy);
* copy_kmajor: the K-major copy alone (``B.transpose(-1, -2).contiguous()``).

Bytes and flops per shape go in the JSON beside the times (the read floor: A and B once), so
each row can be read against its ceiling. Writes OUT/gemm_large_k.json and prints a table.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
from pathlib import Path

import torch
import triton

from forgekernel.compare import timing
from forgekernel.generate.library import gemm

SHAPES = [(256, 256, 524288), (512, 512, 131072), (4096, 4096, 4096)]
SMOKE_SHAPES = [(16, 16, 4096)]


def _with(knobs: dict, fn):
    """fn run with gemm module constants set to knobs, restored after."""
    def call():
        saved = {k: getattr(gemm, k) for k in knobs}
        for k, v in knobs.items():
            setattr(gemm, k, v)
        try:
            return fn()
        finally:
            for k, v in saved.items():
                setattr(gemm, k, v)
    return call


def _cublas(a, b, tf32: bool):
    def call():
        saved = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = tf32
        try:
            return torch.mm(a, b)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = saved
    return call


def variants(a, b) -> dict:
    b_k = b.transpose(-1, -2).contiguous().transpose(-1, -2)  # same values, K-major
    out = {
        "forge_tf32": _with({"GEMM_ALLOW_TF32": 1}, lambda: gemm.mm(a, b)),
        "forge_tf32_copy": _with({"GEMM_ALLOW_TF32": 1, "_gemm_kmajor_min": 1}, lambda: gemm.mm(a, b)),
        "forge_tf32_nocopy": _with({"GEMM_ALLOW_TF32": 1, "_gemm_kmajor_min": 1 << 62}, lambda: gemm.mm(a, b)),
        "forge_tf32_nosplit": _with({"GEMM_ALLOW_TF32": 1, "_gemm_split_min_steps": 1 << 62}, lambda: gemm.mm(a, b)),
        "forge_ieee": _with({"GEMM_ALLOW_TF32": 0}, lambda: gemm.mm(a, b)),
        "forge_tf32_kmajor_in": _with({"GEMM_ALLOW_TF32": 1}, lambda: gemm.mm(a, b_k)),
        "copy_kmajor": lambda: b.transpose(-1, -2).contiguous(),
    }
    if a.is_cuda:
        out = {"cublas_fp32": _cublas(a, b, False), "cublas_tf32": _cublas(a, b, True), **out}
    return out


def error(got, want) -> float:
    """Max abs error over the reference's max magnitude (tf32 over a long K: about 1e-3)."""
    return float((got.double() - want).abs().max() / want.abs().max().clamp_min(1e-30))


def one_shape(m: int, n: int, k: int, clock, reps: int, warmup: int, device: str) -> dict:
    gen = torch.Generator(device=device).manual_seed(0)
    a = torch.rand((m, k), generator=gen, device=device)  # KernelBench draws torch.rand
    b = torch.rand((k, n), generator=gen, device=device)
    want = a.double() @ b.double()
    calls = variants(a, b)
    checks = {}
    for name, fn in calls.items():
        if name != "copy_kmajor":
            checks[name] = error(fn(), want)
    del want
    timed = timing.measure(calls, clock, reps=reps, warmup=warmup)
    rows = {name: {**timed[name], "rel_err": checks.get(name)} for name in calls}
    bytes_read = (m * k + k * n) * a.element_size()
    return {"axes": {"M": m, "N": n, "K": k}, "flops": 2 * m * n * k, "bytes_read": bytes_read,
            "bytes_written": m * n * a.element_size(), "rows": rows}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--commit", default="unknown")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--smoke", action="store_true", help="tiny shapes on the CPU interpreter")
    args = ap.parse_args(argv)
    gpu = torch.cuda.is_available() and not args.smoke
    clock = timing.GpuClock() if gpu else timing.CpuClock()
    device = "cuda" if gpu else "cpu"
    shapes = SHAPES if gpu else SMOKE_SHAPES
    reps, warmup = (args.reps, 3) if gpu else (2, 1)
    results = []
    args.out.mkdir(parents=True, exist_ok=True)
    meta = {"device": torch.cuda.get_device_name() if gpu else f"cpu ({platform.processor() or 'host'})",
            "timing": clock.label, "method": clock.method, "commit": args.commit,
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "versions": {"torch": torch.__version__, "triton": triton.__version__}}
    for m, n, k in shapes:
        res = one_shape(m, n, k, clock, reps, warmup, device)
        results.append(res)
        (args.out / "gemm_large_k.json").write_text(json.dumps({**meta, "shapes": results}, indent=1))
        print(f"M={m} N={n} K={k}: {res['flops'] / 1e9:.1f} GFLOP, {res['bytes_read'] / 1e6:.0f} MB read ({clock.label})")
        for name, row in res["rows"].items():
            ms = row["device_ms"] if row["device_ms"] is not None else row["per_call_ms"]
            err = "-" if row["rel_err"] is None else f"{row['rel_err']:.1e}"
            note = row.get("failed") or ""
            print(f"  {name:22} {ms if ms is None else round(ms, 4)!s:>10} ms  err {err:8} {note}")
    print(f"wrote {args.out / 'gemm_large_k.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
