#!/usr/bin/env bash
# One device call for the sandbox on the lent GPU machine: the sandbox tests, CUDA/Triton
# and CUDA IPC through it, spawn overhead with GPU binds; first with what the image has,
# then again with a bubblewrap carried in .whl/bwrap-bin (Debian's 0.8.0 and its libraries).
#   source scripts/gpu_env.sh && bash benchmarks/sandbox_gpu.sh
set -u
OUT=${OUT:-/tmp/sandbox_gpu}
mkdir -p "$OUT"
round() {  # $1: label
  python3 -m pytest -q -p no:cacheprovider tests/test_sandbox.py tests/test_sandbox_processes.py >"$OUT/pytest_$1.txt" 2>&1
  tail -3 "$OUT/pytest_$1.txt"
  python3 benchmarks/sandbox_gpu_check.py --out "$OUT/gpu_$1.json" >/dev/null 2>"$OUT/gpu_$1.err"
  python3 benchmarks/sandbox_overhead.py --runs 20 --gpu --out "$OUT/overhead_$1.json" >/dev/null
  echo "round $1 done"
}
round native
if ! command -v bwrap >/dev/null 2>&1 && [ -x .whl/bwrap-bin/bwrap ]; then
  cp .whl/bwrap-bin/bwrap /usr/local/bin/bwrap
  for lib in $(ldd /usr/local/bin/bwrap | awk '/not found/ {print $1}'); do
    cp ".whl/bwrap-bin/$lib" /usr/local/lib/
  done
  ldconfig
  bwrap --version && round bwrap
fi
