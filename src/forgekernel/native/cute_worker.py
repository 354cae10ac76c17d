"""Compile a CuTe DSL candidate for sm_90a without a GPU (run inside the sandbox).

``python -I -m forgekernel.native.cute_worker TASK_DIR KERNEL_PY DUMP_DIR REPLY_JSON`` points the DSL at
sm_90a with its PTX and cubins kept in DUMP_DIR, then calls the candidate's ``run`` (for a
KernelBench task, ``ModelNew(*get_init_inputs())``) once on the task's small example inputs
(CPU tensors): the candidate's own ``cute.compile`` builds its
kernels, and the launch that follows fails for want of a GPU, which is expected. What the
compile left in DUMP_DIR is read by the parent; this process writes REPLY_JSON: the DSL's
version and, when nothing was compiled, the first errors, with the candidate's file and line
where the DSL or the traceback names them. Nothing written here is a verdict.
"""

from __future__ import annotations

import json
import os
import re
import sys
import traceback
from pathlib import Path

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def main(argv: list[str]) -> int:
    task_dir, kernel, dump, reply = Path(argv[0]), Path(argv[1]), Path(argv[2]), Path(argv[3])
    dump.mkdir(parents=True, exist_ok=True)  # the DSL writes nothing into a missing dir
    os.environ.update(CUTE_DSL_ARCH="sm_90a", CUTE_DSL_KEEP="ptx,cubin", CUTE_DSL_DUMP_DIR=str(dump))
    out: dict = {"version": None, "errors": []}
    try:
        import cutlass

        out["version"] = cutlass.__version__
    except ImportError as exc:
        out["errors"] = [f"the CuTe DSL is not installed here ({exc})"]
        reply.write_text(json.dumps(out))
        return 0
    from forgekernel.task import load_module, load_task

    task = load_task(task_dir, check_reference=False)
    try:
        module = load_module(kernel, name="_fk_cute_candidate")
        call, inputs = _example_call(task, module)
        call(*inputs)
    except Exception as exc:  # the candidate's: expected once its launch needs a GPU
        if not any(dump.glob("*.cubin")):
            out["errors"] = describe(exc, kernel)
    reply.write_text(json.dumps(out))
    return 0


def _example_call(task, module):  # noqa: ANN001, ANN202 - a task and the candidate's module
    """The candidate's entry and its arguments at the task's example workload (CPU tensors):
    ``run`` on the inputs, or for a KernelBench task ``ModelNew(*get_init_inputs())`` (the
    problem's constants at that workload) on the forward's inputs."""
    from forgekernel import instance
    from forgekernel.generate.examples import example_workload, flat_example, reference_function

    if task.format != "kernelbench":
        return module.run, flat_example(task, seed=0)[1]
    _, reference = reference_function(task)
    inst = instance.build(task, reference, example_workload(task), device="cpu", seed=0)
    return module.ModelNew(*inst.module.get_init_inputs()), inst.inputs


def describe(exc: BaseException, kernel: Path) -> list[str]:
    """The error as lines naming the candidate's file and line (DSL errors carry them)."""
    message = ANSI.sub("", str(getattr(exc, "message", "") or exc)).strip().splitlines()
    first = message[0] if message else type(exc).__name__
    where = ""
    if getattr(exc, "filename", None) and getattr(exc, "line", None):
        where = f"{Path(exc.filename).name} line {exc.line}"
    else:
        frames = [f for f in traceback.extract_tb(exc.__traceback__)
                  if Path(f.filename).resolve() == kernel.resolve()]
        if frames:
            where = f"{kernel.name} line {frames[-1].lineno}"
    head = f"{where}: " if where else ""
    return [f"{head}{type(exc).__name__}: {first}"[:400],
            *[ln[:300] for ln in message[1:4] if ln.strip()]]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
