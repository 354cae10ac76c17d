"""Does a kernel run slower on device memory another process exported (CUDA IPC), and does
that vary from one importing process to the next?

The judge's executor ran the candidate on inputs in a pool the verifier allocated and
exported (``forgekernel.judge.ipc``; since 4175e09 the executor allocates and exports its own
pool, the variant ``own_pool_k_sets_held`` here); the candidate's time moved by up to 7 % between
judgements while the reference's (the verifier's own memory, three calls a batch) moved
by 0.4 % at most, and a plain in-process timing of the same kernel on two input sets was
0.18 ms where the judge said 0.25 ms (``placement_diag.py``). This script separates the
causes: the parent exports one pool holding, per workload, as many input sets K as the judge
gives a candidate's batch; each of ``--children`` fresh child processes imports it and
times, round after round, K calls (CUDA events) on: the K imported sets with every output
held until the batch ends (the judge's way), the K sets cloned locally (held), two imported
sets used in turn (held, then freed call by call) and two local sets (freed). IPC memory,
the batch's footprint (K inputs and K outputs: up to 8 GiB) and held outputs each show.

    source scripts/gpu_env.sh
    python3 benchmarks/ipc_diag.py --kernel kernels/rmsnorm/kernel.py --entry rmsnorm --out $OUT/ipc --commit SHA

Writes OUT/ipc_diag.json (device, date, versions, commit, per child and variant the median
ms per call) and prints the spread of each variant's medians across children.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO / "src"))

CHILD = r"""
import importlib.util, json, statistics, sys
import torch
from forgekernel.judge import ipc
spec = json.loads(sys.argv[1])
k_spec = importlib.util.spec_from_file_location("cand", spec["kernel"])
mod = importlib.util.module_from_spec(k_spec); k_spec.loader.exec_module(mod)
fn = getattr(mod, spec["entry"])
pool = ipc.ImportedPool(spec["pool"])


def batch(sets, w, hold):
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(1_000_000)
    kept = []
    a.record()
    for x in sets:
        y = fn(x, w)
        if hold:
            kept.append(y)
    b.record()
    b.synchronize()
    return a.elapsed_time(b) / len(sets)


rows = []
for wl in spec["workloads"]:
    xs = [pool.tensor(ipc.slice_of(s)) for s in wl["xs"]]
    w = pool.tensor(ipc.slice_of(wl["w"]))
    k = len(xs)
    local = [x.clone() for x in xs]
    two = [xs[i % 2] for i in range(k)]
    own_slices, own_bytes = ipc.layout(xs)
    own = ipc.ExportedPool(own_bytes)  # this process's cuMemAlloc'd, exported pool (the executor's way)
    owned = [own.view(sl) for sl in own_slices]
    for o, x in zip(owned, xs):
        o.copy_(x)
    variants = {  # (input sets, outputs held until the batch ends)
        "imported_k_sets_held": (xs, True),  # the judge's way before 4175e09
        "own_pool_k_sets_held": (owned, True),  # the judge's way since
        "local_k_sets_held": (local, True),
        "imported_2_sets_held": (two, True),
        "imported_2_sets_freed": (two, False),
        "local_2_sets_freed": ([local[i % 2] for i in range(k)], False),
    }
    samples = {name: [] for name in variants}
    for r in range(spec["rounds"] + 1):
        for name, (sets, hold) in variants.items():
            ms = batch(sets, w, hold)
            if r:
                samples[name].append(ms)
    rows.append({"shape": wl["shape"], "k": k,
                 "median_ms": {n: round(statistics.median(v), 5) for n, v in samples.items()}})
    del local, variants, two, owned
    own.free()
    torch.cuda.empty_cache()
print(json.dumps(rows))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--entry", required=True)
    ap.add_argument("--shapes", default="65536x1024,32768x4096,4096x4096")
    ap.add_argument("--children", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--out", required=True)
    ap.add_argument("--commit", required=True)
    a = ap.parse_args()
    import torch
    from gpu_judge import meta

    from forgekernel.judge import ipc

    shapes = [tuple(int(v) for v in s.split("x")) for s in a.shapes.split(",")]
    tensors, plan = [], []
    for m, n in shapes:  # K as the judge sizes a candidate's batch (gated.candidate_calls)
        per_set = 2 * m * n * 2
        k = max(2, min(256, (8 << 30) // per_set, max(int(5.0 / (per_set / 3.0e9)) + 1, -(-(256 << 20) // (m * n * 2)))))
        plan.append((m, n, k))
        tensors += [torch.empty(m, n, dtype=torch.bfloat16, device="meta")] * k
        tensors.append(torch.empty(n, dtype=torch.bfloat16, device="meta"))
    slices, nbytes = ipc.layout(tensors)
    pool = ipc.ExportedPool(nbytes)
    workloads, at = [], 0
    for m, n, k in plan:
        xs = slices[at:at + k]
        w = slices[at + k]
        at += k + 1
        for s in xs:
            pool.view(s).normal_()
        pool.view(w).normal_(1.0, 0.1)
        workloads.append({"shape": [m, n], "xs": [vars(s) for s in xs], "w": vars(w)})
    torch.cuda.synchronize()
    spec = {"kernel": a.kernel, "entry": a.entry, "pool": pool.describe(), "workloads": workloads,
            "rounds": a.rounds}
    children = []
    for c in range(a.children):
        proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(spec)], capture_output=True, text=True,
                              timeout=300)
        if proc.returncode:
            children.append({"error": proc.stderr[-2000:]})
            print(f"child {c}: failed\n{proc.stderr[-1500:]}", flush=True)
            continue
        rows = json.loads(proc.stdout.strip().splitlines()[-1])
        children.append({"rows": rows})
        print(f"child {c}: " + "; ".join(f"{r['shape']}: {r['median_ms']}" for r in rows), flush=True)
    spreads = []
    done = [c["rows"] for c in children if "rows" in c]
    for i, (m, n, k) in enumerate(plan):
        for variant in done[0][i]["median_ms"] if done else ():
            vals = [rows[i]["median_ms"][variant] for rows in done]
            if vals:
                spread = 100.0 * (max(vals) - min(vals)) / statistics.median(vals)
                spreads.append({"shape": [m, n], "k": k, "variant": variant, "spread_pct": round(spread, 3),
                                "median_ms": statistics.median(vals)})
                print(f"{m}x{n} {variant:22s}: median {statistics.median(vals):.5f} ms, spread across "
                      f"{len(vals)} children {spread:.2f} %")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "ipc_diag.json").write_text(json.dumps({"meta": meta(a.commit), "kernel": a.kernel,
                                                   "children": children, "spreads": spreads}, indent=1))
    pool.free()


if __name__ == "__main__":
    main()
