"""Read a FlashInfer-Trace Definition (and its Workloads) as a forge task directory.

What maps where (docs/tasks.md, "Other formats", has the table and the reasons):

* ``name``, ``description`` -> the task's; ``op_type`` picks the family;
* ``axes``: a ``const`` axis is pinned (``min = max = value``), a ``var`` axis is free;
* ``inputs``/``outputs``: dtype and shape (a ``null`` shape is a scalar: ``shape = []``);
* ``reference`` -> reference.py, unchanged (its ``run`` takes the inputs in order);
* each Workload -> a ``[[workload]]`` (smoke when every tensor is small enough for the CPU
  interpreter); ``scalar`` and ``safetensors`` inputs are made by a generated
  ``make_inputs`` that reads ``workloads.json`` (see :mod:`.workload_inputs`);
* tolerance: FlashInfer-Bench's harness default (atol = rtol = 1e-2) per floating output dtype.

Fields forge does not use (``tags``, ``constraints``, fields outside the schema) are each
reported as one note line; what forge cannot represent (a float8 dtype, an ``expr`` axis) is
a one-line error.
"""

from __future__ import annotations

import ast
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forgekernel.errors import ForgeError
from forgekernel.interop import safetensors, schema
from forgekernel.interop.workload_inputs import full_axes, shape_at

SMOKE_ELEMENTS = 65_536
"""A workload is a smoke workload when no input or output has more elements than this."""
HARNESS_TOLERANCE = 1e-2
"""FlashInfer-Bench's default atol and rtol (bench/config.py, ResolvedEvalConfig)."""
FAMILIES = {"rmsnorm": "rownorm", "fused_add_rmsnorm": "rownorm", "layernorm": "rownorm",
            "gemm": "matmul", "rope": "rope", "softmax": "softmax"}
SHIM_MARK = "# ---- forge: inputs of the FlashInfer-Trace workloads"
FLOATS = ("float32", "float16", "bfloat16")
TRACE_FIELDS = ("definition", "workload", "solution", "evaluation")
WORKLOAD_FIELDS = ("uuid", "axes", "inputs")


class InteropError(ForgeError, ValueError):
    """A file of another format that forge cannot use; the message is one line."""


