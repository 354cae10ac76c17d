"""Wall seconds of one full judge verdict: rmsnorm, the correct one-row-per-program kernel.

    python benchmarks/judge_overhead.py --delivery cpu   [--out FILE] [--commit SHA]
    python3 benchmarks/judge_overhead.py --delivery local [--out FILE] [--commit SHA]

``cpu``: the smoke workloads plus hidden ones under the Triton interpreter, the task's trials,
cpu-interpret timing. ``local``: every workload (and the hidden ones), the task's trials and
device timing; the first run may compile the Triton kernel, the later runs find it cached.
Each run is a fresh worker process, as in `forge judge`.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KERNEL = REPO / "tests" / "fixtures" / "kernels" / "correct" / "rmsnorm_rowwise"


def measure(delivery: str, runs: int = 2) -> dict:
    """Judge the kernel ``runs`` times; wall seconds per run and what each verdict said."""
    from forgekernel.delivery import make_runner
    from forgekernel.judge import JudgeOptions, judge
    from forgekernel.task import load_task

    task = load_task(REPO / "tasks" / "rmsnorm")
    rows = []
    for i in range(runs):
        start = time.perf_counter()
        verdict = judge(task, KERNEL, make_runner(delivery), JudgeOptions())
        wall = time.perf_counter() - start
        rows.append({"run": i, "wall_s": round(wall, 3), "status": verdict.status.value,
                     "device": verdict.device, "versions": verdict.versions,
                     "workloads": sum(not w.hidden for w in verdict.workloads),
                     "hidden_workloads": sum(w.hidden for w in verdict.workloads),
                     "trials": verdict.profile.get("trials"), "speedup": verdict.speedup,
                     "noise_floor": verdict.noise_floor,
                     "timing_label": verdict.profile.get("timing_label"),
                     "phases": verdict.profile.get("phases"),
                     "spent": verdict.profile.get("spent")})
    walls = [r["wall_s"] for r in rows]
    return {"delivery": delivery, "task": "rmsnorm", "kernel": str(KERNEL.relative_to(REPO)),
            "runs": rows, "first_s": walls[0], "warm_median_s": statistics.median(walls[1:] or walls)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delivery", choices=("cpu", "local"), default="cpu")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--commit", default="")
    args = parser.parse_args()
    result = measure(args.delivery, args.runs)
    result.update(date=datetime.date.today().isoformat(), commit=args.commit,
                  host_python=platform.python_version(), cpus=os.cpu_count(),
                  loadavg_after=[round(x, 2) for x in os.getloadavg()])
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1))
    for r in result["runs"]:
        label = f" [{r['timing_label']}]" if r["timing_label"] else ""
        print(f"run {r['run']}: {r['wall_s']:.2f} s  {r['status']}  {r['workloads']} workloads + "
              f"{r['hidden_workloads']} hidden x {r['trials']} trials{label}")
        print("   phases:", " ".join(f"{k}={v}" for k, v in (r["phases"] or {}).items()))
        print("   spent:", " ".join(f"{k}={v['s']}/{v['n']}" for k, v in (r["spent"] or {}).items()))
    print(f"{args.delivery}: first {result['first_s']:.2f} s, warm median {result['warm_median_s']:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
