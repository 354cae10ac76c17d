"""Time every built-in template at the example tasks' GPU workloads against the eager reference.

Run on a CUDA machine (the H200 through scripts/gpu_env.sh):

    python3 benchmarks/gpu_templates.py --out DIR [--commit SHA] [--budget-s 240]

For each task and GPU workload: the eager reference and each template (default knobs; a
few extra configurations for matmul) are checked against the reference's output (max error
relative to the output's largest magnitude) and timed with CUDA events around single calls,
after warm-up, with the L2 flushed (a 256 MiB buffer zeroed) before every call; the median
is reported with achieved TB/s of minimal bytes (every input read once, every output written
once), TFLOP/s for matmul, %SOL against the roofline floor (the H200 baseline's ceilings, benchmarks/results/h200_baseline_2026-12-02.json) and
the speedup over eager. Writes DIR/templates.json (device, date, versions, commit) as it
goes and prints a table last.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
import triton

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from forgekernel import templates  # noqa: E402
from forgekernel.agents import builtin_generated  # noqa: E402
from forgekernel.profile import roofline  # noqa: E402
from forgekernel.task import load_module, load_task, shape_of  # noqa: E402

TASKS = ("rmsnorm", "softmax", "swiglu", "matmul", "fused_add_rmsnorm", "layernorm",
         "cross_entropy", "rope")
EXTRA = {"matmul_tiled": ({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "NUM_WARPS": 8, "NUM_STAGES": 3},
                         {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "NUM_WARPS": 4, "NUM_STAGES": 4},
                         {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "NUM_WARPS": 4, "NUM_STAGES": 4}),
         "xent_looped": ({"BLOCK_V": 8192}, {"BLOCK_V": 16384, "NUM_WARPS": 16}, {"BLOCK_V": 2048, "NUM_WARPS": 4},
                         {"CHUNK_MAX": 1}, {"CHUNK_MAX": 1, "BLOCK_V": 8192}, {"CHUNK_MAX": 1, "BLOCK_V": 2048, "NUM_WARPS": 4}),
         "softmax_looped": ({"BLOCK_N": 8192}, {"BLOCK_N": 2048, "NUM_WARPS": 4}),
         "rope_rows": ({"ROWS": 32, "NUM_WARPS": 4}, {"ROWS": 64, "NUM_WARPS": 8}, {"LAYOUT": 1},
                       {"LAYOUT": 1, "ROWS": 32, "NUM_WARPS": 4}, {"LAYOUT": 1, "ROWS": 64, "NUM_WARPS": 8},
                       {"LAYOUT": 1, "ROWS": 32, "NUM_WARPS": 8}, {"LAYOUT": 1, "ROWS": 64, "NUM_WARPS": 4})}
"""Configurations beyond each template's defaults, by template."""
FLUSH = None


DEVICE = "cuda"


def make_inputs(task, axes: dict) -> tuple:
    out = []
    for spec in task.inputs.values():
        shape = shape_of(spec, axes)
        d = spec.dist
        dtype = getattr(torch, spec.dtype)
        if d.kind == "randint":
            t = torch.randint(int(d.low), int(d.high), shape, device=DEVICE, dtype=dtype)
        elif d.kind == "uniform":
            t = (torch.rand(shape, device=DEVICE) * (d.high - d.low) + d.low).to(dtype)
        else:
            t = (torch.randn(shape, device=DEVICE) * d.std + d.mean).to(dtype)
        out.append(t)
    return tuple(out)


def time_host_ms(fn) -> tuple[float, float, int]:
    """--smoke on the CPU interpreter: host time of a few calls (cpu-interpret, not device)."""
    fn()
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return times[1], times[2] - times[0], 3


def time_ms(fn, budget_ms: float = 150.0) -> tuple[float, float, int]:
    """Median and 20-80 spread (ms) of single calls with an L2 flush before each."""
    global FLUSH
    if DEVICE != "cuda":
        return time_host_ms(fn)
    if FLUSH is None:
        FLUSH = torch.empty(256 << 20, dtype=torch.uint8, device=DEVICE)
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    est = max((time.perf_counter() - t0) * 1e3, 1e-3)
    n = int(min(50, max(5, budget_ms / est)))
    times = []
    for _ in range(n):
        FLUSH.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    spread = times[int(0.8 * (n - 1))] - times[int(0.2 * (n - 1))]
    return statistics.median(times), spread, n


def rel_err(got, want) -> float:
    got = got if isinstance(got, (tuple, list)) else (got,)
    want = want if isinstance(want, (tuple, list)) else (want,)
    worst = 0.0
    for g, w in zip(got, want, strict=True):
        if g.shape != w.shape or g.dtype != w.dtype:
            return float("inf")
        scale = max(w.float().abs().max().item(), 1e-6)
        worst = max(worst, (g.float() - w.float()).abs().max().item() / scale)
    return worst


KERNEL_DIR = Path(tempfile.mkdtemp(prefix="gpu-templates-"))


def kernel_module(cfg, match):
    """Render ``cfg`` into its own kernel file (compiled Triton reads the source) and import it."""
    path = KERNEL_DIR / f"k{len(list(KERNEL_DIR.iterdir()))}_{cfg.template}.py"
    path.write_text(templates.render(cfg, match.op, match.params, match.constants))
    return load_module(path)


