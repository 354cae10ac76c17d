#!/usr/bin/env bash
# GPU proof for the CuTe DSL language (issue 21), after the three carry calls that bring the
# wheels (docs/languages.md): installs the CuTe DSL, runs the template probes, then `forge run
# tasks/rmsnorm --language cute-dsl` with the built-in agent, and packs that run dir (less its
# workspace/ and candidates/) with its log into $OUT/cute_run.tgz.
# Run there as: source scripts/gpu_env.sh && COMMIT=<sha> bash benchmarks/gpu_cute.sh
# LANGUAGES=1 also runs benchmarks/gpu_languages.py (every knob point, then forge compare).
set -uo pipefail
COMMIT=${COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
DEST=${OUT:-/tmp}
RUN=${RUN:-/tmp/cute_run}
eval "$(bash scripts/cute_wheels.sh install 2>&1 | tee /dev/stderr | grep '^export')"
python3 benchmarks/cute_probe.py --out "$DEST/cute_probe" --commit "$COMMIT" --deadline 60 \
  --probes template,template_odd 2>&1 | tail -4
rm -rf "$RUN"
start=$(date +%s)
timeout -s KILL "${RUN_TIMEOUT:-240}" python3 -m forgekernel.cli run tasks/rmsnorm --out "$RUN" \
  --delivery local --agent builtin --language cute-dsl --max-iterations "${ITER:-3}" \
  --max-minutes "${MINUTES:-2}" > "$DEST/cute_run.log" 2>&1
rc=$?
echo "forge run --language cute-dsl: exit $rc after $(( $(date +%s) - start )) s"
grep -E "^(best|target|report)" "$DEST/cute_run.log" || tail -5 "$DEST/cute_run.log"
echo "$rc" > "$RUN.exit"
tar czf "$DEST/cute_run.tgz" --exclude=workspace --exclude=candidates -C "$(dirname "$RUN")" \
  "$(basename "$RUN")" "$(basename "$RUN").exit"
if [ "${LANGUAGES:-0}" = 1 ]; then
  python3 benchmarks/gpu_languages.py --out "$DEST/lang" --commit "$COMMIT" --timeout 150 2>&1 | tail -15
fi
