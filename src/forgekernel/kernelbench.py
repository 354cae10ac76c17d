"""KernelBench compatibility: turn a KernelBench-style problem file into a task directory.

A KernelBench problem is one Python file defining ``class Model(nn.Module)``,
``get_inputs()`` (the forward arguments) and ``get_init_inputs()`` (the constructor
arguments). :func:`convert` keeps that file unchanged as the task's ``reference.py``, so the
judge can build ``Model`` and a candidate's ``ModelNew`` under one seed, and writes a
``task.toml`` with ``format = "kernelbench"`` describing what ``get_inputs()`` returns: one
axis per distinct dimension size (named after a module constant of that value when exactly
one has it, else ``D0``, ``D1``, ...), one workload at those sizes, the outputs inferred on
meta tensors, and a family guessed from the names in the file.
"""

from __future__ import annotations

import ast
import inspect
import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forgekernel.errors import ForgeError
from forgekernel.records import DTYPES, BudgetSpec, TargetSpec

REQUIRED = ("Model", "get_inputs", "get_init_inputs")
SMOKE_MAX_ELEMENTS = 65536
"""A converted workload is marked smoke when no input or output has more elements."""

_SCALARS = (bool, int, float)
"""Plain numbers get_inputs() may return next to tensors (described as 0-d bool/int64/float64)."""
_RESERVED = {"min", "max", "abs", "log2", "ceil", "floor", "and", "or", "not"}
_FAMILY_PATTERNS = (  # (family, regex over the lower-cased file name and Model source)
    ("cross_entropy", r"cross_?entropy|nll_loss"),
    ("softmax", r"softmax"),
    ("rownorm", r"layer_?norm|rms_?norm|layer normali[sz]ation|rms normali[sz]ation"),
    ("rope", r"\brope\b|rotary"),
    ("matmul", r"matmul|matrix[ _]multiplication|\bbmm\b|\bmm\b|\bgemm\b|\blinear\b|einsum|[\w)\]] ?@ ?[\w(]"),
)
_ELEMENTWISE = (r"\b(relu|gelu|silu|swish|sigmoid|tanh|elu|selu|softplus|softsign|hardtanh|"
                r"leaky_?relu|hardsigmoid|hardswish|mish)\b")


class KernelBenchError(ForgeError, ValueError):
    """A file that cannot be converted; the message is one line naming the file."""


@dataclass
class _Tensor:
    dtype: str
    shape: tuple[int, ...]
    low: int | None = None
    high: int | None = None
    note: str = ""


@dataclass
class _Problem:
    inputs: dict[str, _Tensor]
    outputs: dict[str, _Tensor] | None
    outputs_note: str = ""
    family: str = "other"
    description: str = ""
    constants: dict[int, list[str]] = field(default_factory=dict)


def is_kernelbench_file(path: str | Path) -> bool:
    """True if ``path`` is a Python file defining Model, get_inputs and get_init_inputs."""
    p = Path(path)
    if p.suffix != ".py" or not p.is_file():
        return False
    try:
        tree = ast.parse(p.read_text(), filename=str(p))
    except (SyntaxError, ValueError, UnicodeDecodeError):
        return False
    return not _missing(tree)


def convert(py_path: str | Path, out_dir: str | Path) -> Path:
    """Write the task directory ``out_dir`` (new or empty) for a KernelBench file; return it."""
    src, out = Path(py_path), Path(out_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise KernelBenchError(f"{out}: exists and is not an empty directory; pick a new --out")
    problem = _inspect(src)
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, out / "reference.py")
    (out / "task.toml").write_text(_render(src, problem))
    from forgekernel.task import load_task

    load_task(out)  # what was written must load; a failure here is a bug in this module
    return out


# ------------------------------------------------------------------ reading the file


def _missing(tree: ast.Module) -> list[str]:
    defined: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            defined.add(node.name)
        elif isinstance(node, ast.Assign):
            defined.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.ImportFrom, ast.Import)):
            defined.update((a.asname or a.name).split(".")[0] for a in node.names)
    return [name for name in REQUIRED if name not in defined]


