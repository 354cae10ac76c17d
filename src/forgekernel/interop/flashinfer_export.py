"""Write a run's best kernel as a FlashInfer-Trace trace set: the Definition, its Workloads,
the Solution and one Trace per workload the judge timed.

Layout under OUT (the directories FlashInfer-Bench's TraceSet reads)::

    definitions/<op_type>/<name>.json
    workloads/<op_type>/<name>.jsonl        workload-only Traces
    solutions/<op_type>/<name>/<solution>.json
    traces/<op_type>/<name>.jsonl           the judged workloads, with evaluations
    blob/workloads/<op_type>/<name>/...     safetensors inputs (paths relative to OUT)

The Solution's entry point ``main.py::run`` wraps kernel.py's ``run`` (value-returning in
forge) in the style asked: destination-passing (outputs preallocated and passed after the
inputs; FlashInfer-Bench's default) or value-returning.
"""

from __future__ import annotations

import json
import shutil
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from forgekernel.interop import schema
from forgekernel.interop.flashinfer_import import SHIM_MARK, InteropError
from forgekernel.interop.workload_inputs import full_axes

if TYPE_CHECKING:
    from forgekernel.interop.best_kernel import Best
    from forgekernel.records import TaskSpec

HARDWARE = {"sm90": ["NVIDIA_H100", "NVIDIA_H200"], "sm100": ["NVIDIA_B200"], "any": ["cuda"]}
STATUS = {"WRONG_VALUES": "INCORRECT_NUMERICAL", "WRONG_SHAPE": "INCORRECT_SHAPE",
          "WRONG_DTYPE": "INCORRECT_DTYPE", "COMPILE_ERROR": "COMPILE_ERROR",
          "TIMEOUT": "TIMEOUT"}


def _stored(task_dir: Path, name: str) -> Any:
    path = task_dir / name
    return json.loads(path.read_text()) if path.is_file() else None


def definition_of(task: TaskSpec, task_dir: Path) -> dict[str, Any]:
    """The Definition of ``task``: axes, inputs, outputs and description from the task;
    op_type, tags, constraints, tensor descriptions and the reference from the Definition it
    was imported from (a native forge task: its family and reference.py)."""
    if task.format == "kernelbench":
        raise InteropError(f"{task.name}: a KernelBench task has no run(); export it with "
                           "--format kernelbench")
    stored = _stored(task_dir, "definition.json") or {}
    if not task.outputs:
        raise InteropError(f"{task.name}: declare [outputs] in task.toml; a Definition lists them")
    axes = {}
    for name, a in task.axes.items():
        entry: dict[str, Any] = ({"type": "const", "value": a.min} if a.max is not None and a.min == a.max
                                 else {"type": "var"})
        if a.description:
            entry["description"] = a.description
        axes[name] = entry
    out: dict[str, Any] = {"name": task.name, "op_type": stored.get("op_type", task.family)}
    said = stored.get("description") or ""
    if " ".join(said.split()) == task.description:  # unchanged since the import: as written
        if said:
            out["description"] = said
    elif task.description:
        out["description"] = task.description
    for key in ("tags",):
        if stored.get(key):
            out[key] = stored[key]
    out["axes"] = axes
    for group in ("inputs", "outputs"):
        old = stored.get(group, {})
        out[group] = {n: _tensor(n, s, old.get(n, {})) for n, s in getattr(task, group).items()}
    if stored.get("constraints"):
        out["constraints"] = stored["constraints"]
    out["reference"] = stored.get("reference") or _reference(task_dir)
    return out


def _tensor(name: str, spec: Any, old: dict[str, Any]) -> dict[str, Any]:
    if any(isinstance(d, int) for d in spec.shape):
        raise InteropError(f"tensor '{name}' has a fixed size in its shape; a Definition names "
                           "every dimension by an axis (make it a pinned axis)")
    shape = list(spec.shape) if spec.shape else ([] if old.get("shape") == [] else None)
    out = {"shape": shape, "dtype": spec.dtype}
    if old.get("description"):
        out["description"] = old["description"]
    return out


def _reference(task_dir: Path) -> str:
    text = (task_dir / "reference.py").read_text()
    return text.split("\n\n" + SHIM_MARK)[0].rstrip("\n") + "\n"


