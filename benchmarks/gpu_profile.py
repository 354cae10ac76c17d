"""GPU run of `forge profile`: every example task's reference, plus ncu on Triton candidates.

Run on the H200 machine:  python3 benchmarks/gpu_profile.py --out DIR --commit SHA
Writes DIR/profile_<name>.json (device, date, versions, commit, profiles) step by step and
keeps ncu's raw CSV files under DIR/ncu/ (they become parser fixtures). Stops starting new
steps when --budget-s is nearly spent. Prints a short table last.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def meta(commit: str) -> dict:
    import torch
    import triton

    ncu = shutil.which("ncu")
    ncu_version = ""
    if ncu:
        out = subprocess.run([ncu, "--version"], capture_output=True, text=True, check=False).stdout
        ncu_version = out.strip().splitlines()[-1] if out.strip() else ""
    return {"device": torch.cuda.get_device_name(0), "date": datetime.date.today().isoformat(),
            "versions": {"torch": torch.__version__, "triton": triton.__version__,
                         "python": sys.version.split()[0], "ncu": ncu_version},
            "commit": commit}


def step(out: Path, name: str, info: dict, task_dir: Path, **kw) -> dict:
    from forgekernel.delivery.local import LocalGpuRunner
    from forgekernel.profile.api import profile_task
    from forgekernel.task import load_task

    task = load_task(task_dir)
    start = time.monotonic()
    try:
        profiles = [p.model_dump() for p in profile_task(task, LocalGpuRunner(), **kw)]
        error = None
    except Exception as exc:  # recorded in the result file; the next step still runs
        profiles, error = [], f"{type(exc).__name__}: {exc}"
    doc = {**info, "task": task.name, "kernel": str(kw.get("kernel") or "") or None,
           "ncu": kw.get("ncu", "auto"), "wall_s": round(time.monotonic() - start, 1),
           "error": error, "profiles": profiles}
    (out / f"profile_{name}.json").write_text(json.dumps(doc, indent=1))
    return doc


def row(doc: dict) -> list[str]:
    lines = []
    for p in doc["profiles"]:
        m = p["metrics"]
        axes = "x".join(str(v) for v in p["axes"].values())
        lines.append(f"{doc['task'][:18]:<18} {('cand' if doc['kernel'] else 'ref'):<4} {axes:<18} "
                     f"{m.get('median_ms', 0):>9.4f} ms {m.get('launches', '-'):>3} launches "
                     f"sol {m.get('sol_pct', 0):>5.1f}% {m.get('bound', '-'):<8} "
                     f"dram {m.get('dram_pct', float('nan')):>5.1f}% regs {m.get('regs', '-')}")
    if doc["error"]:
        lines.append(f"{doc['task']}: ERROR {doc['error'][:300]}")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--commit", default="unknown")
    ap.add_argument("--budget-s", type=float, default=270.0)
    ap.add_argument("--only", default="", help="comma-separated step names to run")
    args = ap.parse_args()
    out = args.out
    (out / "ncu").mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    info = meta(args.commit)
    ncu = shutil.which("ncu")
    if ncu:
        q = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, check=False)
        (out / "ncu" / "query_metrics.txt").write_text(q.stdout + q.stderr)
    tasks = REPO / "tasks"
    kernels = REPO / "benchmarks" / "kernels"
    from forgekernel.records import Workload

    steps = [
        ("rmsnorm_triton", tasks / "rmsnorm", dict(kernel=kernels / "rmsnorm_triton", ncu="on",
                                                   static=False, ncu_dir=out / "ncu" / "rmsnorm_triton")),
        ("rmsnorm_ref_ncu", tasks / "rmsnorm", dict(ncu="on", ncu_dir=out / "ncu" / "rmsnorm_ref",
                                                    workloads=(Workload(axes={"M": 16384, "N": 8192}),))),
        *[(f"ref_{d.name}", d, dict(ncu="off")) for d in sorted(tasks.iterdir()) if (d / "task.toml").is_file()],
        ("matmul_triton", tasks / "matmul", dict(kernel=kernels / "matmul_triton", ncu="on", static=False,
                                                 ncu_dir=out / "ncu" / "matmul_triton",
                                                 workloads=(Workload(axes={"M": 4096, "N": 4096, "K": 4096}),))),
    ]
    only = {s for s in args.only.split(",") if s}
    table = []
    for name, task_dir, kw in steps:
        if only and name not in only:
            continue
        left = args.budget_s - (time.monotonic() - t0)
        if left < 25:
            table.append(f"{name}: skipped, budget spent")
            continue
        doc = step(out, name, info, task_dir, **kw)
        table += row(doc)
        print(f"[{time.monotonic() - t0:6.1f}s] {name} done ({doc['wall_s']} s)", flush=True)
    print(f"{info['device']} torch {info['versions']['torch']} triton {info['versions']['triton']} "
          f"ncu {info['versions']['ncu']}")
    print("\n".join(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
