#!/usr/bin/env bash
# Self-evolution on the H200: `forge evolve` with the built-in agent for rmsnorm and softmax.
#
#   source scripts/gpu_env.sh && bash benchmarks/gpu_evolve.sh
#
# Small budgets so that both chains together finish in about 8 minutes: at most GENERATIONS
# generations, ITERS attempts and GEN_MINUTES wall minutes per generation, and no new
# generation once a chain's runs used CHAIN_MINUTES. Each task also has a hard TASK_TIMEOUT
# (a chain cut by it keeps its finished generations in lineage.json and can be resumed with
# `forge evolve DIR`). The reference is not profiled (PROFILE=1 to profile it).
#
# Writes under $OUT (default /tmp/forge_evolve_out): evolve_<task>/ with lineage.json,
# lineage.md, lineage.png, evolve.toml, the sealed kernels and their judgements, and per
# generation report.md, run.toml, ledger.jsonl, curricula, carry.json, best/ and plots/;
# evolve_<task>.log (the forge output); gpu_evolve.json (device, date, versions, commit, every
# lineage). Prints a table last.
set -u
OUT=${OUT:-/tmp/forge_evolve_out}
GENERATIONS=${GENERATIONS:-3}
ITERS=${ITERS:-4}
GEN_MINUTES=${GEN_MINUTES:-1.0}
CHAIN_MINUTES=${CHAIN_MINUTES:-2.5}
TASK_TIMEOUT=${TASK_TIMEOUT:-225}
TASKS=${TASKS:-"rmsnorm softmax"}
DELIVERY=${DELIVERY:-local}   # DELIVERY=cpu: a dry run of this script on a machine without a GPU
PROFILE_FLAG=--no-profile
[ "${PROFILE:-0}" = "1" ] && PROFILE_FLAG=--profile
COMMIT=${COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
WORK=$(mktemp -d /tmp/forge_evolve.XXXXXX)
mkdir -p "$OUT"

for task in $TASKS; do
  chain="$WORK/evolve_$task"
  start=$(date +%s)
  timeout -s KILL "$TASK_TIMEOUT" python3 -m forgekernel.cli evolve "tasks/$task" \
    --generations "$GENERATIONS" --max-iterations "$ITERS" --max-minutes "$GEN_MINUTES" \
    --chain-minutes "$CHAIN_MINUTES" --delivery "$DELIVERY" --agent builtin $PROFILE_FLAG --out "$chain" \
    > "$OUT/evolve_$task.log" 2>&1
  rc=$?
  echo "$task: exit $rc after $(( $(date +%s) - start )) s" | tee -a "$OUT/evolve_$task.log"
  echo "$rc $(( $(date +%s) - start ))" > "$chain.status"
  dest="$OUT/evolve_$task"
  mkdir -p "$dest"
  for f in lineage.json lineage.md lineage.png evolve.toml; do
    [ -f "$chain/$f" ] && cp "$chain/$f" "$dest/"
  done
  [ -d "$chain/sealed" ] && cp -r "$chain/sealed" "$dest/"
  for gen in "$chain"/gen_*; do
    [ -d "$gen" ] || continue
    g="$dest/$(basename "$gen")"
    mkdir -p "$g"
    for f in report.md run.toml ledger.jsonl carry.json reference.json curriculum.toml "$gen"/curriculum.v*.toml; do
      f=$(basename "$f")
      [ -f "$gen/$f" ] && cp "$gen/$f" "$g/"
    done
    for d in best plots; do
      [ -d "$gen/$d" ] && cp -r "$gen/$d" "$g/"
    done
  done
done

python3 - "$WORK" "$OUT" "$COMMIT" $TASKS <<'EOF'
import datetime, json, sys
from pathlib import Path

import torch, triton

work, out, commit, tasks = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4:]
device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu (dry run: cpu-interpret)"
result = {"device": device, "date": datetime.datetime.now(datetime.UTC).isoformat(),
          "versions": {"torch": torch.__version__, "triton": triton.__version__,
                       "cuda": torch.version.cuda or ""}, "commit": commit,
          "script": "benchmarks/gpu_evolve.sh", "chains": {}}
rows = []
for task in tasks:
    path = work / f"evolve_{task}" / "lineage.json"
    status = (work / f"evolve_{task}.status").read_text().split()
    lineage = json.loads(path.read_text()) if path.exists() else None
    result["chains"][task] = {"exit": int(status[0]), "wall_s": int(status[1]), "lineage": lineage}
    for e in (lineage or {}).get("generations", []):
        rows.append((task, e))
(out / "gpu_evolve.json").write_text(json.dumps(result, indent=2) + "\n")

def f(x, spec):
    return "-" if x is None else format(x, spec)

print(f"{'task':10} {'gen':>3} {'reference':18} {'best':18} {'x ref':>8} {'noise':>7} {'x task ref':>10}  decision")
for task, e in rows:
    print(f"{task:10} {e['generation']:>3} {e['reference_hash']:18} {str(e.get('best_hash')):18} "
          f"{f(e.get('speedup'), '.4g'):>8} {f(e.get('noise_floor'), '.2%'):>7} "
          f"{f(e.get('speedup_vs_original'), '.4g'):>10}  {e['decision']}: {e.get('stop_reason') or ''}")
for task in tasks:
    c = result["chains"][task]
    stop = ((c["lineage"] or {}).get("stop") or {}).get("reason", "no stop recorded (cut by the timeout?)")
    print(f"{task}: exit {c['exit']}, {c['wall_s']} s; {stop}")
EOF
