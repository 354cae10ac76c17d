#!/usr/bin/env bash
# One device call for the judge (issue 15) and the LLM profile tool (issue 19), in order:
#  0. `forge judge` wall time of the built-in RMSNorm kernel, VT_REPEAT fresh runs (0: skipped);
#  1. verdict wall time and its phases, solo: every correct fixture and the GPU-only cheats;
#  2. the cheats the last sessions did not reach on the GPU (CHEATS), two processes at once
#     (their wall times are inflated by the sharing; only their verdicts matter), beside the
#     scripted-model `forge run` calling the profile tool (benchmarks/gpu_llm_profile.py; LLM=0
#     leaves it out);
#  3. a short `forge run rmsnorm` with the built-in agent, solo: attempt vs confirmation.
# Run there as: source scripts/gpu_env.sh && COMMIT=sha bash benchmarks/gpu_judge_session.sh
set -uo pipefail
FINAL=${OUT:-/tmp/out}
OUT=/tmp/judge_session  # everything here; one tarball goes back (the device returns <= 8 files)
rm -rf "$OUT"
COMMIT=${COMMIT:?set COMMIT}
CHEATS=${CHEATS:-rmsnorm_relabelled_caller,rmsnorm_slow_reference_signal,rmsnorm_state_drift,rmsnorm_task_toml_shapes,rmsnorm_torch_compile,rmsnorm_uninit_accumulator,rmsnorm_unobserved_fast_path,rmsnorm_visible_shapes_only,softmax_method_delegate,swiglu_eager_fallback}
mkdir -p "$OUT"
step() { echo "=== $* ($(date +%T))"; }

if [ "${VT_REPEAT:-3}" -gt 0 ]; then
  step "0. forge judge tasks/rmsnorm kernels/rmsnorm, ${VT_REPEAT:-3} fresh runs"
  timeout -s KILL 120 python3 benchmarks/verdict_time.py --task tasks/rmsnorm --kernel kernels/rmsnorm \
    --repeat "${VT_REPEAT:-3}" --out "$OUT/vt" --commit "$COMMIT" --delivery local > "$OUT/vt.log" 2>&1
  tail -6 "$OUT/vt.log"
fi

step "1. every correct fixture and the GPU-only cheats, solo"
timeout -s KILL 250 python3 benchmarks/gpu_judge.py --out "$OUT/correct" --commit "$COMMIT" --quick \
  --budget-s 220 --verdict-timeout-s 60 > "$OUT/correct.log" 2>&1
tail -14 "$OUT/correct.log"

step "2. cheats not yet run on the GPU (2 shards) + the scripted model's profile call"
for i in 0 1; do
  timeout -s KILL 230 python3 benchmarks/gpu_judge.py --out "$OUT/cheats$i" --commit "$COMMIT" --cheats \
    --only "$CHEATS" --scan-off --shard "$i/2" --budget-s 210 --verdict-timeout-s 90 > "$OUT/cheats$i.log" 2>&1 &
done
if [ "${LLM:-1}" = 1 ]; then
  timeout -s KILL 230 python3 benchmarks/gpu_llm_profile.py --out "$OUT/llm" --commit "$COMMIT" > "$OUT/llm.log" 2>&1 &
fi
wait
tail -n 14 "$OUT/cheats0.log" "$OUT/cheats1.log"
[ -f "$OUT/llm.log" ] && head -40 "$OUT/llm.log"

step "3. forge run rmsnorm (built-in agent), solo"
WORK=/tmp/forge_engine TASKS=rmsnorm ITER=${ITER:-3} MINUTES=${MINUTES:-2.5} RUN_TIMEOUT=${RUN_TIMEOUT:-170} \
  OUT="$OUT" bash benchmarks/gpu_engine.sh 2>&1 | tail -12
cp /tmp/forge_engine/engine_meta.json "$OUT/engine_meta.json" 2>/dev/null
mkdir -p "$FINAL" && tar czf "$FINAL/judge_session.tgz" -C "$OUT" .
step "done: $FINAL/judge_session.tgz"
