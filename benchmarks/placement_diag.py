"""Why a kernel's judged time differs between two judgements: buffer placement or not.

Two parts, on the GPU machine:

A. ``forge judge`` on one task and kernel, ``--judgements`` times (each a fresh verifier and
   executor, as an attempt and its confirmation are): per workload, the candidate's and the
   reference's medians in each judgement and their spread between judgements.
B. In this one process, the same kernel on its largest workload timed at several device
   memory placements: before each placement a spacer block of a different size is held, so
   the inputs and outputs land at other addresses; per placement, the median of ROUNDS
   batches of K calls (CUDA events around each batch, L2 flushed by the batch's own size).
   Placement matters where the medians' spread across placements exceeds the spread of
   repeated timings at one placement.
D. ``--reps-list``: judgements through the Python API with K fixed (``JudgeOptions(reps=K)``)
   for each K listed: where the candidate's spread between judgements shrinks as 1/K, a
   fixed cost per batch that differs between processes (the gate's latency) explains it;
   where it stays, the calls themselves run at a speed that differs between processes.
C. In this one process, the footprint a batch touches: batches of K calls, each call on its
   own input set and keeping its output (as the judge's gated batches do, on a pool larger
   than the L2), for several K, against batches of the same K calls on one input set. Where
   the per-call time grows with the distinct memory a batch touches and not with K, the
   footprint (address translation, DRAM pages) and not the batch explains a judged time
   above a plain timing of the kernel.

    source scripts/gpu_env.sh
    python3 benchmarks/placement_diag.py --task tasks/rmsnorm --kernel kernels/rmsnorm/kernel.py \
        --entry rmsnorm --out $OUT/placement --commit SHA

Writes OUT/placement_diag.json (device, date, versions, commit, both parts) and prints a table.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))


def judgements(task: str, kernel: str, n: int, timeout_s: float) -> list[dict]:
    """Per judgement: status, wall and per workload (axes, candidate and reference medians)."""
    rows = []
    for _ in range(n):
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "forgekernel.cli", "judge", task, kernel, "--json",
                               "--delivery", "local", "--timeout", str(timeout_s)],
                              capture_output=True, text=True, timeout=timeout_s + 60)
        wall = time.perf_counter() - start
        try:
            v = json.loads(proc.stdout)
        except json.JSONDecodeError:
            rows.append({"status": "NO_VERDICT", "wall_s": wall, "stderr": proc.stderr[-2000:]})
            continue
        rows.append({"status": v["status"], "wall_s": round(wall, 2), "speedup": v.get("speedup"),
                     "workloads": [{"axes": w["axes"], "median_ms": w.get("median_ms"),
                                    "reference_ms": w.get("reference_ms")}
                                   for w in v["workloads"] if w.get("median_ms") is not None]})
        print(f"judgement {len(rows)}: {v['status']} speedup {v.get('speedup')} ({wall:.1f} s)", flush=True)
    return rows


def judgements_at(task: str, kernel: str, n: int, reps: int) -> list[dict]:
    """``n`` judgements with K = ``reps`` calls a batch (each a fresh verifier and executor)."""
    from forgekernel.delivery import make_runner
    from forgekernel.judge import JudgeOptions, judge
    from forgekernel.task import load_task

    rows = []
    for _ in range(n):
        start = time.perf_counter()
        v = judge(load_task(REPO / task), REPO / kernel, make_runner("local"), JudgeOptions(reps=reps))
        rows.append({"status": v.status.value, "reps": reps, "wall_s": round(time.perf_counter() - start, 2),
                     "speedup": v.speedup, "tails": v.profile.get("tails"),
                     "workloads": [{"axes": w.axes, "median_ms": w.median_ms, "spread_ms": w.spread_ms,
                                    "reference_ms": w.reference_ms} for w in v.workloads if w.median_ms]})
        print(f"reps {reps}: {v.status.value} speedup {v.speedup} ({rows[-1]['wall_s']} s)", flush=True)
    return rows


def spread_pct(values: list[float]) -> float:
    return 100.0 * (max(values) - min(values)) / statistics.median(values) if values else 0.0


def judgement_spreads(rows: list[dict]) -> list[dict]:
    done = [r for r in rows if r.get("workloads")]
    if not done:
        return []
    out = []
    for i, w in enumerate(done[0]["workloads"]):
        cand = [r["workloads"][i]["median_ms"] for r in done if i < len(r["workloads"])]
        ref = [r["workloads"][i]["reference_ms"] for r in done if i < len(r["workloads"])]
        out.append({"axes": w["axes"], "candidate_spread_pct": round(spread_pct(cand), 3),
                    "reference_spread_pct": round(spread_pct(ref), 3)})
    return out


def placements(kernel: str, entry: str, shape: list[int], spacers_mib: list[int], rounds: int,
               repeats: int) -> list[dict]:
    """Per spacer size: ``repeats`` medians (each of ``rounds`` batches) at that placement."""
    import torch

    spec = importlib.util.spec_from_file_location("cand", kernel)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    fn = getattr(mod, entry)
    per_set = 2 * shape[0] * shape[1] * 2  # bf16 in and out
    k = max(2, (1 << 30) // per_set)
    rows = []
    for mib in spacers_mib:
        torch.cuda.empty_cache()
        spacer = torch.empty(mib << 20, dtype=torch.uint8, device="cuda") if mib else None
        xs = [torch.randn(*shape, device="cuda", dtype=torch.bfloat16) for _ in range(k)]
        w = torch.randn(shape[-1], device="cuda", dtype=torch.bfloat16)
        outs = [fn(x, w) for x in xs]
        torch.cuda.synchronize()
        medians = []
        for _ in range(repeats):
            samples = []
            for _ in range(rounds):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                torch.cuda._sleep(2_000_000)  # the host ahead of the device
                a.record()
                for x in xs:
                    fn(x, w)
                b.record()
                b.synchronize()
                samples.append(a.elapsed_time(b) / k)
            medians.append(statistics.median(samples))
        rows.append({"spacer_mib": mib, "k": k, "x_addr_mod_2mib": [x.data_ptr() % (2 << 20) for x in xs[:2]],
                     "out_addr": [o.data_ptr() for o in outs[:2]], "medians_ms": [round(m, 5) for m in medians],
                     "within_spread_pct": round(spread_pct(medians), 3)})
        print(f"spacer {mib:5d} MiB: medians {[round(m, 4) for m in medians]} ms", flush=True)
        del spacer, xs, outs
    return rows


def footprints(kernel: str, entry: str, shape: list[int], ks: list[int], rounds: int) -> list[dict]:
    """Per K: the per-call median over ``rounds`` batches with K distinct sets and with one."""
    import torch

    spec = importlib.util.spec_from_file_location("cand_fp", kernel)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    fn = getattr(mod, entry)
    per_set = 2 * shape[0] * shape[1] * 2  # bf16 in and out
    w = torch.randn(shape[-1], device="cuda", dtype=torch.bfloat16)
    rows = []
    for k in ks:
        torch.cuda.empty_cache()
        xs = [torch.randn(*shape, device="cuda", dtype=torch.bfloat16) for _ in range(k)]
        row = {"k": k, "footprint_mib": k * per_set >> 20}
        for label, sets in (("distinct", xs), ("one_set", [xs[0]] * k)):
            samples = []
            for r in range(rounds + 2):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                torch.cuda._sleep(2_000_000)
                a.record()
                outs = [fn(x, w) for x in sets]  # every output kept until the batch ends
                b.record()
                b.synchronize()
                del outs
                if r >= 2:
                    samples.append(a.elapsed_time(b) / k)
            row[f"{label}_ms"] = round(statistics.median(samples), 5)
        rows.append(row)
        print(f"K {k:3d} ({row['footprint_mib']:6d} MiB): distinct {row['distinct_ms']:.4f} ms, "
              f"one set {row['one_set_ms']:.4f} ms", flush=True)
        del xs
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", required=True)
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--entry", required=True)
    ap.add_argument("--shape", default="16384,8192")
    ap.add_argument("--judgements", type=int, default=4)
    ap.add_argument("--no-cli-judgements", dest="judgements_cli", action="store_false",
                    help="skip part A (forge judge runs)")
    ap.add_argument("--judge-timeout", type=float, default=120.0)
    ap.add_argument("--spacers", default="0,2,6,64,258,1030,4098")
    ap.add_argument("--footprints", default="", help="batch sizes K for part C, e.g. 1,2,4,8,16,28")
    ap.add_argument("--reps-list", default="", help="part D: K values, e.g. 8,32")
    ap.add_argument("--out", required=True)
    ap.add_argument("--commit", required=True)
    a = ap.parse_args()
    from gpu_judge import meta

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    result = {"meta": meta(a.commit), "task": a.task, "kernel": a.kernel}
    shape = [int(s) for s in a.shape.split(",")]
    result["placements"] = placements(a.kernel, a.entry, shape, [int(s) for s in a.spacers.split(",")], 20, 3)
    medians = [statistics.median(r["medians_ms"]) for r in result["placements"]]
    result["across_placements_spread_pct"] = round(spread_pct(medians), 3)
    (out / "placement_diag.json").write_text(json.dumps(result, indent=1))
    if a.footprints:
        result["footprints"] = footprints(a.kernel, a.entry, shape, [int(k) for k in a.footprints.split(",")], 10)
        (out / "placement_diag.json").write_text(json.dumps(result, indent=1))
    for reps in [int(r) for r in a.reps_list.split(",") if r]:
        rows = judgements_at(a.task, a.kernel, a.judgements, reps)
        result.setdefault("fixed_k", []).append({"reps": reps, "judgements": rows,
                                                 "spreads": judgement_spreads(rows)})
        (out / "placement_diag.json").write_text(json.dumps(result, indent=1))
        for s in result["fixed_k"][-1]["spreads"]:
            print(f"K={reps} {s['axes']}: candidate {s['candidate_spread_pct']} % reference "
                  f"{s['reference_spread_pct']} %", flush=True)
    result["judgements"] = judgements(a.task, a.kernel, a.judgements, a.judge_timeout) if a.judgements_cli else []
    result["judgement_spreads"] = judgement_spreads(result["judgements"])
    (out / "placement_diag.json").write_text(json.dumps(result, indent=1))
    print(f"across placements: {result['across_placements_spread_pct']} % "
          f"(within one: {max(r['within_spread_pct'] for r in result['placements'])} % at most)")
    for s in result["judgement_spreads"]:
        print(f"{s['axes']}: candidate {s['candidate_spread_pct']} % reference {s['reference_spread_pct']} % "
              f"across {a.judgements} judgements")


if __name__ == "__main__":
    main()
