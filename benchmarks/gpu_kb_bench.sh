#!/usr/bin/env bash
# KernelBench sample on the lent GPU: `forge bench` with the built-in agent, resumable across
# device calls. Run there as: source scripts/gpu_env.sh && COMMIT=<sha> bash benchmarks/gpu_kb_bench.sh
# BENCH (default .artifacts/kb_h200) is created on the first call (SAMPLE problems of .kb's
# level1+level2, seed SEED; the problems spread over the machine's GPUs) and resumed on later ones; each call stops after LIMIT seconds and
# (a bench that has not stopped 40 s after its SIGINT, its running problems still ending, is
# killed: those problems resume on the next call) packs the bench dir (summary, results, every problem's ledger, log and report) into
# $OUT/bench.tgz, which a later call on a fresh machine can unpack into BENCH to resume.
# COMMIT (required) is the commit of the working tree sent to the machine (its git copy may
# be older); it goes with the device, date and versions into $OUT/meta.json.
# ITER=N: attempts per problem (default 1).
# SHARE=GiB: judgements under that estimated footprint check correctness beside each other
# (forge bench --share-gpu); timing always has the GPU alone.
set -uo pipefail
: "${COMMIT:?set COMMIT=<sha of the working tree>}"
python3 -c "import json, sys; sys.path.insert(0, 'benchmarks'); import verdict_time; \
print(json.dumps(verdict_time.meta(sys.argv[1], 'local')))" "$COMMIT" > "$OUT/meta.json"
BENCH=${BENCH:-.artifacts/kb_h200}
LIMIT=${LIMIT:-420}
if [ ! -f "$BENCH/bench.toml" ] && [ -f .artifacts/bench.tgz ]; then
  mkdir -p "$BENCH" && tar -xzf .artifacts/bench.tgz -C "$BENCH"
fi
if [ -f "$BENCH/bench.toml" ]; then
  args=("$BENCH")
else
  # PROBLEMS="FILE ..." benches those files instead of the seeded sample
  if [ -n "${PROBLEMS:-}" ]; then read -ra args <<< "$PROBLEMS"; else
    args=(.kb/level1 .kb/level2 --sample "${SAMPLE:-30}" --seed "${SEED:-0}"); fi
  args+=(--out "$BENCH" --delivery local
        --max-iterations "${ITER:-1}" --max-minutes "${MINUTES:-6}" --jobs "${JOBS:-6}" --gpus "${GPUS:-$(nvidia-smi -L | wc -l)}"
        ${SHARE:+--share-gpu "$SHARE"})
fi
start=$(date +%s)
timeout -k 40 -s INT "$LIMIT" python3 -m forgekernel.cli bench "${args[@]}" 2>&1 | tail -40
echo "bench call ended after $(( $(date +%s) - start )) s"
# what a later call (or the repo) needs: no candidate caches, no build outputs
tar -czf "$OUT/bench.tgz" -C "$BENCH" --exclude='*/.cache' --exclude='*/__pycache__' --exclude='*.so' \
  --exclude='*/triton_cache*' --exclude='*/build' . 2>/dev/null
du -sh "$OUT/bench.tgz"
for f in summary.json summary.md summary.png results.jsonl; do [ -f "$BENCH/$f" ] && cp "$BENCH/$f" "$OUT/"; done
