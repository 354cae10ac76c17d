#!/usr/bin/env bash
# Fetch the CuTe DSL wheels for the lent GPU machine (no package registry there); the 92 MB
# libs wheel is packed with xz (about 87 MiB) and split in three, so that each carry folder
# plus the working tree (about 13 MiB) stays under one device call's 64 MiB:
#   bash scripts/cute_wheels.sh            # here, with PyPI: fills .cute_a/, .cute_b/, .cute_c/
#   device calls 1, 2: carry [".whl", ".cute_a"], then [".cute_b"] (any command; the folders
#   stay on the warm machine)
#   device call 3: carry [".cute_c"], command: bash scripts/cute_wheels.sh install && ...
# `install` (on the GPU machine) joins the parts and installs the wheels into /tmp/site,
# which scripts/gpu_env.sh puts on PYTHONPATH; eval the export line it prints (the DSL's own
# packages folder). PY_TAG picks the machine's Python (cp312).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "install" ]; then
  mkdir -p /tmp/cute_whl
  cp .cute_[abc]/*.whl /tmp/cute_whl/ 2>/dev/null || true
  for name in $(ls .cute_a .cute_b .cute_c | sed -n 's/\.xz\.part-a[a-z]$//p' | sort -u); do
    cat $(ls .cute_[abc]/"$name".xz.part-* | sort -t- -k2) | xz -d > /tmp/cute_whl/"$name"
  done
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site /tmp/cute_whl/*.whl
  # its .pth file (not read from PYTHONPATH) adds dsl_packages to sys.path: do it by hand
  echo "export PYTHONPATH=\$PYTHONPATH:/tmp/site/nvidia_cutlass_dsl/dsl_packages"
  PYTHONPATH=/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages python3 -c "import cutlass; print('CuTe DSL', cutlass.__version__)"
  exit 0
fi
PY_TAG=${PY_TAG:-312}
# The DSL's compiler and runtime libraries for the machine's CUDA: the lent GPU's torch is
# built for CUDA 13 (cu130). With the cu12 libraries there, a CuTe kernel's first launch never
# completed (benchmarks/results/languages_h200_2026-12-05_cute/).
CUDA_LIBS=${CUDA_LIBS:-cu13}
rm -rf .cute_dl .cute_a .cute_b .cute_c && mkdir -p .cute_dl .cute_a .cute_b .cute_c
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$PY_TAG" \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux2014_x86_64 \
  -d .cute_dl nvidia-cutlass-dsl nvidia-cutlass-dsl-libs-base nvidia-cutlass-dsl-libs-core \
  "nvidia-cutlass-dsl-libs-$CUDA_LIBS" cuda-bindings cuda-pathfinder
for whl in .cute_dl/*.whl; do
  name=$(basename "$whl")
  if [ "$(stat -c %s "$whl")" -gt $((40 * 1024 * 1024)) ]; then
    xz -9 -T0 -c "$whl" > ".cute_dl/$name.xz"
    split -n 3 ".cute_dl/$name.xz" ".cute_dl/$name.xz.part-"
    mv ".cute_dl/$name.xz.part-aa" .cute_a/ && mv ".cute_dl/$name.xz.part-ab" .cute_b/
    mv ".cute_dl/$name.xz.part-ac" .cute_c/
  elif [ "$(stat -c %s "$whl")" -gt $((4 * 1024 * 1024)) ]; then
    mv "$whl" .cute_c/  # cuda-bindings: evens the folders out
  else
    mv "$whl" .cute_a/
  fi
done
rm -rf .cute_dl
du -sh .cute_a .cute_b .cute_c
