"""Execute an exported FlashInfer-Trace Solution the way FlashInfer-Bench's harness does,
destination-passing, and check it against the Definition's reference.

    PYTHONPATH=src python3 benchmarks/flashinfer_solution_gpu.py --out $OUT [--solution RUN_DIR]
    PYTHONPATH=src python3 benchmarks/flashinfer_solution_gpu.py --out /tmp/fis --cpu

Needs torch, triton and this repository's src only (no pydantic, no flashinfer-bench).
The Solution is built by forge's exporter from the fixture Definition
tests/fixtures/interop/rmsnorm (with its Triton kernel in rmsnorm_kernel/), or from the best
kernel of a run dir made from an imported Definition (--solution RUN_DIR). It is then loaded
as the harness loads a Python/Triton Solution: its sources written under a package directory
in a temporary folder, the entry file imported as a module of that package, the entry symbol
looked up and its parameters checked against the Definition's inputs then outputs. Each
workload's inputs are made as the harness makes them, the outputs are preallocated (filled
with NaN, so an entry point that writes nothing fails) and passed after the inputs; the
result is compared with the Definition's reference as the harness compares (an element fails
when both its absolute error > atol and its relative error > rtol; atol = rtol = 1e-2).
Both are timed with torch.cuda events (--cpu: the Triton interpreter, perf_counter, smoke
workloads only). Writes OUT/flashinfer_solution.json and OUT/solution.json (what ran); exit
status 0 when every workload passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import inspect
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "interop" / "rmsnorm"
KERNEL = REPO / "tests" / "fixtures" / "interop" / "rmsnorm_kernel" / "kernel.py"
ATOL = RTOL = 1e-2


def parse() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--solution", type=Path, help="run dir whose best kernel to export and run")
    ap.add_argument("--cpu", action="store_true", help="Triton interpreter on the CPU, smoke workloads")
    ap.add_argument("--commit", default=None, help="commit to record (default: git HEAD)")
    ap.add_argument("--iters", type=int, default=50, help="timed calls per workload (GPU)")
    return ap.parse_args()


def commit_of(given: str | None) -> str:
    if given:
        return given
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True,
                              text=True, timeout=10).stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def problem(args: argparse.Namespace, scratch: Path) -> tuple[dict, list[dict], Path, dict[str, str], str]:
    """(Definition, workload rows, the inputs' root, kernel files, where the kernel came from)."""
    from forgekernel import candidate
    from forgekernel.interop import flashinfer_import as fi
    from forgekernel.interop import schema

    if args.solution is not None:
        root = args.solution / "task"
        if not (root / "definition.json").is_file():
            raise SystemExit(f"{args.solution}: its task was not imported from a Definition "
                             "(no task/definition.json)")
        definition = json.loads((root / "definition.json").read_text())
        rows = json.loads((root / "workloads.json").read_text())
        best = args.solution / "best"
        files = {p.as_posix(): (best / p).read_text() for p in candidate.source_files(best)}
        return definition, rows, root, files, f"best kernel of {args.solution}"
    definition = fi.read_json(FIXTURE / "definition.json")
    found = schema.problems("definition", definition)
    if found:
        raise SystemExit(f"fixture Definition: {found[0]}")
    rows = fi.read_workloads(FIXTURE / "workloads.jsonl", definition)
    (scratch / "definition.json").write_text(json.dumps(definition))
    (scratch / "workloads.json").write_text(json.dumps(rows))
    return definition, rows, scratch, {"kernel.py": KERNEL.read_text()}, f"fixture {KERNEL.name}"


def load_entry(solution: dict, definition: dict, build: Path):
    """The entry function, loaded as FlashInfer-Bench's Python builder loads it."""
    package = "fib_python_forge_export"
    for src in solution["sources"]:
        path = build / package / src["path"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(src["content"])
    entry_file, symbol = solution["spec"]["entry_point"].split("::")
    sys.path.insert(0, str(build))
    module = importlib.import_module(package + "." + ".".join(Path(entry_file).with_suffix("").parts))
    fn = getattr(module, symbol)
    want = list(definition["inputs"]) + (list(definition["outputs"])
                                         if solution["spec"].get("destination_passing_style", True) else [])
    got = list(inspect.signature(fn).parameters)
    if got != want:
        raise SystemExit(f"entry point parameters {got} != the Definition's {want}")
    return fn


def small(definition: dict, axes: dict[str, int]) -> bool:
    """Whether every tensor at ``axes`` is small enough for the interpreter (smoke size)."""
    from forgekernel.interop.flashinfer_import import SMOKE_ELEMENTS
    from forgekernel.interop.workload_inputs import shape_at

    specs = [*definition["inputs"].values(), *definition["outputs"].values()]
    return all(math.prod(shape_at(s, axes) or ()) <= SMOKE_ELEMENTS for s in specs)


def preallocated(spec: dict, axes: dict[str, int], device: str):
    """An output buffer filled with NaN (-1 for integers): unwritten elements fail the check."""
    import torch

    from forgekernel.interop.workload_inputs import shape_at

    fill = float("nan") if spec["dtype"].startswith(("float", "bfloat")) else -1
    return torch.full(shape_at(spec, axes), fill, dtype=getattr(torch, spec["dtype"]), device=device)


def reference_of(definition: dict):
    namespace: dict = {"__name__": "fib_reference"}
    exec(compile(definition["reference"], "<definition reference>", "exec"), namespace)
    return namespace["run"]


def errors(out, ref) -> tuple[float, float, bool]:
    import torch

    x, y = out.to(torch.float32), ref.to(torch.float32)
    abs_err = (x - y).abs()
    rel_err = abs_err / (y.abs() + 1e-8)
    bad = (abs_err > ATOL) & (rel_err > RTOL) | ~torch.isfinite(x)
    return float(abs_err.max()), float(rel_err.max()), not bool(bad.any())


def timed(fn, args: tuple, device: str, iters: int) -> float:
    """Median milliseconds of one call."""
    import torch

    for _ in range(3):
        fn(*args)
    times = []
    if device == "cuda":
        torch.cuda.synchronize()
        for _ in range(iters):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn(*args)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    else:
        for _ in range(iters):
            t0 = time.perf_counter()
            fn(*args)
            times.append((time.perf_counter() - t0) * 1e3)
    return sorted(times)[len(times) // 2]


def main() -> int:
    args = parse()
    if args.cpu:
        os.environ.setdefault("TRITON_INTERPRET", "1")
    import torch
    import triton

    from forgekernel.interop import flashinfer_export, schema, workload_inputs

    device = "cpu" if args.cpu else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("no CUDA device; pass --cpu to run on the Triton interpreter")
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="fis-") as tmp:
        scratch = Path(tmp)
        definition, rows, root, files, origin = problem(args, scratch)
        solution = flashinfer_export.build_solution(
            definition, files, name=f"{definition['name']}_forge_check", author="forgekernel",
            origin=origin, triton=True, arch="sm90", dps=True)
        found = schema.problems("solution", solution)
        if found:
            raise SystemExit(f"the Solution does not validate: {found[0]}")
        (args.out / "solution.json").write_text(json.dumps(solution, indent=2) + "\n")
        fn = load_entry(solution, definition, scratch / "build")
        ref = reference_of(definition)
        results = []
        for row in rows:
            axes = workload_inputs.full_axes(definition, row["axes"])
            if args.cpu and not small(definition, axes):
                continue
            inputs = workload_inputs.make(root, axes, seed=len(results), device=device)
            outputs = [preallocated(s, axes, device) for s in definition["outputs"].values()]
            fn(*inputs, *outputs)
            want = ref(*inputs)
            want = tuple(want) if isinstance(want, (tuple, list)) else (want,)
            per = [errors(o, w) for o, w in zip(outputs, want, strict=True)]
            iters = 3 if args.cpu else args.iters
            ms = timed(fn, (*inputs, *outputs), device, iters)
            ref_ms = timed(ref, tuple(inputs), device, iters)
            results.append({"uuid": row["uuid"], "axes": axes, "passed": all(p[2] for p in per),
                            "max_abs_error": max(p[0] for p in per), "max_rel_error": max(p[1] for p in per),
                            "latency_ms": ms, "reference_latency_ms": ref_ms, "speedup": ref_ms / ms})
            print(f"{row['uuid']} {axes}: {'PASSED' if results[-1]['passed'] else 'FAILED'} "
                  f"max_abs {results[-1]['max_abs_error']:.3g}, {ms:.4f} ms vs reference {ref_ms:.4f} ms")
    record = {
        "device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu (Triton interpreter)",
        "date": datetime.date.today().isoformat(),
        "versions": {"torch": torch.__version__, "triton": triton.__version__,
                     "python": sys.version.split()[0], "cuda": torch.version.cuda},
        "commit": commit_of(args.commit), "solution": solution["name"], "kernel": origin,
        "style": "destination-passing", "tolerance": {"atol": ATOL, "rtol": RTOL},
        "timing": "torch.cuda events, median" if device == "cuda" else "perf_counter, median (interpreter)",
        "workloads": results, "all_passed": bool(results) and all(r["passed"] for r in results),
    }
    (args.out / "flashinfer_solution.json").write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {args.out / 'flashinfer_solution.json'}: "
          f"{sum(r['passed'] for r in results)}/{len(results)} workloads passed")
    return 0 if record["all_passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
