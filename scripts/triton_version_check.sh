#!/usr/bin/env bash
# Compile forge's library kernels for sm_90 with another Triton than this checkout's, no GPU
# needed: the lent GPU machine has Triton 3.6, this machine's venv a newer one, and what one
# version accepts or optimises the other may not (Triton 3.6 exports no tl.to_tensor; it kept
# run-time divisions that 3.9 folded). Usage: bash scripts/triton_version_check.sh [VERSION]
# (default 3.6.0). Makes /tmp/triton-VERSION (a venv holding only that Triton; torch and the
# rest come from .venv) and runs tests/library_static.py there: one JSON line per launch with
# registers, spills and integer divisions.
set -euo pipefail
cd "$(dirname "$0")/.."
V=${1:-3.6.0}
ENV=/tmp/triton-$V
if [ ! -x "$ENV/bin/python" ]; then
  python3 -m venv "$ENV"
  "$ENV/bin/python" -m pip install -q --no-deps "triton==$V"
fi
SITE=$(.venv/bin/python -c "import site; print(site.getsitepackages()[0])")
OWN=$("$ENV/bin/python" -c "import site; print(site.getsitepackages()[0])")
CUDA_VISIBLE_DEVICES= PYTHONPATH="$OWN:$SITE:$PWD/src" "$ENV/bin/python" tests/library_static.py "${@:2}"
