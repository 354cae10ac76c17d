#!/usr/bin/env bash
# GPU run of `forge compare` (issue 18): each example task's kernel (kernels/<task>/kernel.py)
# against eager, torch.compile, the task's [[peer]] library calls, Liger and QuACK where
# installed and a size-matched copy (a read-only pass for reductions), on every workload of
# the task, all eight tasks in one device call. Per task: its JSON, PNG and log; then the
# summary table (benchmarks/compare_table.py) and compare_summary.json, all in one tarball
# under $OUT with the summary and table beside it.
# Run there as: source scripts/gpu_env.sh && COMMIT=<sha> bash benchmarks/gpu_compare.sh
# Each task gets an equal share of what is left of TOTAL_S (at most TASK_MAX_S); its worker
# starts no new workload after 3/4 of that share (those are "not reached" in its JSON).
# EXTRA_ARGS="--skip compile" passes more flags to every `forge compare`.
set -uo pipefail
TASKS=${TASKS:-"rmsnorm fused_add_rmsnorm layernorm softmax cross_entropy swiglu rope matmul"}
TOTAL_S=${TOTAL_S:-540}
TASK_MAX_S=${TASK_MAX_S:-150}
WORK=${WORK:-/tmp/forge_compare}
DEST=${OUT:-/tmp}
DELIVERY=${DELIVERY:-local}    # DELIVERY=cpu WORKLOADS=smoke: the same script under the CPU interpreter
WORKLOADS=${WORKLOADS:-all}
rm -rf "$WORK" && mkdir -p "$WORK" "$DEST"
begin=$(date +%s)
left=$(wc -w <<< "$TASKS")
for t in $TASKS; do
  share=$(( (TOTAL_S - ($(date +%s) - begin)) / left ))
  (( share > TASK_MAX_S )) && share=$TASK_MAX_S
  left=$(( left - 1 ))
  if (( share < 30 )); then
    echo "=== $t: not run, ${share} s left of TOTAL_S=$TOTAL_S"
    echo "not run" > "$WORK/$t.exit"
    continue
  fi
  echo "=== forge compare $t ($DELIVERY, $WORKLOADS workloads, <= $share s)"
  start=$(date +%s)
  # shellcheck disable=SC2086
  timeout -s KILL $(( share + 20 )) python3 -m forgekernel.cli compare "$t" --delivery "$DELIVERY" \
    --workloads "$WORKLOADS" --timeout "$share" --commit "${COMMIT:-unknown}" \
    --json "$WORK/$t.json" --plot "$WORK/$t.png" ${EXTRA_ARGS:-} > "$WORK/$t.log" 2>&1
  rc=$?
  echo "$rc" > "$WORK/$t.exit"
  echo "exit $rc after $(( $(date +%s) - start )) s"
  grep -E "^(forge: |wrote )" "$WORK/$t.log" || tail -n 3 "$WORK/$t.log"
done
if ls "$WORK"/*.json > /dev/null 2>&1; then  # the table names the files relative to $WORK
  table=$PWD/benchmarks/compare_table.py
  (cd "$WORK" && python3 "$table" ./*.json > compare_table.md)
fi
python3 - "$WORK" "$TASKS" <<'PY'
import datetime, json, sys
from pathlib import Path
work, tasks = Path(sys.argv[1]), sys.argv[2].split()
summary = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "tasks": {}}
for t in tasks:
    exit_file, data_file, log = work / f"{t}.exit", work / f"{t}.json", work / f"{t}.log"
    entry = {"exit": exit_file.read_text().strip() if exit_file.exists() else "missing",
             "json": data_file.name if data_file.exists() else None,
             "log_tail": log.read_text(errors="replace").splitlines()[-4:] if log.exists() else []}
    if data_file.exists():
        data = json.loads(data_file.read_text())
        summary.setdefault("device", data["device"])
        summary.setdefault("commit", data["commit"])
        summary.setdefault("versions", data["versions"])
        entry["workloads"] = len(data["workloads"])
        entry["not_reached"] = sum(1 for w in data["workloads"] if w.get("note"))
        entry["kernel_ok"] = all(r["status"] == "ok" for w in data["workloads"]
                                 for r in w["rows"] if r["kind"] == "kernel")
    summary["tasks"][t] = entry
(work / "compare_summary.json").write_text(json.dumps(summary, indent=2) + "\n")
print(json.dumps({t: {k: v for k, v in e.items() if k != "log_tail"} for t, e in summary["tasks"].items()}))
PY
tar czf "$DEST/compare.tgz" -C "$WORK" .
cp "$WORK/compare_summary.json" "$DEST/"
[ -f "$WORK/compare_table.md" ] && cp "$WORK/compare_table.md" "$DEST/"
echo "wrote $DEST/compare.tgz"
