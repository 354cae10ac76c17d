#!/usr/bin/env bash
# Install forgekernel with its test tools into .venv (CPU torch when no torch is there) and run
# the linter and the CPU test suite. This is the README's test command and what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
.venv/bin/ruff check src tests
.venv/bin/python -m pytest -q "$@"
