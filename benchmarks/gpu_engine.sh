#!/usr/bin/env bash
# GPU proof for the run engine (issue 6): `forge run` with the built-in agent on the H200 for
# rmsnorm, softmax, swiglu and matmul, small budgets, then a tarball of each run's report,
# ledger, curriculum, best kernel and verdict under $OUT (the device tool returns <= 8 files).
# Run there as: source scripts/gpu_env.sh && bash benchmarks/gpu_engine.sh
# (EXTRA_ARGS="--target 30" passes more flags to every `forge run`.)
set -uo pipefail
ITER=${ITER:-6}
MINUTES=${MINUTES:-1.5}
TASKS=${TASKS:-"rmsnorm softmax swiglu matmul"}
WORK=${WORK:-/tmp/forge_engine}
rm -rf "$WORK" && mkdir -p "$WORK"
for task in $TASKS; do
  t=$task; i=2  # a task listed twice runs twice, in rmsnorm, rmsnorm_2, ...
  while [ -e "$WORK/$t.log" ]; do t="${task}_$i"; i=$((i + 1)); done
  echo "=== forge run tasks/$task (builtin, local, <= $ITER attempts, <= $MINUTES min)"
  start=$(date +%s)
  timeout -s KILL "${RUN_TIMEOUT:-110}" python3 -m forgekernel.cli run "tasks/$task" --out "$WORK/$t" --delivery local --agent builtin \
    --max-iterations "$ITER" --max-minutes "$MINUTES" ${EXTRA_ARGS:-} > "$WORK/$t.log" 2>&1
  rc=$?
  echo "exit $rc after $(( $(date +%s) - start )) s"
  echo "$rc" > "$WORK/$t.exit"
  grep -E "^(best|target|report)" "$WORK/$t.log" || tail -5 "$WORK/$t.log"
done
python3 - "$WORK" <<'PY'
import json, os, subprocess, sys, datetime, platform
from pathlib import Path
import torch, triton
work = Path(sys.argv[1])
meta = {"device": torch.cuda.get_device_name(0), "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "torch": torch.__version__, "triton": triton.__version__, "python": platform.python_version(),
        "commit": os.environ.get("COMMIT") or subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip(),
        "runs": {}}
for log in sorted(work.glob("*.log")):
    t = log.stem
    meta["runs"][t] = {"exit": int((work / f"{t}.exit").read_text()), "tail": log.read_text().splitlines()[-6:]}
    ledger = work / t / "ledger.jsonl"
    events = [json.loads(line) for line in ledger.read_text().splitlines()] if ledger.is_file() else []
    judged = {e["candidate"]: e["verdict"] for e in events if "kind" not in e and e.get("verdict")}
    pairs = []  # the best's search verdict against its confirmation (the same candidate re-judged)
    for c in (e for e in events if e.get("kind") == "confirm"):
        a, b = (judged.get(c["candidate"]) or {}).get("speedup"), c["verdict"].get("speedup")
        if a and b:
            pairs.append({"candidate": c["candidate"], "attempt": a, "confirmation": b,
                          "diff_pct": round((b / a - 1) * 100, 3)})
    meta["runs"][t]["attempt_vs_confirmation"] = pairs
    for p in pairs:
        print(f"{t}: attempt {p['attempt']:.4g}x, confirmation {p['confirmation']:.4g}x ({p['diff_pct']:+.2f} %)")
(work / "engine_meta.json").write_text(json.dumps(meta, indent=2))
PY
mkdir -p "${OUT:-/tmp}"  # OUT=$OUT/sub keeps two calls' tarballs apart
tar czf "${OUT:-/tmp}/engine_runs.tgz" -C "$WORK" --exclude=workspace --exclude=workspace.git --exclude=candidates --exclude=task .
echo "wrote ${OUT:-/tmp}/engine_runs.tgz"
