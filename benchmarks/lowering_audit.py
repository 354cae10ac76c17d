"""Which lowering a generated candidate runs at each workload the judge would run.

For each task dir (converted with `forge new`), the built-in agent's generated candidate is
made (forgekernel.agents.builtin_generated), and at every visible, smoke and hidden
workload (hidden ones derived with a fixed seed) its dispatch is evaluated on meta tensors:
``first`` (the lowering as Dynamo traced it), ``w1``, ``w2``... (lowered at another of the
task's workloads), ``second`` (the one lowered with sizes from 0 up) or ``first-unguarded``
(no lowering's guards hold: the first runs, as traced). Nothing
runs a kernel; CPU only.

    python benchmarks/lowering_audit.py --out results.jsonl RUN_DIR_OR_TASK_DIR...
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import time
from pathlib import Path


def audit(task_dir: Path) -> dict:
    from forgekernel import instance
    from forgekernel.agents import builtin_generated
    from forgekernel.judge.inputs import hidden_workloads
    from forgekernel.task import load_module, load_task

    task = load_task(task_dir)
    start = time.monotonic()
    try:
        gen = builtin_generated.generate(task)
    except Exception as exc:  # the agent's refusal, one line
        return {"task": task.name, "error": str(exc)[:300]}
    path = Path(task.root).parent / f"{task.name}_audit_kernel.py"
    path.write_text(gen.text)
    spec = importlib.util.spec_from_file_location(f"audit_{abs(hash(path))}", path)
    cand = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cand)
    two = hasattr(cand, "_inductor_choose")
    ref = load_module(Path(task.root) / "reference.py")
    rows = []
    for wl in [*task.workloads, *hidden_workloads(task, list(task.workloads), large=True, rng=random.Random(0))]:
        inst = instance.build(task, ref, wl, meta=True, seed=0)
        flat = [*inst.param_tensors(), *inst.inputs]
        try:
            which = _which(cand, flat, inst.model) if two else "first"
        except Exception as exc:  # the candidate runs the first then; say why here
            which = f"first (guards not evaluable: {type(exc).__name__})"
        kind = "hidden" if wl.hidden else "smoke" if wl.smoke else "full"
        rows.append({"workload": dict(wl.axes), "kind": kind, "runs": which})
    return {"task": task.name, "lowerings": len(getattr(cand, "_INDUCTOR_VARIANTS", (None,))), "seconds": round(time.monotonic() - start, 1),
            "workloads": rows}


def _which(cand, flat, model) -> str:
    """The lowering the candidate's dispatch takes: "first", "first-unguarded" (no guards
    hold), "second" (the one for sizes from 0 up) or "w<i>" (lowered at another workload)."""
    i = cand._inductor_choose(flat, model)
    if i == 0:
        return "first" if cand._inductor_fits(flat, model) else "first-unguarded"
    suffix = cand._INDUCTOR_VARIANTS[i][0].__name__.removeprefix("_inductor_call_")
    return "second" if suffix == "s01" else suffix


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    with args.out.open("a") as fh:
        for d in args.dirs:
            row = audit(d / "task" if (d / "task" / "task.toml").exists() else d)
            fh.write(json.dumps(row) + "\n")
            fh.flush()
            print(row["task"], row.get("lowerings", row.get("error")),
                  " ".join(f"{r['kind'][0]}:{r['runs']}" for r in row.get("workloads", [])), flush=True)


if __name__ == "__main__":
    main()