def workload_rows(task: TaskSpec, task_dir: Path, definition: dict[str, Any]) -> list[dict[str, Any]]:
    """One Workload per task workload: the imported row with those axes, else random inputs
    (a task whose inputs come from make_inputs cannot say how they are made)."""
    stored = _stored(task_dir, "workloads.json") or []
    var = [k for k, a in definition["axes"].items() if a["type"] == "var"]
    rows = []
    for w in task.workloads:
        row = next((r for r in stored if full_axes(definition, r["axes"]) == dict(w.axes)), None)
        if row is None:
            custom = [n for n, s in task.inputs.items() if s.dist.kind == "custom"]
            if custom:
                raise InteropError(f"{task.name}: input '{custom[0]}' is made by make_inputs; a "
                                   f"Workload at {w.label()} cannot describe it")
            key = f"forge:{task.name}:" + ",".join(f"{k}={v}" for k, v in w.axes.items())
            row = {"uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, key)),
                   "axes": {k: w.axes[k] for k in var},
                   "inputs": {n: {"type": "random"} for n in definition["inputs"]}}
        rows.append(json.loads(json.dumps(row)))
    return rows


def _dist_notes(task: TaskSpec) -> list[str]:
    """A note per input whose dist FlashInfer-Bench's ``random`` does not draw (normal(0, 1)
    for floats; [-128, 128) or [-1024, 1024) for integers)."""
    out = []
    for name, spec in task.inputs.items():
        d = spec.dist
        ints = (-128.0, 128.0) if spec.dtype == "int8" else (-1024.0, 1024.0)
        same = ((d.kind, d.mean, d.std) == ("normal", 0.0, 1.0) if spec.dtype.startswith(("float", "bfloat"))
                else d.kind == "randint" and (d.low, d.high) == ints)
        if not same:
            out.append(f"input '{name}': written as type 'random', which FlashInfer-Bench draws "
                       f"differently from the task's dist ({d.kind})")
    return out


def entry_source(definition: dict[str, Any], dps: bool, kernel_file: str = "kernel.py") -> str:
    """main.py: loads kernel.py beside it and calls its run in the style asked."""
    ins, outs = list(definition["inputs"]), list(definition["outputs"])
    for name in ins + outs:
        if not name.isidentifier():
            raise InteropError(f"tensor name {name!r} is not a Python identifier; the entry point "
                               "takes the tensors by name")
    if dps:
        scalar = [n for n, s in definition["outputs"].items() if s["shape"] is None]
        if scalar:
            raise InteropError(f"output '{scalar[0]}' is a scalar, which cannot be written in place; "
                               "use --style value")
    args = ", ".join(ins)
    head = (f'"""FlashInfer-Bench entry point written by `forge export`: calls {kernel_file}\'s '
            f'run({args}) and {"writes its outputs into the preallocated " + ", ".join(outs) if dps else "returns its outputs"}."""\n\n'
            "import importlib.util\nimport sys\nfrom pathlib import Path\n\n"
            f'_path = Path(__file__).with_name("{kernel_file}")\n'
            '_spec = importlib.util.spec_from_file_location(f"_forge_kernel_{abs(hash(str(_path))):x}", _path)\n'
            "_kernel = importlib.util.module_from_spec(_spec)\n"
            "sys.modules[_spec.name] = _kernel\n"
            "_spec.loader.exec_module(_kernel)\n\n\n")
    if not dps:
        return head + f"def run({args}):\n    return _kernel.run({args})\n"
    return head + (
        f"def run({args}, {', '.join(outs)}):\n"
        f"    result = _kernel.run({args})\n"
        "    results = tuple(result) if isinstance(result, (tuple, list)) else (result,)\n"
        f"    if len(results) != {len(outs)}:\n"
        f'        raise RuntimeError(f"run returned {{len(results)}} outputs; the Definition has {len(outs)}")\n'
        f"    for dst, src in zip(({', '.join(outs)},), results):\n"
        "        dst.copy_(src)\n")


def solution_of(best: Best, definition: dict[str, Any], dps: bool) -> dict[str, Any]:
    return build_solution(definition, best.files, name=f"{best.task.name}_forge_{best.candidate[:8]}",
                          author=f"forgekernel ({best.agent} agent)",
                          origin=f"Best kernel of a forge run (candidate {best.candidate})",
                          triton=best.task.language == "triton", arch=best.task.arch, dps=dps)