@dataclass
class Imported:
    root: Path
    notes: list[str] = field(default_factory=list)


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise InteropError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InteropError(f"{path}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise InteropError(f"{path}: not valid JSON: {exc.msg} at line {exc.lineno}") from None


def read_definition(path: Path) -> tuple[dict[str, Any], list[str]]:
    """The Definition in ``path``, checked against the schema, and its note lines."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise InteropError(f"{path}: a Definition is a JSON object")
    from forgekernel.records import DTYPES

    notes: list[str] = []
    if "custom_inputs_entrypoint" in data:
        raise InteropError(f"{path}: custom_inputs_entrypoint (SOL-ExecBench) is not supported; "
                           "give the inputs as workloads (random, scalar or safetensors)")
    known = {k: v for k, v in data.items() if k in schema.DEFINITION_FIELDS}
    for k in data:
        if k not in known:
            notes.append(f"{path.name}: field '{k}' is not part of a FlashInfer-Trace Definition; ignored")
    for name, axis in (data.get("axes") or {}).items() if isinstance(data.get("axes"), dict) else ():
        if isinstance(axis, dict) and axis.get("type") == "expr":
            raise InteropError(f"{path}: axes.{name} has type 'expr' (SOL-ExecBench); forge "
                               "supports const and var axes")
    found = schema.problems("definition", known)
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise InteropError(f"{path}: {found[0]}{more}")
    try:
        tree = ast.parse(data["reference"], f"{path}:reference")
    except SyntaxError as exc:
        raise InteropError(f"{path}: reference is not valid Python: {exc.msg} (line {exc.lineno})") from None
    if not any(isinstance(n, ast.FunctionDef) and n.name == "run" for n in tree.body):
        raise InteropError(f"{path}: reference defines no top-level run(...)")
    if "/" in data["name"] or data["name"].startswith("."):
        raise InteropError(f"{path}: name {data['name']!r} cannot name a directory")
    for group in ("inputs", "outputs"):
        for name, spec in data[group].items():
            if spec["dtype"] not in DTYPES:
                raise InteropError(f"{path}: {group}.{name}.dtype {spec['dtype']!r} has no forge "
                                   f"equivalent (forge: {', '.join(DTYPES)})")
            if spec.get("description"):
                notes.append(f"{path.name}: {group}.{name}.description is kept in definition.json "
                             "only (forge tensors have no description)")
    for tag in data.get("tags", []):
        notes.append(f"{path.name}: tag '{tag}' is not used by forge")
    for c in data.get("constraints", []):
        notes.append(f"{path.name}: constraint '{c}' is not checked by forge; the workloads must "
                     "satisfy it")
    return data, notes


def read_workloads(path: Path, definition: dict[str, Any],
                   notes: list[str] | None = None) -> list[dict[str, Any]]:
    """The Workload rows of a JSONL file (bare Workloads, or workload-only Traces). Fields
    forge does not use are dropped from the rows with one note per field (into ``notes``)."""
    rows: list[dict[str, Any]] = []
    unused: dict[str, int] = {}
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        raise InteropError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InteropError(f"{path}: cannot read: {exc}") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InteropError(f"{path}:{n}: not valid JSON: {exc.msg}") from None
        if isinstance(row, dict) and "workload" in row:
            if row.get("definition") != definition["name"]:
                raise InteropError(f"{path}:{n}: the workload is for definition "
                                   f"{row.get('definition')!r}, not {definition['name']!r}")
            for key in ("solution", "evaluation"):
                if row.get(key) is not None:
                    unused.setdefault(f"the Trace's '{key}'", n)
            for k in row:
                if k not in TRACE_FIELDS:
                    unused.setdefault(f"Trace field '{k}'", n)
            row = row["workload"]
        if isinstance(row, dict):
            for k in row:
                if k not in WORKLOAD_FIELDS:
                    unused.setdefault(f"workload field '{k}'", n)
            row = {k: v for k, v in row.items() if k in WORKLOAD_FIELDS}
        found = schema.problems("workload", row)
        if found:
            raise InteropError(f"{path}:{n}: {found[0]}")
        _check_row(row, definition, f"{path}:{n}")
        rows.append(row)
    if not rows:
        raise InteropError(f"{path}: no workloads")
    if notes is not None:
        notes += [f"{path.name}:{n}: {what} is not used by forge; ignored" for what, n in unused.items()]
    return rows


def _check_row(row: dict[str, Any], definition: dict[str, Any], where: str) -> None:
    axes = definition["axes"]
    for k, v in row["axes"].items():
        if k not in axes:
            raise InteropError(f"{where}: axis '{k}' is not in the Definition")
        if axes[k]["type"] == "const" and v != axes[k]["value"]:
            raise InteropError(f"{where}: axis '{k}' = {v}, but the Definition fixes it at {axes[k]['value']}")
    missing = [k for k, a in axes.items() if a["type"] == "var" and k not in row["axes"]]
    if missing:
        raise InteropError(f"{where}: no value for var axis '{missing[0]}'")
    for name in row["inputs"]:
        if name not in definition["inputs"]:
            raise InteropError(f"{where}: input '{name}' is not in the Definition")
    for name, spec in definition["inputs"].items():
        desc = row["inputs"].get(name)
        if desc is None:
            raise InteropError(f"{where}: no descriptor for input '{name}'")
        if (spec["shape"] is None) != (desc["type"] == "scalar"):
            kind = "a scalar (shape null) needs" if spec["shape"] is None else "a tensor cannot take"
            raise InteropError(f"{where}: input '{name}' is {kind} type 'scalar'")


def _copy_blobs(rows: list[dict[str, Any]], definition: dict[str, Any], src: Path, out: Path) -> None:
    """Copy every safetensors file into ``out/data`` and check each tensor it gives."""
    copied: dict[Path, str] = {}
    for row in rows:
        axes = full_axes(definition, row["axes"])
        for name, desc in row["inputs"].items():
            if desc["type"] != "safetensors":
                continue
            file = _locate(src, desc["path"])
            spec = definition["inputs"][name]
            t = safetensors.load(file, desc["tensor_key"])
            want = shape_at(spec, axes)
            if tuple(t.shape) != want or str(t.dtype).removeprefix("torch.") != spec["dtype"]:
                raise InteropError(f"{file}: tensor '{desc['tensor_key']}' is {str(t.dtype)[6:]}"
                                   f"{list(t.shape)}; input '{name}' at workload {row['uuid']} "
                                   f"needs {spec['dtype']}{list(want or ())}")
            if file not in copied:
                rel = f"data/{len(copied)}_{file.name}"
                (out / "data").mkdir(exist_ok=True)
                shutil.copyfile(file, out / rel)
                copied[file] = rel
            desc["path"] = copied[file]


def _locate(src: Path, rel: str) -> Path:
    """A safetensors path of a workload: absolute, or relative to the workloads file's
    directory or one above it (FlashInfer-Trace paths are relative to the trace set's root)."""
    p = Path(rel)
    if p.is_absolute():
        if p.is_file():
            return p
        raise InteropError(f"{src}: safetensors file {rel} does not exist")
    for base in (src.parent, *src.parent.parents):
        if (base / p).is_file():
            return base / p
    raise InteropError(f"{src}: safetensors file {rel} is not found next to the workloads file "
                       "or in a directory above it")


def _smoke(definition: dict[str, Any], axes: dict[str, int]) -> bool:
    specs = [*definition["inputs"].values(), *definition["outputs"].values()]
    sizes = [shape_at(s, axes) or () for s in specs]
    return all(_numel(s) <= SMOKE_ELEMENTS for s in sizes)


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _derived_rows(definition: dict[str, Any]) -> list[dict[str, Any]]:
    """Smoke workloads when no workloads file is given: every var axis at 16, then at 7
    (smaller powers of two if the constant axes make 16 too large)."""
    var = [k for k, a in definition["axes"].items() if a["type"] == "var"]
    rows = []
    for v in (16, 8, 4, 2, 1):
        if _smoke(definition, full_axes(definition, dict.fromkeys(var, v))):
            rows.append({"uuid": f"forge-smoke-{v}", "axes": dict.fromkeys(var, v)})
            break
    if rows and var and rows[0]["axes"][var[0]] > 7:
        rows.append({"uuid": "forge-smoke-7", "axes": dict.fromkeys(var, 7)})
    for r in rows:
        r["inputs"] = {n: {"type": "random"} for n in definition["inputs"]}
    return rows


def _tensor(spec: dict[str, Any], dist: dict[str, Any]) -> dict[str, Any]:
    return {"dtype": spec["dtype"], "shape": list(spec["shape"] or []), **({"dist": dist} if dist else {})}


def _dist(spec: dict[str, Any], declarative: bool) -> dict[str, Any]:
    if not declarative:
        return {"kind": "custom", "note": "made as FlashInfer-Bench makes it: the workload's "
                "random, scalar or safetensors input (make_inputs, workloads.json)"}
    if spec["dtype"] in FLOATS:
        return {"kind": "normal", "mean": 0.0, "std": 1.0}
    low, high = (-128, 128) if spec["dtype"] == "int8" else (-1024, 1024)
    return {"kind": "randint", "low": float(low), "high": float(high)}


def is_declarative(definition: dict[str, Any], rows: list[dict[str, Any]]) -> bool:
    """Whether task.toml's dists describe every input (all random, no bool): then the task
    needs no make_inputs and the judge may derive hidden workloads."""
    kinds = {d["type"] for r in rows for d in r["inputs"].values()}
    return kinds == {"random"} and all(s["dtype"] != "bool" for s in definition["inputs"].values())


def task_toml(definition: dict[str, Any], rows: list[dict[str, Any]], notes: list[str]) -> dict[str, Any]:
    """The task.toml table for ``definition`` at ``rows``."""
    declarative = is_declarative(definition, rows)
    op_type = definition["op_type"]
    family = FAMILIES.get(op_type, "other")
    if family == "other":
        notes.append(f"op_type '{op_type}': no built-in agent family; use an LLM agent")
    if op_type == "sampling":
        notes.append("op_type 'sampling': the outputs are random draws; forge checks outputs "
                     "element by element, so a run needs a deterministic reference")
    axes = {}
    for name, a in definition["axes"].items():
        entry: dict[str, Any] = {"description": " ".join((a.get("description") or "").split())}
        if a["type"] == "const":
            entry.update(min=a["value"], max=a["value"])
        axes[name] = entry
    seen: dict[tuple, str] = {}
    workloads = []
    for r in rows:
        full = full_axes(definition, r["axes"])
        key = tuple(full.items())
        if key in seen:
            notes.append(f"workload {r['uuid']} repeats the axes of {seen[key]}; forge keys "
                         "workloads by axes, so it is left out")
            continue
        seen[key] = r["uuid"]
        workloads.append({**full, "smoke": _smoke(definition, full)})
    if not any(w["smoke"] for w in workloads):
        notes.append(f"no workload is small enough for the CPU interpreter (every tensor <= "
                     f"{SMOKE_ELEMENTS:,} elements); runs need a GPU")
    floats = sorted({s["dtype"] for s in definition["outputs"].values() if s["dtype"] in FLOATS})
    judge: dict[str, Any] = {}
    if floats:
        judge["tolerance"] = dict.fromkeys(floats, HARNESS_TOLERANCE)
        notes.append(f"tolerance: FlashInfer-Bench's default atol = rtol = {HARNESS_TOLERANCE:g} "
                     f"for {', '.join(floats)} outputs (a Definition carries none)")
    if not declarative:
        judge["hidden"] = False
        notes.append("hidden workloads off: scalar or safetensors inputs exist only at the "
                     "workloads' own axes")
    out = {"name": definition["name"],
           "description": " ".join((definition.get("description") or "").split()),
           "arch": "sm90", "language": "triton", "family": family, "axes": axes,
           "inputs": {n: _tensor(s, _dist(s, declarative)) for n, s in definition["inputs"].items()},
           "outputs": {n: _tensor(s, {}) for n, s in definition["outputs"].items()},
           "workload": workloads}
    if judge:
        out["judge"] = judge
    return out


SHIM = f'''

{SHIM_MARK} (written by `forge new`)
def make_inputs(axes, seed, device="cpu"):
    from pathlib import Path

    from forgekernel.interop.workload_inputs import make

    return make(Path(__file__).parent, axes, seed, device)
'''


def convert(def_path: str | Path, out_dir: str | Path, workloads: str | Path | None = None) -> Imported:
    """Write the task directory ``out_dir`` (new or empty) for a Definition; return it with
    the note lines (fields forge does not use, choices it made).

    This module imports neither pydantic nor tomli_w at the top, so the Definition and
    Workload readers work with torch alone (benchmarks/flashinfer_solution_gpu.py)."""
    src, out = Path(def_path), Path(out_dir)
    definition, notes = read_definition(src)
    if workloads is not None:
        rows = read_workloads(Path(workloads), definition, notes)
    else:
        scalars = [n for n, s in definition["inputs"].items() if s["shape"] is None]
        if scalars:
            raise InteropError(f"{src}: input '{scalars[0]}' is a scalar; its value comes from "
                               "workloads: pass --workloads FILE")
        rows = _derived_rows(definition)
        if not rows:
            raise InteropError(f"{src}: no workloads given and no small one can be made (the "
                               "const axes are too large for the CPU); pass --workloads FILE")
        notes.append(f"no --workloads: smoke workloads with every var axis at "
                     f"{' and '.join(str(next(iter(r['axes'].values()), 1)) for r in rows)}, random inputs")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InteropError(f"{out}: exists and is not an empty directory")
    made = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    try:
        _write(definition, rows, notes, src if workloads is None else Path(workloads), out)
    except BaseException:
        if made:  # no half-made task dir is left behind
            shutil.rmtree(out, ignore_errors=True)
        raise
    return Imported(out, notes)


def _write(definition: dict[str, Any], rows: list[dict[str, Any]], notes: list[str], src: Path,
           out: Path) -> None:
    import tomli_w

    from forgekernel.task import load_task

    _copy_blobs(rows, definition, src, out)
    table = task_toml(definition, rows, notes)
    reference = definition["reference"].rstrip("\n") + "\n"
    if not is_declarative(definition, rows):
        reference += SHIM
    (out / "reference.py").write_text(reference)
    (out / "definition.json").write_text(json.dumps(definition, indent=2) + "\n")
    (out / "workloads.json").write_text(json.dumps(rows, indent=1) + "\n")
    (out / "task.toml").write_text(tomli_w.dumps(table))
    load_task(out)  # what was written must load
