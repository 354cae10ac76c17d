#!/usr/bin/env bash
# Issue 18 on the machine at hand: search each task again with the built-in agent (`forge run`),
# then time the new best kernel beside the committed one (kernels/<task>/kernel.py) and the
# peers in one `forge compare` per task, so that old and new are compared in the same process
# with one method. Nothing in kernels/ is changed; that is a decision made from the JSON.
# Run there as: source scripts/gpu_env.sh && COMMIT=<sha> bash benchmarks/gpu_retune.sh
# TASKS (default: the four that trailed torch.compile on the H200 at 6b9c09f), ITER attempts
# and MINUTES wall minutes per run, RUN_TIMEOUT/COMPARE_TIMEOUT seconds per step;
# DELIVERY=cpu runs the same steps under the CPU interpreter (smoke shapes, cpu-interpret).
# At the defaults a task takes up to RUN_TIMEOUT + COMPARE_TIMEOUT + 20 s (260 s): two tasks
# fit one 10-minute device call, so give each call TASKS="layernorm softmax", then the rest.
# Writes $OUT/retune.tgz (each run dir without its workspace and candidates, each task's
# compare JSON, PNG and log) and $OUT/retune_table.md (benchmarks/compare_table.py).
set -uo pipefail
TASKS=${TASKS:-"layernorm softmax rope cross_entropy"}
ITER=${ITER:-6}
MINUTES=${MINUTES:-2}
# a run stops at the task's target speedup over eager; the retune wants the whole budget searched
TARGET=${TARGET:-1000}
RUN_TIMEOUT=${RUN_TIMEOUT:-150}
COMPARE_TIMEOUT=${COMPARE_TIMEOUT:-90}
DELIVERY=${DELIVERY:-local}
WORK=${WORK:-/tmp/forge_retune}
DEST=${OUT:-/tmp}
rm -rf "$WORK" && mkdir -p "$WORK" "$DEST"
workloads=all; [ "$DELIVERY" = cpu ] && workloads=smoke
for t in $TASKS; do
  echo "=== forge run tasks/$t ($DELIVERY, <= $ITER attempts, <= $MINUTES min)"
  start=$(date +%s)
  timeout -s KILL "$RUN_TIMEOUT" python3 -m forgekernel.cli run "tasks/$t" --out "$WORK/$t" --delivery "$DELIVERY" \
    --agent builtin --max-iterations "$ITER" --max-minutes "$MINUTES" --target "$TARGET" > "$WORK/$t.run.log" 2>&1
  echo "exit $? after $(( $(date +%s) - start )) s"
  grep -E "^(best|target)" "$WORK/$t.run.log" || tail -n 3 "$WORK/$t.run.log"
  kernels=("kernels/$t/kernel.py")
  [ -f "$WORK/$t/best/kernel.py" ] && kernels+=("$WORK/$t/best/kernel.py")
  echo "=== forge compare $t: ${kernels[*]}"
  timeout -s KILL $(( COMPARE_TIMEOUT + 20 )) python3 -m forgekernel.cli compare "$t" "${kernels[@]}" \
    --delivery "$DELIVERY" --workloads "$workloads" --timeout "$COMPARE_TIMEOUT" --commit "${COMMIT:-unknown}" \
    --json "$WORK/$t.json" --plot "$WORK/$t.png" > "$WORK/$t.compare.log" 2>&1
  echo "exit $?"
  grep -E "^(forge: |wrote )" "$WORK/$t.compare.log" || tail -n 3 "$WORK/$t.compare.log"
done
if ls "$WORK"/*.json > /dev/null 2>&1; then
  table=$PWD/benchmarks/compare_table.py
  (cd "$WORK" && python3 "$table" ./*.json > "$DEST/retune_table.md") && cat "$DEST/retune_table.md"
fi
# old against new, per workload: device time where there is one (GPU), else per call
python3 - "$WORK" <<'PY' | tee "$DEST/retune_old_new.txt"
import json, sys
from pathlib import Path
for path in sorted(Path(sys.argv[1]).glob("*.json")):
    data = json.loads(path.read_text())
    for wl in data["workloads"]:
        rows = [r for r in wl["rows"] if r["kind"] == "kernel"]
        ms = [r.get("device_ms") or r.get("per_call_ms") for r in rows]
        label = " x ".join(f"{k}={v}" for k, v in wl.get("axes", {}).items())
        if len(rows) == 2 and all(ms):
            print(f"{data['task']:14} {label:34} committed {ms[0]:.4g} ms  new {ms[1]:.4g} ms  new/committed speed {ms[0] / ms[1]:.3f}x")
        else:
            print(f"{data['task']:14} {label:34} " + "  ".join(f"{r['name']} {r['status']}" for r in rows))
PY
tar czf "$DEST/retune.tgz" -C "$WORK" --exclude='*/workspace' --exclude='*/workspace.git' --exclude='*/candidates' \
  --exclude='*/task' --exclude='*/.lock' .
echo "wrote $DEST/retune.tgz"