def build_solution(definition: dict[str, Any], files: dict[str, str], *, name: str, author: str,
                   origin: str, triton: bool, arch: str, dps: bool) -> dict[str, Any]:
    """A Solution of ``files`` (kernel.py defining a value-returning run) for ``definition``."""
    if "kernel.py" not in files:
        raise InteropError("the kernel's files have no kernel.py")
    entry = "main.py" if "main.py" not in files else "forge_entry.py"
    sources = [{"path": p, "content": c} for p, c in files.items()]
    sources.append({"path": entry, "content": entry_source(definition, dps)})
    return {
        "name": name, "definition": definition["name"], "author": author,
        "description": f"{origin}; {entry} wraps kernel.py's run, "
                       f"{'destination-passing' if dps else 'value-returning'}.",
        "spec": {"language": "triton" if triton else "python",
                 "target_hardware": HARDWARE[arch], "entry_point": f"{entry}::run",
                 "dependencies": ["torch", "triton"] if triton else ["torch"],
                 "destination_passing_style": dps},
        "sources": sources,
    }


def traces_of(best: Best, definition: dict[str, Any], rows: list[dict[str, Any]], solution: str,
              when: str) -> tuple[list[dict[str, Any]], list[str]]:
    """A Trace per judged visible workload of the verdict, and a note per one left out."""
    v, traces, notes = best.verdict, [], []
    env = {"hardware": v.get("device") or "unknown", "libs": dict(v.get("versions") or {})}
    for w in v.get("workloads", []):
        if w.get("hidden"):
            continue
        row = next((r for r in rows if full_axes(definition, r["axes"]) == w["axes"]), None)
        label = " ".join(f"{k}={n}" for k, n in w["axes"].items())
        if row is None or w.get("median_ms") is None:
            notes.append(f"workload {label}: {'not in the task' if row is None else 'not timed'}; no Trace")
            continue
        ev = {"status": "PASSED" if w.get("passed") else STATUS.get(v["status"], "RUNTIME_ERROR"),
              "environment": env, "timestamp": when,
              "log": f"judged by {v.get('judge', 'forgekernel')} ({v.get('delivery', '?')} delivery); "
                     f"timings: {w.get('timing_label')}",
              "correctness": {"max_relative_error": w.get("max_rel_err") or 0.0,
                              "max_absolute_error": w.get("max_abs_err") or 0.0},
              "performance": {"latency_ms": w["median_ms"], "reference_latency_ms": w.get("reference_ms") or 0.0,
                              "speedup_factor": w.get("speedup") or 0.0}}
        traces.append({"definition": definition["name"], "workload": row, "solution": solution,
                       "evaluation": ev})
    return traces, notes


def _check(kind: str, data: Any, what: str) -> None:
    found = schema.problems(kind, data)
    if found:
        raise InteropError(f"the exported {what} does not validate: {found[0]}")


def export(best: Best, out: Path, *, dps: bool = True) -> tuple[list[Path], list[str]]:
    """Write the trace set under ``out``; return the files written and the note lines."""
    definition = definition_of(best.task, best.task_dir)
    rows = workload_rows(best.task, best.task_dir, definition)
    op, name = definition["op_type"], definition["name"]
    blob = f"blob/workloads/{op}/{name}"
    blobs: dict[Path, Path] = {}
    for row in rows:
        for desc in row["inputs"].values():
            if desc["type"] == "safetensors":
                src = best.task_dir / desc["path"]
                blobs[src] = out / blob / src.name
                desc["path"] = f"{blob}/{src.name}"
    solution = solution_of(best, definition, dps)
    notes = _dist_notes(best.task) if not (best.task_dir / "workloads.json").is_file() else []
    stamp = datetime.fromtimestamp((best.task_dir.parent / "best" / "verdict.json").stat().st_mtime, UTC)
    traces, left_out = traces_of(best, definition, rows, solution["name"], stamp.isoformat(timespec="seconds"))
    notes += left_out
    _check("definition", definition, "Definition")
    _check("solution", solution, "Solution")
    workload_traces = [{"definition": name, "workload": r, "solution": None, "evaluation": None} for r in rows]
    for t in workload_traces + traces:
        _check("trace", t, "Trace")
    files = {
        out / "definitions" / op / f"{name}.json": json.dumps(definition, indent=2) + "\n",
        out / "workloads" / op / f"{name}.jsonl": "".join(json.dumps(t) + "\n" for t in workload_traces),
        out / "solutions" / op / name / f"{solution['name']}.json": json.dumps(solution, indent=2) + "\n",
        out / "traces" / op / f"{name}.jsonl": "".join(json.dumps(t) + "\n" for t in traces),
    }
    for path, text in files.items():  # written only once everything validated
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for src, dst in blobs.items():
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
    return list(files), notes
