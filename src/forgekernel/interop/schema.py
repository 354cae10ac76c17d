"""The published FlashInfer-Trace and SOL-ExecBench JSON schemas, as field tables, and a
validator that lists every problem of a document (one line each).

Vendored from the public schema (flashinfer-bench ``flashinfer_bench/data``, SOL-ExecBench
``core/data/solution.py``) as of 2026-04: field names, which are required, their types and
the allowed values. No network is used; update these tables when the formats change.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Any

DTYPES = ("float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float4_e2m1",
          "int64", "int32", "int16", "int8", "bool")
"""Tensor element types a Definition may name."""
LANGUAGES = ("python", "triton", "cpp", "cuda", "tilelang")
BINDINGS = ("tvm-ffi", "torch")
STATUSES = ("PASSED", "INCORRECT_SHAPE", "INCORRECT_NUMERICAL", "INCORRECT_DTYPE",
            "RUNTIME_ERROR", "COMPILE_ERROR", "TIMEOUT")
SOLEXEC_LANGUAGES = ("pytorch", "triton", "tlx", "cute_dsl", "cutile", "cudnn_frontend",
                     "cutlass", "cudnn", "cublas", "cuda_cpp")
SOLEXEC_HARDWARE = ("B200", "LOCAL")

Check = Callable[[Any, str], list[str]]
"""A check takes a value and where it is, and returns the problems (empty: valid)."""


def _is(kind: type | tuple[type, ...], name: str) -> Check:
    def check(v: Any, at: str) -> list[str]:
        ok = isinstance(v, kind) and not (isinstance(v, bool) and bool not in _tuple(kind))
        return [] if ok else [f"{at}: must be {name} (got {v!r:.60})"]
    return check


def _tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def text(v: Any, at: str) -> list[str]:
    return _is(str, "a non-empty string")(v, at) or ([] if v else [f"{at}: must not be empty"])


def opt_text(v: Any, at: str) -> list[str]:
    return [] if v is None else _is(str, "a string or null")(v, at)


def count(v: Any, at: str) -> list[str]:
    return _is(int, "an integer")(v, at) or ([] if v >= 0 else [f"{at}: must be >= 0"])


def number(v: Any, at: str) -> list[str]:
    return _is((int, float), "a number")(v, at) or ([] if v >= 0 or v != v else [f"{at}: must be >= 0"])


def boolean(v: Any, at: str) -> list[str]:
    return [] if isinstance(v, bool) else [f"{at}: must be true or false (got {v!r:.60})"]


def one_of(*allowed: str) -> Check:
    def check(v: Any, at: str) -> list[str]:
        return [] if v in allowed else [f"{at}: {v!r:.60} is not one of {', '.join(allowed)}"]
    return check


def list_of(item: Check, *, min_len: int = 0) -> Check:
    def check(v: Any, at: str) -> list[str]:
        if not isinstance(v, list):
            return [f"{at}: must be a list (got {v!r:.60})"]
        if len(v) < min_len:
            return [f"{at}: needs at least {min_len} entr{'y' if min_len == 1 else 'ies'}"]
        return [p for i, x in enumerate(v) for p in item(x, f"{at}[{i}]")]
    return check


def map_of(item: Check) -> Check:
    def check(v: Any, at: str) -> list[str]:
        if not isinstance(v, dict):
            return [f"{at}: must be an object (got {v!r:.60})"]
        return [p for k, x in v.items() for p in (text(k, f"{at} key") + item(x, f"{at}.{k}"))]
    return check


def record(fields: dict[str, tuple[bool, Check]], *, extra: bool = False) -> Check:
    """An object with these fields (name -> (required, check)); other keys are problems
    unless ``extra``."""
    def check(v: Any, at: str) -> list[str]:
        if not isinstance(v, dict):
            return [f"{at}: must be an object (got {v!r:.60})"]
        out = [f"{at or 'top level'}: missing required field '{k}'" for k, (req, _) in fields.items()
               if req and k not in v]
        for k, x in v.items():
            if k in fields:
                out += fields[k][1](x, f"{at}.{k}" if at else k)
            elif not extra:
                out.append(f"{at or 'top level'}: field '{k}' is not in the schema")
        return out
    return check


def tagged(tag: str, variants: dict[str, Check]) -> Check:
    """An object whose ``tag`` field picks the record that checks it."""
    def check(v: Any, at: str) -> list[str]:
        if not isinstance(v, dict):
            return [f"{at}: must be an object (got {v!r:.60})"]
        kind = v.get(tag)
        if kind not in variants:
            return [f"{at}.{tag}: {kind!r:.60} is not one of {', '.join(variants)}"]
        return variants[kind](v, at)
    return check


def shape(v: Any, at: str) -> list[str]:
    return [] if v is None else list_of(text)(v, at)


def source_path(v: Any, at: str) -> list[str]:
    bad = text(v, at)
    if bad:
        return bad
    p = PurePosixPath(v)
    if p.is_absolute() or ".." in p.parts or "\\" in v:
        return [f"{at}: {v!r} must be a relative path without '..'"]
    return []


def entry_point(v: Any, at: str) -> list[str]:
    bad = text(v, at)
    if not bad and v.count("::") != 1:
        bad = [f"{at}: {v!r} must be '<file path>::<function name>'"]
    return bad


AXIS = tagged("type", {
    "const": record({"type": (True, text), "value": (True, count), "description": (False, opt_text)}),
    "var": record({"type": (True, text), "description": (False, opt_text)}),
})
TENSOR = record({"shape": (True, shape), "dtype": (True, one_of(*DTYPES)),
                 "description": (False, opt_text)})
DEFINITION_FIELDS = ("name", "op_type", "axes", "inputs", "outputs", "reference", "tags",
                     "description", "constraints")
DEFINITION = record({
    "name": (True, text), "op_type": (True, text), "axes": (True, map_of(AXIS)),
    "inputs": (True, map_of(TENSOR)), "outputs": (True, map_of(TENSOR)),
    "reference": (True, text), "tags": (False, list_of(text)),
    "description": (False, opt_text), "constraints": (False, list_of(text)),
})
INPUT = tagged("type", {
    "random": record({"type": (True, text)}),
    "scalar": record({"type": (True, text), "value": (True, _is((int, float, bool), "a number or bool"))}),
    "safetensors": record({"type": (True, text), "path": (True, text), "tensor_key": (True, text)}),
})
WORKLOAD = record({"uuid": (True, text), "axes": (True, map_of(count)), "inputs": (True, map_of(INPUT))})
SOURCE = record({"path": (True, source_path), "content": (True, text)})
SPEC = record({
    "language": (True, one_of(*LANGUAGES)), "target_hardware": (True, list_of(text, min_len=1)),
    "entry_point": (True, entry_point), "dependencies": (False, list_of(text)),
    "destination_passing_style": (False, boolean),
    "binding": (False, lambda v, at: [] if v is None else one_of(*BINDINGS)(v, at)),
})
SOLUTION = record({
    "name": (True, text), "definition": (True, text), "author": (True, text),
    "spec": (True, SPEC), "sources": (True, list_of(SOURCE, min_len=1)),
    "description": (False, opt_text),
})
EVALUATION = record({
    "status": (True, one_of(*STATUSES)),
    "environment": (True, record({"hardware": (True, text), "libs": (False, map_of(_is(str, "a string")))})),
    "timestamp": (True, text), "log": (False, _is(str, "a string")),
    "correctness": (False, lambda v, at: [] if v is None else record({
        "max_relative_error": (False, number), "max_absolute_error": (False, number),
        "extra": (False, lambda x, a: [] if x is None else _is(dict, "an object")(x, a))})(v, at)),
    "performance": (False, lambda v, at: [] if v is None else record({
        "latency_ms": (False, number), "reference_latency_ms": (False, number),
        "speedup_factor": (False, number)})(v, at)),
})
TRACE = record({
    "definition": (True, text), "workload": (True, WORKLOAD),
    "solution": (False, opt_text),
    "evaluation": (False, lambda v, at: [] if v is None else EVALUATION(v, at)),
})
SOLEXEC_SPEC = record({
    "languages": (True, list_of(one_of(*SOLEXEC_LANGUAGES), min_len=1)),
    "target_hardware": (True, list_of(one_of(*SOLEXEC_HARDWARE), min_len=1)),
    "entry_point": (True, entry_point), "dependencies": (False, list_of(text)),
    "destination_passing_style": (False, boolean),
    "binding": (False, lambda v, at: [] if v is None else one_of("torch")(v, at)),
    "compile_options": (False, lambda v, at: [] if v is None else record({
        k: (False, list_of(_is(str, "a string"))) for k in ("cflags", "cuda_cflags", "ld_flags")})(v, at)),
})
SOLEXEC_SOLUTION = record({
    "name": (True, text), "definition": (True, text), "author": (True, text),
    "spec": (True, SOLEXEC_SPEC), "sources": (True, list_of(SOURCE, min_len=1)),
    "description": (False, opt_text),
})


def _solution_rules(data: dict[str, Any]) -> list[str]:
    """Cross-field rules: unique source paths, the entry file among them."""
    paths = [s.get("path") for s in data.get("sources", []) if isinstance(s, dict)]
    out = [f"sources: duplicate path '{p}'" for i, p in enumerate(paths) if p in paths[:i]]
    entry = data.get("spec", {}).get("entry_point", "") if isinstance(data.get("spec"), dict) else ""
    if isinstance(entry, str) and entry.count("::") == 1 and entry.split("::")[0] not in paths:
        out.append(f"spec.entry_point: file '{entry.split('::')[0]}' is not among the sources")
    return out


def _definition_rules(data: dict[str, Any]) -> list[str]:
    axes = data.get("axes") if isinstance(data.get("axes"), dict) else {}
    ins = data.get("inputs") if isinstance(data.get("inputs"), dict) else {}
    outs = data.get("outputs") if isinstance(data.get("outputs"), dict) else {}
    out = [f"outputs.{k}: the name is also an input" for k in outs if k in ins]
    for group, specs in (("inputs", ins), ("outputs", outs)):
        for name, spec in specs.items():
            dims = spec.get("shape") if isinstance(spec, dict) else None
            out += [f"{group}.{name}.shape: axis '{d}' is not in axes"
                    for d in (dims if isinstance(dims, list) else []) if d not in axes]
    return out


def _trace_rules(data: dict[str, Any]) -> list[str]:
    ev = data.get("evaluation")
    if not isinstance(ev, dict):
        return []
    status, has_c, has_p = ev.get("status"), ev.get("correctness") is not None, ev.get("performance") is not None
    want = {"PASSED": (True, True), "INCORRECT_NUMERICAL": (True, False)}.get(status, (False, False))
    out = []
    if has_c != want[0]:
        out.append(f"evaluation: correctness must be {'present' if want[0] else 'absent'} when status is {status}")
    if has_p != want[1]:
        out.append(f"evaluation: performance must be {'present' if want[1] else 'absent'} when status is {status}")
    return out


def problems(kind: str, data: Any) -> list[str]:
    """Every way ``data`` breaks the schema of ``kind`` (definition, workload, solution,
    trace or solexec_solution); an empty list means it validates."""
    check, rules = {
        "definition": (DEFINITION, _definition_rules), "workload": (WORKLOAD, None),
        "solution": (SOLUTION, _solution_rules), "trace": (TRACE, _trace_rules),
        "solexec_solution": (SOLEXEC_SOLUTION, _solution_rules),
    }[kind]
    found = check(data, "")
    if not found and rules is not None:
        found = rules(data)
    return found
