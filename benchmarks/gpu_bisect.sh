#!/usr/bin/env bash
# The built-in agent's default candidate for some KernelBench files, generated and timed by
# several commits' source trees on one GPU (benchmarks/gpu_knobs.py --defaults-only, each tree
# in its own process): which commit moved a problem's time. Prepare here (no GPU):
#   for c in A B C; do mkdir -p .ab/$c && git archive $c src | tar -x -C .ab/$c; done
# then on the lent GPU, carrying .whl .kb .ab:
#   source scripts/gpu_env.sh && bash benchmarks/gpu_bisect.sh FILE.py [FILE.py ...]
# Writes $OUT/bisect/<commit>/knobs.json and prints one line per commit and problem.
set -uo pipefail
for tree in .ab/*/; do
  c=$(basename "$tree")
  echo "== $c"
  PYTHONPATH=/tmp/site:$PWD/$tree/src timeout "${PER_TREE_S:-120}" python3 benchmarks/gpu_knobs.py \
    --defaults-only --budget-s "${PER_TREE_S:-120}" --commit "$c" --out "$OUT/bisect/$c" "$@" 2>&1 \
    | grep -v "W1206\|pow_by_natural" | grep -E "eager|defaults|Error|error"
done
