"""Why TorchInductor produced no code for a reference: converts each KernelBench file (or
takes a task dir), lowers it as the built-in agent does, and prints Inductor's own traceback
for each failure (forge's plan shows one line). A diagnostic for torch versions the CPU
machine lacks (the lent GPU's torch):

    source scripts/gpu_env.sh && python3 benchmarks/lowering_diag.py .kb/level2/36_*.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path


def diagnose(source: Path, work: Path) -> str:
    from forgekernel.generate import examples
    from forgekernel.generate.inductor import LoweringError, lower
    from forgekernel.task import load_task

    if source.is_file():
        from forgekernel import kernelbench

        task_dir = work / source.stem
        kernelbench.convert(source, task_dir)
    else:
        task_dir = source
    task = load_task(task_dir)
    fn, args, names = examples.flat_example(task, seed=0)
    start = time.monotonic()
    try:
        lowered = lower(fn, args, names=names)
    except LoweringError as exc:
        return f"{exc}\n{exc.detail or '(no Inductor traceback)'}"
    return f"lowered in {time.monotonic() - start:.1f} s, {len(lowered.code)} characters of code"


def main(argv: list[str]) -> int:
    import torch

    print(f"torch {torch.__version__}")
    with tempfile.TemporaryDirectory() as tmp:
        for arg in argv:
            print(f"=== {arg}\n{diagnose(Path(arg), Path(tmp))}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