def _inspect(src: Path) -> _Problem:
    if not src.is_file():
        raise KernelBenchError(f"{src}: no such file")
    try:
        text = src.read_text()
        tree = ast.parse(text, filename=str(src))
    except UnicodeDecodeError:
        raise KernelBenchError(f"{src}: not UTF-8 text") from None
    except SyntaxError as exc:
        raise KernelBenchError(f"{src}: cannot parse: SyntaxError: {exc.msg} (line {exc.lineno})") from None
    missing = _missing(tree)
    if missing:
        raise KernelBenchError(f"{src}: not a KernelBench-style file: it does not define "
                               f"{', '.join(missing)} (needs class Model(nn.Module), get_inputs() "
                               "and get_init_inputs())")
    module = _import(src)
    values = _call_get_inputs(module, src)
    names = _input_names(module.Model, len(values))
    inputs = {n: _describe_tensor(t, src, i) for i, (n, t) in enumerate(zip(names, values, strict=True))}
    outputs, note = _infer_outputs(module, values, src)
    source = _model_source(text, tree)
    return _Problem(inputs=inputs, outputs=outputs, outputs_note=note,
                    family=_family(src.stem + "\n" + source), description=_description(module, src),
                    constants=_constants(module))


def _import(src: Path):
    from forgekernel.task import load_module

    try:
        module = load_module(src)
    except SystemExit as exc:
        raise KernelBenchError(f"{src}: calls exit ({exc.code}) on import") from None
    except BaseException as exc:  # any import failure becomes one line
        raise KernelBenchError(f"{src}: fails to import: {_one_line(exc)}") from None
    for name in REQUIRED:
        if not callable(getattr(module, name, None)):
            raise KernelBenchError(f"{src}: {name} must be callable")
    return module


def _call_get_inputs(module, src: Path) -> list:
    """get_inputs() on meta tensors when it allows (no memory); for real otherwise.

    A real call is also made when integer tensors appear, to read their value range.
    """
    import torch
    from torch.distributions import Distribution

    validate = Distribution._validate_args  # argument checks call .item(), which meta cannot
    try:
        Distribution.set_default_validate_args(False)
        with torch.device("meta"):
            values = _as_list(module.get_inputs(), src)
        if all(not isinstance(t, torch.Tensor) or t.is_floating_point() for t in values):
            return values
    except KernelBenchError:
        raise
    except Exception:  # not meta-friendly (numpy, .item(), ...): fall through to a real call
        pass
    finally:
        Distribution.set_default_validate_args(validate)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            return _as_list(module.get_inputs(), src)
    except KernelBenchError:
        raise
    except Exception as exc:
        raise KernelBenchError(f"{src}: get_inputs() fails: {_one_line(exc)}") from None


def _as_list(values: Any, src: Path) -> list:
    import torch

    if isinstance(values, torch.Tensor):
        values = [values]
    if not isinstance(values, (list, tuple)) or not values:
        raise KernelBenchError(f"{src}: get_inputs() must return a non-empty list of tensors "
                               f"(got {type(values).__name__})")
    for i, v in enumerate(values):
        if not isinstance(v, (torch.Tensor, *_SCALARS)):
            raise KernelBenchError(f"{src}: get_inputs() item {i} is {type(v).__name__}; inputs "
                                   "must be tensors or plain numbers (other constants belong in "
                                   "get_init_inputs())")
    return list(values)


def _input_names(model_cls, count: int) -> list[str]:
    """The forward's parameter names when they fit, else in0, in1, ..."""
    fallback = [f"in{i}" for i in range(count)]
    try:
        params = list(inspect.signature(model_cls.forward).parameters.values())[1:]
    except (TypeError, ValueError):
        return fallback
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if (len(names) < count or any(p.kind is p.VAR_POSITIONAL for p in params[:count])
            or not all(n.isascii() for n in names)):
        return fallback
    return names[:count]


