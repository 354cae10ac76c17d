#!/usr/bin/env bash
# Create .venv and install forgekernel (editable) with its test tools.
# On a machine without an NVIDIA GPU this installs the CPU build of torch 2.13.0; with a GPU
# (nvidia-smi works) it keeps or installs the default CUDA build. Set FK_TORCH_SPEC to override.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
if [ -z "${FK_TORCH_SPEC:-}" ]; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    FK_TORCH_SPEC="torch"
  else
    FK_TORCH_SPEC="torch==2.13.0"
  fi
fi
.venv/bin/python -m pip install -q --disable-pip-version-check "$FK_TORCH_SPEC" -e ".[test,llm,ray,cute]" 2>&1 \
  | grep -v "is ignored: it is neither a file nor a directory" || true
# The worker sandbox prefers bubblewrap; without it forge uses its stdlib launcher.
if ! command -v bwrap >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    { apt-get install -y -q bubblewrap || { apt-get update -q && apt-get install -y -q bubblewrap; }; } >/dev/null 2>&1 \
      || echo "sandbox: could not install bubblewrap with apt-get; forge will use its stdlib sandbox (see forge doctor)"
  else
    echo "sandbox: bubblewrap (bwrap) is not installed and needs root with apt-get here; forge will use its stdlib sandbox (see forge doctor)"
  fi
fi
.venv/bin/python -c "import forgekernel, torch, triton; print('installed forgekernel', forgekernel.__version__, 'torch', torch.__version__, 'triton', triton.__version__)"
