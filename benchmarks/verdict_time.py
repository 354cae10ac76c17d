"""Wall time of whole verdicts, as a user meets them: `forge judge TASK KERNEL` run N times
in a row in fresh processes, each verdict's phases (the verifier's clock), where its time went
(`profile.spent`, the executor's own steps as `executor:*`) and how many files of the
candidate's kept Triton cache its executor started with (0 at the first verdict).

    python3 benchmarks/verdict_time.py --task tasks/rmsnorm --kernel kernels/rmsnorm \
        --repeat 3 --out $OUT --commit SHA [--delivery local] [--profile]

--profile: each verdict's verifier also runs under cProfile (FK_PROFILE_VERIFIER); its stats go
to OUT/verifier_N.pstats and the 40 functions with the most cumulative time (25 by own time) to OUT/verifier_N.txt.

Writes OUT/verdict_time.json (device, date, versions, commit, one entry per verdict) and
prints one line per verdict. The candidate cache starts empty (XDG_CACHE_HOME under OUT).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path


def meta(commit: str, delivery: str) -> dict:
    import torch
    import triton

    gpu = torch.cuda.is_available() and delivery != "cpu"
    return {"device": torch.cuda.get_device_name(0) if gpu else "cpu-interpret",
            "date": datetime.datetime.now(datetime.UTC).isoformat(),
            "versions": {"torch": torch.__version__, "triton": triton.__version__,
                         "python": sys.version.split()[0]},
            "commit": commit}


def one(task: str, kernel: str, delivery: str, env: dict) -> dict:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "forgekernel.cli", "judge", task, kernel, "--json",
                           "--delivery", delivery], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    try:
        verdict = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return {"wall_s": round(wall, 2), "exit": proc.returncode, "error": (proc.stderr or proc.stdout)[-800:]}
    profile = verdict.get("profile") or {}
    return {"wall_s": round(wall, 2), "judge_wall_s": verdict.get("wall_s"), "exit": proc.returncode,
            "status": verdict.get("status"),
            "speedup": verdict.get("speedup"), "reason": verdict.get("reason", "")[:300],
            "kernel_cache_files": profile.get("kernel_cache_files"), "phases": profile.get("phases"),
            "spent": profile.get("spent"), "executor_boot": profile.get("executor_boot")}


def _top(stats: Path, out: Path) -> None:
    import io
    import pstats

    text = io.StringIO()
    for key, n in (("cumulative", 40), ("tottime", 25)):
        pstats.Stats(str(stats), stream=text).sort_stats(key).print_stats(n)
    out.write_text(text.getvalue())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", required=True)
    parser.add_argument("--kernel", required=True)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--delivery", default="auto")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--commit", default="")
    parser.add_argument("--profile", action="store_true", help="cProfile each verdict's verifier")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "XDG_CACHE_HOME": str(args.out / "xdg_cache")}
    result = {**meta(args.commit, args.delivery), "task": args.task, "kernel": args.kernel, "verdicts": []}
    for n in range(args.repeat):
        stats = args.out / f"verifier_{n + 1}.pstats"
        if args.profile:
            env["FK_PROFILE_VERIFIER"] = str(stats.resolve())
        row = one(args.task, args.kernel, args.delivery, env)
        if args.profile and stats.exists():
            _top(stats, args.out / f"verifier_{n + 1}.txt")
        result["verdicts"].append(row)
        (args.out / "verdict_time.json").write_text(json.dumps(result, indent=1) + "\n")
        phases = row.get("phases") or {}
        print(f"verdict {n + 1}: {row.get('status', 'error')} {row.get('speedup')} in {row['wall_s']} s "
              f"(cache files {row.get('kernel_cache_files')}; "
              + ", ".join(f"{k} {v}" for k, v in phases.items()) + ")", flush=True)
        if "error" in row:
            print(row["error"], flush=True)


if __name__ == "__main__":
    main()
