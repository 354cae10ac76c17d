"""Matmul structures and tile shapes against cuBLAS at the matmul task's GPU workloads.

    python3 benchmarks/gpu_matmul.py --out DIR [--commit SHA] [--budget-s 240]
    python3 benchmarks/gpu_matmul.py --out DIR --smoke     # CPU interpreter dry run

Times the built-in template matmul_tiled at several knob points (large tiles for big M,
skinny tiles for decode-sized M) and the experimental persistent TMA kernel
(benchmarks/kernels/matmul_tma.py) with the same method as gpu_templates.py (CUDA events
around single calls, L2 flushed before each, median). Every row is checked against cuBLAS's
output first. Writes DIR/matmul_h200.json as it goes and prints, per workload, the best
configuration of each structure last. This is the measurement that decides the template's
knob spaces and whether the TMA structure becomes a template.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from pathlib import Path

import torch
import triton

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "kernels"))

import gpu_templates as gt  # noqa: E402
import matmul_tma  # noqa: E402

from forgekernel.task import load_module, load_task  # noqa: E402

TILED = [  # BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, NUM_WARPS, NUM_STAGES
    (128, 128, 64, 8, 8, 3), (128, 256, 64, 8, 8, 3), (128, 256, 64, 8, 8, 4), (256, 128, 64, 8, 8, 3),
    (128, 128, 64, 8, 4, 4), (128, 128, 128, 8, 8, 3), (64, 256, 64, 8, 4, 4),
    (16, 64, 128, 1, 4, 4), (16, 64, 256, 1, 4, 3), (16, 128, 128, 1, 4, 4), (16, 32, 256, 1, 4, 4),
    (32, 64, 128, 1, 4, 4), (64, 64, 128, 8, 4, 4), (64, 128, 128, 8, 4, 3),
]
TMA = [  # BM, BN, BK, GROUP_M, warps, stages
    (128, 256, 64, 8, 8, 3), (128, 256, 64, 8, 8, 4), (128, 128, 64, 8, 8, 4), (128, 128, 64, 8, 4, 4),
    (256, 128, 64, 8, 8, 3), (64, 128, 128, 8, 4, 4), (16, 64, 128, 1, 4, 4),
]
SKINNY_M = 64


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--commit", default="")
    ap.add_argument("--budget-s", type=float, default=240.0)
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args()
    gt.DEVICE = "cpu" if args.smoke else "cuda"
    repo = HERE.parent
    task = load_task(repo / "tasks" / "matmul")
    tiled = load_module(repo / "src" / "forgekernel" / "templates" / "matmul_tiled.py")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    out = Path(args.out) / ("matmul_h200.json" if not args.smoke else "matmul_cpu_smoke.json")
    doc = {"what": "matmul structures vs cuBLAS, CUDA events, L2 flushed, median",
           "device": torch.cuda.get_device_name(0) if not args.smoke else "cpu-interpret",
           "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
           "versions": {"torch": torch.__version__, "triton": triton.__version__,
                        "cuda": torch.version.cuda or "", "python": sys.version.split()[0]},
           "commit": args.commit, "rows": []}
    deadline = time.monotonic() + args.budget_s

    def tiled_fn(cfg):
        def fn(a, b):
            (tiled.BLOCK_M, tiled.BLOCK_N, tiled.BLOCK_K, tiled.GROUP_M, tiled.NUM_WARPS,
             tiled.NUM_STAGES) = cfg
            return tiled.matmul(a, b)
        return fn

    def tma_fn(cfg):
        bm, bn, bk, gm, w, s = cfg
        return lambda a, b: matmul_tma.matmul(a, b, bm, bn, bk, gm, w, s)

    variants = [("tiled", c, tiled_fn(c)) for c in TILED] + [("tma", c, tma_fn(c)) for c in TMA]
    workloads = task.smoke_workloads() if args.smoke else task.gpu_workloads()
    for wl in workloads:
        m, n, k = wl.axes["M"], wl.axes["N"], wl.axes["K"]
        a, b = gt.make_inputs(task, wl.axes)
        want = a @ b
        ref_ms, ref_spread, ref_n = gt.time_ms(lambda a=a, b=b: a @ b)
        base = {"M": m, "N": n, "K": k, "flops": 2 * m * n * k, "cublas_ms": ref_ms}
        doc["rows"].append({**base, "impl": "cublas", "median_ms": ref_ms, "spread_ms": ref_spread, "n": ref_n})
        for kind, cfg, fn in variants:
            if time.monotonic() > deadline:
                doc["rows"].append({**base, "impl": kind, "cfg": cfg, "skipped": "time budget"})
                continue
            if args.smoke:
                cfg_small = kind == "tma" and not matmul_tma.tma_ok(a, b)
                if cfg_small:
                    doc["rows"].append({**base, "impl": kind, "cfg": cfg, "error": "unaligned for TMA"})
                    continue
            try:
                err = gt.rel_err(fn(a, b), want)
                ms, spread, reps = gt.time_ms(lambda fn=fn, a=a, b=b: fn(a, b))
            except Exception as exc:  # a failed configuration is a row, not the end of the run
                doc["rows"].append({**base, "impl": kind, "cfg": cfg,
                                    "error": f"{type(exc).__name__}: {str(exc)[:300]}"})
                continue
            doc["rows"].append({**base, "impl": kind, "cfg": cfg, "median_ms": ms, "spread_ms": spread,
                                "n": reps, "err": err, "x_cublas": ref_ms / ms,
                                "tflops": 2 * m * n * k / ms / 1e9})
        out.write_text(json.dumps(doc, indent=1))
        a = b = want = None
        if not args.smoke:
            torch.cuda.empty_cache()
    out.write_text(json.dumps(doc, indent=1))
    if args.smoke:
        print("timings: cpu-interpret (host time under the Triton interpreter), not device")
    print(f"{'M':>6} {'N':>7} {'K':>6} {'cublas ms':>10}  {'best tiled':28} {'x':>6}  {'best tma':28} {'x':>6}")
    for wl in workloads:
        rows = [r for r in doc["rows"] if (r["M"], r["N"], r["K"]) == (wl.axes["M"], wl.axes["N"], wl.axes["K"])]
        line = f"{wl.axes['M']:>6} {wl.axes['N']:>7} {wl.axes['K']:>6} {rows[0]['median_ms']:>10.4f}"
        for kind in ("tiled", "tma"):
            ok = [r for r in rows if r["impl"] == kind and "median_ms" in r and r["err"] < 2e-2]
            best = min(ok, key=lambda r: r["median_ms"]) if ok else None
            line += f"  {str(best['cfg']) if best else '-':28} {best['x_cublas'] if best else 0:>6.3f}"
        print(line)
    errors = [r for r in doc["rows"] if "error" in r]
    print(f"{len(errors)} failed configuration(s)" + (f"; first: {errors[0]['error'][:200]}" if errors else ""))


if __name__ == "__main__":
    main()
