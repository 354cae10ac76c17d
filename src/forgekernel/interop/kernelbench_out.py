"""Write a run's best kernel as a KernelBench ``ModelNew`` file: one Python file that
KernelBench's evaluator imports and builds as ``ModelNew(*get_init_inputs())``.

A forge task's kernel.py defines ``run(*inputs)``; the file is that source with a
``ModelNew`` whose ``forward`` calls it. A KernelBench task's kernel already defines
``ModelNew`` and is written as it is.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import TYPE_CHECKING

from forgekernel.interop.flashinfer_import import InteropError

if TYPE_CHECKING:
    from forgekernel.interop.best_kernel import Best

FILE = "model_new.py"


def source(best: Best) -> str:
    extra = sorted(p for p in best.files if p != "kernel.py")
    if extra:
        raise InteropError(f"the best kernel has more files than kernel.py ({', '.join(extra)}); a "
                           "KernelBench ModelNew is one file")
    text = best.files["kernel.py"]
    names = {n.name for n in ast.parse(text).body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    if best.task.format == "kernelbench":
        return text
    if "ModelNew" in names:
        raise InteropError("kernel.py already defines ModelNew; it cannot be wrapped in another")
    args = ", ".join(best.task.inputs)
    return (text.rstrip("\n") + "\n\n\n# ---- KernelBench entry written by `forge export`\n"
            "import torch as _forge_torch\n\n\nclass ModelNew(_forge_torch.nn.Module):\n"
            f'    """{best.task.name}: forward({args}) runs the kernel above."""\n\n'
            "    def __init__(self, *args, **kwargs):\n        super().__init__()\n\n"
            f"    def forward(self, {args}):\n        return run({args})\n")


def export(best: Best, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    path = out / FILE
    path.write_text(source(best))
    return [path]