def configs(match) -> list:
    out = []
    for t in match.templates:
        out += [templates.complete(t)] + [templates.complete(t, k) for k in EXTRA.get(t.name, ())]
    return out


def bench_task(name: str, deadline: float, emit) -> None:
    task = load_task(REPO / "tasks" / name)
    source = (REPO / "tasks" / name / "reference.py").read_text()
    ref = load_module(REPO / "tasks" / name / "reference.py")
    match = builtin_generated.resolve(task, source)
    mods = [(cfg, kernel_module(cfg, match)) for cfg in configs(match)]
    for wl in task.gpu_workloads() if DEVICE == "cuda" else task.smoke_workloads():
        if time.monotonic() > deadline:
            emit({"task": name, "axes": wl.axes, "skipped": "time budget"})
            continue
        inputs = make_inputs(task, wl.axes)
        nbytes = roofline.minimal_bytes(task, wl, roofline.output_specs(task, ref, wl))
        flops = roofline.formula_flops(task, wl)
        fl = roofline.floor(nbytes, flops, roofline.H200_SHARED, roofline.main_dtype(task))
        want = ref.run(*inputs)
        ref_ms, ref_spread, ref_n = time_ms(lambda a=inputs: ref.run(*a))
        base = {"task": name, "axes": wl.axes, "bytes": nbytes, "flops": flops,
                "floor_ms": fl.floor_ms, "bound": fl.bound, "reference_ms": ref_ms}
        emit({**base, "impl": "eager", "median_ms": ref_ms, "spread_ms": ref_spread, "n": ref_n,
              "speedup": 1.0, "err": 0.0})
        for cfg, mod in mods:
            if time.monotonic() > deadline:
                break
            try:
                err = rel_err(mod.run(*inputs), want)
                ms, spread, n = time_ms(lambda m=mod, a=inputs: m.run(*a))
            except Exception as exc:  # a benchmark row records the failure and moves on
                emit({**base, "impl": cfg.template, "knobs": cfg.knobs,
                      "error": f"{type(exc).__name__}: {str(exc)[:300]}"})
                continue
            emit({**base, "impl": cfg.template, "knobs": cfg.knobs, "median_ms": ms,
                  "spread_ms": spread, "n": n, "speedup": ref_ms / ms, "err": err})
        inputs = want = None
        if DEVICE == "cuda":
            torch.cuda.empty_cache()


def derived(row: dict) -> dict:
    if "median_ms" in row:
        row["tbs"] = row["bytes"] / (row["median_ms"] * 1e-3) / 1e12
        row["sol_pct"] = 100.0 * row["floor_ms"] / row["median_ms"]
        if row.get("flops") and row["task"] == "matmul":
            row["tflops"] = row["flops"] / (row["median_ms"] * 1e-3) / 1e12
    return row


def table(rows: list) -> str:
    lines = [f"{'task':18} {'workload':26} {'impl':17} {'ms':>9} {'TB/s':>6} {'TFLOP/s':>8} "
             f"{'%SOL':>5} {'x eager':>7} {'err':>8}"]
    for r in rows:
        wl = "x".join(str(v) for v in r["axes"].values())
        if "median_ms" not in r:
            lines.append(f"{r['task']:18} {wl:26} {r.get('impl', '-'):17} "
                         f"{r.get('error') or r.get('skipped')}")
            continue
        tf = f"{r['tflops']:8.1f}" if "tflops" in r else " " * 8
        lines.append(f"{r['task']:18} {wl:26} {r['impl']:17} {r['median_ms']:9.4f} {r['tbs']:6.2f} "
                     f"{tf} {r['sol_pct']:5.1f} {r['speedup']:7.2f} {r['err']:8.1e}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--commit", default="")
    ap.add_argument("--budget-s", type=float, default=240.0)
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--smoke", action="store_true",
                    help="CPU dry run: smoke workloads under TRITON_INTERPRET=1, host timings")
    args = ap.parse_args()
    global DEVICE
    DEVICE = "cpu" if args.smoke else "cuda"
    out = Path(args.out) / ("templates.json" if not args.smoke else "templates_cpu_smoke.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + args.budget_s
    doc = {"what": "built-in templates vs eager reference, CUDA events, L2 flushed, median",
           "device": torch.cuda.get_device_name(0) if DEVICE == "cuda" else "cpu-interpret",
           "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
           "versions": {"torch": torch.__version__, "triton": triton.__version__,
                        "cuda": torch.version.cuda or "", "python": sys.version.split()[0]},
           "commit": args.commit, "ceilings": roofline.H200_SHARED.source, "rows": []}

    def emit(row: dict) -> None:
        doc["rows"].append(derived(row))
        out.write_text(json.dumps(doc, indent=1))

    for name in args.tasks.split(","):
        bench_task(name, deadline, emit)
    if DEVICE != "cuda":
        print("timings: cpu-interpret (host time under the Triton interpreter), not device")
    print(table(doc["rows"]))


if __name__ == "__main__":
    main()