def _describe_tensor(t, src: Path, i: int) -> _Tensor:
    if isinstance(t, _SCALARS):
        dtype = "bool" if isinstance(t, bool) else "int64" if isinstance(t, int) else "float64"
        return _Tensor(dtype=dtype, shape=(), note=f"a plain number ({t!r}), passed as is")
    dtype = str(t.dtype).removeprefix("torch.")
    if dtype not in DTYPES:
        raise KernelBenchError(f"{src}: get_inputs() item {i} has dtype {dtype}; supported: "
                               f"{', '.join(DTYPES)}")
    spec = _Tensor(dtype=dtype, shape=tuple(int(d) for d in t.shape))
    if not t.is_floating_point() and t.device.type != "meta":
        spec.low = int(t.min()) if t.numel() else 0
        spec.high = (int(t.max()) if t.numel() else 0) + 1
    return spec


def _infer_outputs(module, values: list, src: Path) -> tuple[dict[str, _Tensor] | None, str]:
    """Outputs of Model.forward: on meta tensors, else one real CPU call; (None, why) if neither."""
    import torch

    try:
        init = module.get_init_inputs()
    except Exception as exc:
        raise KernelBenchError(f"{src}: get_init_inputs() fails: {_one_line(exc)}") from None
    try:
        with torch.device("meta"):
            args = [torch.empty_like(t, device="meta") if isinstance(t, torch.Tensor) else t
                    for t in values]
            out = module.Model(*init)(*args)
    except Exception as meta_exc:  # not meta-friendly (.item(), data-dependent shapes, ...)
        try:
            out = _real_forward(module, init)
        except Exception as exc:  # the reason is written into task.toml
            return None, (f"forward fails on meta tensors ({_one_line(meta_exc)}) and on CPU "
                          f"({_one_line(exc)})")
    outs = out if isinstance(out, (tuple, list)) else (out,)
    specs = {}
    for i, o in enumerate(outs):
        dtype = str(getattr(o, "dtype", "")).removeprefix("torch.")
        if not isinstance(o, torch.Tensor) or dtype not in DTYPES:
            return None, f"forward returns {type(o).__name__} {dtype} at position {i}"
        specs[f"out{i}" if len(outs) > 1 else "out"] = _Tensor(dtype, tuple(int(d) for d in o.shape))
    return specs, ""


def _real_forward(module, init: list):
    import torch

    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(0)
        model = module.Model(*init)
        return model(*module.get_inputs())


def _model_source(text: str, tree: ast.Module) -> str:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            return ast.get_source_segment(text, node) or ""
    return ""


def _family(text: str) -> str:
    """A family from names in the file: one clear match among the main ones, else other."""
    low = text.lower()
    if re.search(r"conv|pool", low):
        return "other"
    hits = [fam for fam, pattern in _FAMILY_PATTERNS if re.search(pattern, low)]
    if len(hits) == 1:
        return hits[0]
    if not hits and re.search(_ELEMENTWISE, low):
        return "elementwise"
    return "other"


def _description(module, src: Path) -> str:
    for doc in (inspect.getdoc(module.Model), module.__doc__):
        if doc and doc.strip() and not doc.strip().startswith("Base class for all neural"):
            text = " ".join(doc.strip().split("\n\n")[0].split())
            return "".join(c for c in text if c.isprintable())
    return f"KernelBench problem {src.name}"


def _constants(module) -> dict[int, list[str]]:
    """Module-level int constants by value (candidate axis names)."""
    found: dict[int, list[str]] = {}
    for name, value in vars(module).items():
        if (isinstance(value, int) and not isinstance(value, bool) and name.isascii()
                and name.isidentifier() and not name.startswith("_") and name not in _RESERVED):
            found.setdefault(value, []).append(name)
    return found


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


# ------------------------------------------------------------------ writing task.toml


