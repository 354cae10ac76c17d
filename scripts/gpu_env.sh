#!/usr/bin/env bash
# Source this on the lent GPU machine (its python3 holds torch/triton but no pydantic):
# installs the carried wheels in .whl/ and this checkout into /tmp/site, puts them on
# PYTHONPATH, and writes the environment's versions to stdout.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || return 1
export PYTHONPATH=/tmp/site:$PWD/src${PYTHONPATH:+:$PYTHONPATH}
export PATH=/tmp/site/bin:$PATH
forge() { python3 -m forgekernel.cli "$@"; }
export -f forge
python3 -c "import torch, triton, pydantic, forgekernel; print('gpu env:', torch.cuda.get_device_name(0), 'torch', torch.__version__, 'triton', triton.__version__, 'forgekernel', forgekernel.__version__)"
# The lent machine's installed bytecode can be stale (each verifier then recompiles the
# modules it imports, seconds per verdict: sympy and mpmath too, not only torch);
# COMPILEALL=1 refreshes the whole of torch's site-packages as a pip install would.
if [ "${COMPILEALL:-0}" = 1 ]; then
  start=$(date +%s)
  python3 -m compileall -q -j 16 $(python3 -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))") /tmp/site src > /dev/null 2>&1
  echo "compileall: $(( $(date +%s) - start )) s"
fi
