"""`forge new --dry-run` on every KernelBench problem: wall time and peak memory of each.

Issue 14's bar: under 10 s and under 1 GB peak on this (2-core, no GPU) machine for any
problem. Each dry run is one `forge new FILE --dry-run --delivery cpu` process; its peak
resident memory is the child's own ``ru_maxrss`` (os.wait4), its wall time the parent's
clock around it. Writes one JSON (per-problem rows and a summary).

    python benchmarks/kb_dryrun.py KernelBench/level1 KernelBench/level2 --out results.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("levels", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--commit", default="")
    args = ap.parse_args()
    files = sorted(p for d in args.levels for p in d.glob("*.py"))
    rows = []
    for path in files:
        row = _measured(path, args.timeout)
        rows.append(row)
        print(f"{row['problem']:70s} exit {row['exit']}  {row['wall_s']:6.1f} s  "
              f"{row['peak_mb'] or 0:7.0f} MB  {row['error'][:60]}", flush=True)
    walls = [r["wall_s"] for r in rows]
    peaks = [r["peak_mb"] for r in rows if r["peak_mb"] is not None]
    summary = {"problems": len(rows), "exit_0": sum(r["exit"] == 0 for r in rows),
               "tracebacks": sum(r["traceback"] for r in rows),
               "under_10s": sum(w < 10 for w in walls), "under_1gb": sum(p < 1024 for p in peaks),
               "wall_s": {"median": statistics.median(walls), "max": max(walls)} if walls else {},
               "peak_mb": {"median": statistics.median(peaks), "max": max(peaks)} if peaks else {}}
    result = {"what": "forge new --dry-run --delivery cpu on every problem file",
              "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "commit": args.commit,
              "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                          "loadavg_before": os.getloadavg()}, "summary": summary, "rows": rows}
    args.out.write_text(json.dumps(result, indent=1))
    print(json.dumps(summary))
    return 0


def _measured(path: Path, timeout_s: float) -> dict:
    """One dry run, waited for with wait4 so that its rusage is the child's own."""
    env = {k: v for k, v in os.environ.items() if k != "FK_DELIVERY"}
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "forgekernel.cli", "new", str(path), "--dry-run",
                             "--delivery", "cpu"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=REPO)
    deadline = start + timeout_s
    err = ""
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.05)
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read() if proc.stderr else ""
    wall = time.monotonic() - start
    error = next((ln for ln in err.splitlines() if ln.startswith("forge: error")), "")
    return {"problem": f"{path.parent.name}/{path.name}", "exit": proc.returncode,
            "wall_s": round(wall, 2), "peak_mb": round(usage.ru_maxrss / 1024, 1),
            "error": error[:300], "traceback": "Traceback" in err}


if __name__ == "__main__":
    sys.exit(main())
