#!/usr/bin/env bash
# One device call for the engine's GPU proof (issue 6) and, time permitting, a short
# self-evolution chain (issue 8). Everything lands in at most two tarballs under $OUT, since
# the device tool returns at most 8 files.
#   source scripts/gpu_env.sh && bash benchmarks/gpu_proof.sh
set -u
REAL_OUT=${OUT:-/tmp/forge_proof}
mkdir -p "$REAL_OUT"
ITER=${ITER:-4} MINUTES=${MINUTES:-0.8} OUT="$REAL_OUT" bash benchmarks/gpu_engine.sh
if [ "${EVOLVE:-1}" = "1" ]; then
  EVO=/tmp/forge_evolve_out
  rm -rf "$EVO"
  OUT=$EVO GENERATIONS=${GENERATIONS:-3} ITERS=${ITERS:-3} GEN_MINUTES=${GEN_MINUTES:-0.6} \
    CHAIN_MINUTES=${CHAIN_MINUTES:-1.8} TASK_TIMEOUT=${TASK_TIMEOUT:-140} TASKS=${EVOLVE_TASKS:-rmsnorm} \
    bash benchmarks/gpu_evolve.sh
  tar czf "$REAL_OUT/evolve_runs.tgz" -C "$EVO" .
fi
ls -la "$REAL_OUT"