def _axes(problem: _Problem) -> dict[int, str]:
    """Distinct input dimension sizes -> axis names, in order of appearance."""
    sizes: list[int] = []
    for spec in problem.inputs.values():
        for d in spec.shape:
            if d not in sizes:
                sizes.append(d)
    taken = {n for names in problem.constants.values() for n in names}
    names: dict[int, str] = {}
    for i, size in enumerate(sizes):
        named = problem.constants.get(size, [])
        if len(named) == 1:  # a constant's name is unique to its value
            names[size] = named[0]
            continue
        name = f"D{i}"
        while name in taken or name in names.values():
            name += "_"
        names[size] = name
    return names


def _flops(problem: _Problem, axes: dict[int, str]) -> str | None:
    """2 * batch * M * K * N for a plain (batched) product of two inputs, else None."""
    shapes = [s.shape for s in problem.inputs.values()]
    if problem.family != "matmul" or len(shapes) != 2:
        return None
    a, b = shapes
    if len(a) != len(b) or len(a) not in (2, 3) or a[:-2] != b[:-2] or a[-1] != b[-2]:
        return None
    dims = [*a[:-2], a[-2], a[-1], b[-1]]
    return " * ".join(["2"] + [axes[d] for d in dims])


def _shape(shape: tuple[int, ...], axes: dict[int, str]) -> str:
    return json.dumps([axes.get(d, d) for d in shape])


def _tensor_lines(group: str, name: str, spec: _Tensor, axes: dict[int, str]) -> list[str]:
    lines = [f"# {spec.note}"] if spec.note else []
    lines += [f"[{group}.{name}]", f'dtype = "{spec.dtype}"', f"shape = {_shape(spec.shape, axes)}"]
    if group == "inputs" and not spec.note:  # a plain number's value comes from get_inputs()
        lines.append(_dist_line(spec))
    return lines + [""]


def _dist_line(spec: _Tensor) -> str:
    if spec.low is not None:
        return f'dist = {{ kind = "randint", low = {spec.low}, high = {max(spec.high, spec.low + 1)} }}'
    if spec.dtype == "bool":
        return 'dist = { kind = "randint", low = 0, high = 2 }'
    return 'dist = { kind = "normal", mean = 0.0, std = 1.0 }'


def _render(src: Path, problem: _Problem) -> str:
    axes = _axes(problem)
    name = re.sub(r"[^0-9a-zA-Z]+", "_", src.stem).strip("_").lower() or "kernelbench_problem"
    tensors = list(problem.inputs.values()) + list((problem.outputs or {}).values())
    smoke = all(_numel(t.shape) <= SMOKE_MAX_ELEMENTS for t in tensors)
    lines = [f"# Converted by forgekernel from the KernelBench-style file {src.name}.",
             "# The values come from get_inputs() in reference.py; [inputs] describes them.",
             f"name = {json.dumps(name)}", f"description = {json.dumps(problem.description, ensure_ascii=False)}",
             'arch = "sm90"', 'language = "triton"', f'family = "{problem.family}"',
             'format = "kernelbench"', "", "[axes]"]
    for size, axis in axes.items():
        lines.append(f'{axis} = {{ description = "size {size} in get_inputs()" }}')
    lines.append("")
    for n, spec in problem.inputs.items():
        lines += _tensor_lines("inputs", n, spec, axes)
    if problem.outputs is None:
        lines += [f"# [outputs] not declared: {problem.outputs_note}", ""]
    for n, spec in (problem.outputs or {}).items():
        lines += _tensor_lines("outputs", n, spec, axes)
    lines += ["[[workload]]"] + [f"{axis} = {size}" for size, axis in axes.items()]
    lines += ["smoke = true"] if smoke else []
    flops = _flops(problem, axes)
    lines += ["", "[cost]", f'flops = "{flops}"'] if flops else []
    lines += ["", "[judge]", "# get_inputs() fixes the shapes, so the judge cannot derive others.",
              "hidden = false", "", "[target]", f"speedup = {TargetSpec().speedup}", "",
              "[budget]", f"iterations = {BudgetSpec().iterations}",
              f"minutes = {BudgetSpec().minutes}", "", "[policy]", "forbid = []", ""]
    return "\n".join(lines)


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n
