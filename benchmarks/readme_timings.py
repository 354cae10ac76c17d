"""The README's commands timed on a fresh clone: the quickstart and "What a session looks like".

    python3 benchmarks/readme_timings.py --clone /tmp/fresh --out benchmarks/results/readme_timings_cpu_DATE.json

Clones this repository's committed HEAD into --clone (which must not exist), then runs, in
order and timing each with the wall clock: `bash scripts/install.sh`, `.venv/bin/forge run
tasks/rmsnorm` (the quickstart's main job), then the session's commands as the README lists
them. Records each command's exit code, wall seconds and last output line, plus the
machine (cores, load average before and after), the commit and the date. The README quotes
the JSON this writes; on a machine without a GPU every timing of a kernel is cpu-interpret.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SESSION = [
    ["--help"],
    ["doctor"],
    ["new", "tasks/rmsnorm", "--dry-run"],
    ["new", "tasks/rmsnorm", "--out", ".artifacts/my_rmsnorm"],
    ["run", ".artifacts/my_rmsnorm"],
    ["status", ".artifacts/my_rmsnorm"],
    ["judge", "tasks/rmsnorm", ".artifacts/my_rmsnorm/best/kernel.py", "--json"],
    ["profile", "tasks/rmsnorm", "--json"],
    ["kb", "list", "--arch", "sm90"],
]
"""The commands of the README's "What a session looks like", in its order."""


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> dict:
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]
    row = {"command": " ".join(argv), "exit": proc.returncode, "wall_s": round(wall, 2),
           "last_line": lines[-1][:200] if lines else ""}
    if "run" in argv[1:2]:
        row["attempts"] = attempts(proc.stdout + proc.stderr)
    print(f"{row['wall_s']:>8.2f} s  exit {row['exit']}  {row['command']}", flush=True)
    return row


def attempts(text: str) -> int:
    return sum(1 for ln in text.splitlines() if ln.startswith("[judged]"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clone", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if args.clone.exists():
        print(f"{args.clone}: exists; give a path for a fresh clone", file=sys.stderr)
        return 2
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                            text=True, check=True).stdout.strip()
    subprocess.run(["git", "clone", "-q", str(REPO), str(args.clone)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FK_", "VIRTUAL_ENV"))}
    doc = {"date": datetime.date.today().isoformat(), "commit": commit, "cpus": os.cpu_count(),
           "machine": platform.machine(), "python": sys.version.split()[0],
           "loadavg_before": os.getloadavg(), "quickstart": [], "session": []}
    doc["quickstart"].append(timed(["bash", "scripts/install.sh"], args.clone, env))
    doc["quickstart"].append(timed([".venv/bin/forge", "run", "tasks/rmsnorm"], args.clone, env))
    doc["session"] = [timed([".venv/bin/forge", *argv], args.clone, env) for argv in SESSION]
    doc["loadavg_after"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
