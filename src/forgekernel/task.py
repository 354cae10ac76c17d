"""Load and validate task directories.

A task dir holds ``task.toml`` and ``reference.py``. Every problem is reported as one
:class:`TaskError` line naming the file, the key and what is allowed.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import signal
import sys
import threading
import time
import tomllib
import typing
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from pydantic import BaseModel, ValidationError

from forgekernel import exprs
from forgekernel.errors import ForgeError
from forgekernel.records import TaskSpec, TensorSpec

TOP_KEYS = ("name", "description", "arch", "language", "languages", "family", "format", "axes", "inputs",
            "outputs", "workload", "judge", "target", "budget", "policy", "cost", "peer")


class TaskError(ForgeError, ValueError):
    """A task that cannot be used; the message is one line for the user."""


def load_task(path: str | Path, *, check_reference: bool = True) -> TaskSpec:
    """Load ``path`` (a task dir or its task.toml) and validate it completely."""
    root = Path(path)
    if root.is_file() and root.name == "task.toml":
        root = root.parent
    if not root.exists():
        raise TaskError(f"{root}: no such task directory")
    toml_path = root / "task.toml"
    if not toml_path.is_file():
        raise TaskError(f"{root}: not a task directory (no task.toml); a KernelBench .py file "
                        "is accepted by `forge new` too")
    try:
        raw = tomllib.loads(toml_path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise TaskError(f"{toml_path}: not valid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise TaskError(f"{toml_path}: not UTF-8 text") from None
    task = parse_task(raw, toml_path)
    ref = root / "reference.py"
    if not ref.is_file():
        raise TaskError(f"{ref}: missing; a task needs reference.py defining run(*inputs)")
    if check_reference:
        check_reference_module(task)
    return task


def parse_task(raw: dict[str, Any], toml_path: Path) -> TaskSpec:
    """Turn the parsed TOML into a TaskSpec, with cross-checks."""
    where = str(toml_path)
    unknown = [k for k in raw if k not in TOP_KEYS]
    if unknown:
        raise TaskError(f"{where}: unknown key '{unknown[0]}'; allowed keys: {', '.join(TOP_KEYS)}")
    data = dict(raw)
    data["root"] = str(toml_path.parent.resolve())
    workloads = data.pop("workload", [])
    peers = data.pop("peer", [])  # `forge compare`'s library peers: checked here, read there
    if not isinstance(workloads, list):
        raise TaskError(f"{where}: workload must be an array of tables, one [[workload]] per shape")
    data["workloads"] = [_workload(w, i, where) for i, w in enumerate(workloads)]
    try:  # strict, as JSON: TOML's types must match ("90" or true is not a number)
        task = TaskSpec.model_validate_json(json.dumps(data, default=str), strict=True)
    except ValidationError as exc:
        raise TaskError(f"{where}: {_describe(exc, data)}") from None
    _cross_check(task, where)
    if peers:
        from forgekernel.compare.peers import parse_peers

        parse_peers(peers, task, where)
    return task


def _workload(w: Any, i: int, where: str) -> dict[str, Any]:
    if not isinstance(w, dict):
        raise TaskError(f"{where}: workload[{i}] must be a table of axis values")
    w = dict(w)
    smoke = w.pop("smoke", False)
    if not isinstance(smoke, bool):
        raise TaskError(f"{where}: workload[{i}].smoke must be true or false")
    for k, v in w.items():
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise TaskError(f"{where}: workload[{i}].{k} = {v!r}: axis values must be integers >= 1 "
                            "(>= 0 where the axis allows it, as a KernelBench padding = 0)")
    return {"axes": w, "smoke": smoke}


def _describe(exc: ValidationError, data: dict[str, Any]) -> str:
    err = exc.errors()[0]
    loc = list(err["loc"])
    if loc and loc[0] == "workloads":
        loc[0] = "workload"
    key = ".".join(str(p) for p in loc if p not in ("function-after",))
    key = key.replace(".literal['", "").replace("']", "")
    msg, kind, got = err["msg"], err["type"], err.get("input")
    if kind == "extra_forbidden":
        allowed = _allowed_keys(tuple(err["loc"][:-1]))
        return f"unknown key '{key}'" + (f"; allowed keys: {', '.join(allowed)}" if allowed else "")
    if kind == "literal_error":
        return f"{key} = {got!r} is not allowed; {msg.replace('Input should be', 'use')}"
    if kind == "missing":
        return f"missing required key '{key}'"
    if "shape" in loc[:-1] and isinstance(loc[loc.index("shape") + 1], int):
        at = ".".join(str(p) for p in loc[:loc.index("shape") + 1])
        return (f"{at}[{loc[loc.index('shape') + 1]}] = {got!r}: shape entries are axis names "
                "(strings) or fixed sizes (integers)")
    if kind in ("tuple_type", "list_type"):
        return f"{key} must be a list (TOML array) (got {got!r})"
    if kind in ("model_type", "dict_type"):
        return f"{key} must be a table (got {got!r})"
    if loc and loc[-1] in ("low", "high") and isinstance(got, str):
        return (f"{key} = {got!r}: dist bounds are numbers; for bounds that depend on an axis "
                "define make_inputs(axes, seed) in reference.py")
    return f"{key}: {msg.removeprefix('Value error, ')} (got {got!r})"


def _allowed_keys(path: tuple) -> list[str]:
    """Field names of the record at ``path`` inside a TaskSpec (empty if not a record)."""
    cur: Any = TaskSpec
    for part in path:
        if isinstance(cur, type) and issubclass(cur, BaseModel):
            field = cur.model_fields.get("workloads" if part == "workload" else str(part))
            if field is None:
                return []
            cur = field.annotation
        elif typing.get_origin(cur) in (dict, tuple):
            cur = typing.get_args(cur)[-1 if typing.get_origin(cur) is dict else 0]
        else:
            return []
    if not (isinstance(cur, type) and issubclass(cur, BaseModel)):
        return []
    return list(cur.model_fields)


def _cross_check(task: TaskSpec, where: str) -> None:
    if not task.inputs:
        raise TaskError(f"{where}: [inputs] is empty; declare each input's dtype and shape")
    _check_shapes(task, where)
    _check_workloads(task, where)
    for key in ("flops", "bytes"):
        text = getattr(task.cost, key)
        if text is None:
            continue
        try:
            unknown = exprs.names(text) - set(task.axes)
        except exprs.ExprError as exc:
            raise TaskError(f"{where}: cost.{key}: {exc}") from None
        if unknown:
            raise TaskError(f"{where}: cost.{key} uses '{sorted(unknown)[0]}', which is not an axis")
    for name in task.policy.forbid:
        if not name or " " in name:
            raise TaskError(f"{where}: policy.forbid entry {name!r} must be a dotted name")


def _check_shapes(task: TaskSpec, where: str) -> None:
    for group, specs in (("inputs", task.inputs), ("outputs", task.outputs)):
        for name, spec in specs.items():
            for dim in spec.shape:
                if isinstance(dim, str) and dim not in task.axes and task.format == "kernelbench":
                    _check_dim_expr(dim, f"[{group}.{name}].shape", task, where)
                elif isinstance(dim, str) and dim not in task.axes:
                    raise TaskError(f"{where}: [{group}.{name}].shape uses axis '{dim}' which "
                                    f"[axes] does not define (defined: {', '.join(task.axes) or 'none'})")
                if isinstance(dim, int) and dim < 1:
                    raise TaskError(f"{where}: [{group}.{name}].shape has size {dim}; sizes must be >= 1")


def _check_workloads(task: TaskSpec, where: str) -> None:
    if not task.workloads:
        raise TaskError(f"{where}: no [[workload]]; add at least one (and one with smoke = true)")
    for i, w in enumerate(task.workloads):
        missing = [a for a in task.axes if a not in w.axes]
        if missing:
            raise TaskError(f"{where}: workload[{i}] is missing axis '{missing[0]}'")
        extra = [a for a in w.axes if a not in task.axes]
        if extra:
            raise TaskError(f"{where}: workload[{i}] sets '{extra[0]}', which is not an axis "
                            f"(axes: {', '.join(task.axes)})")
        derived = task.derive(dict(w.axes))
        for a, spec in task.axes.items():
            if spec.follows is not None and (spec.follows not in task.axes
                                             or task.axes[spec.follows].follows is not None):
                raise TaskError(f"{where}: axis '{a}' follows '{spec.follows}', which is not "
                                "an axis of its own")
            if spec.smoke_scaled and spec.max is None:
                raise TaskError(f"{where}: axis '{a}' is smoke_scaled but has no max (the problem's value)")
            if spec.follows is not None and (derived is None or derived[a] != w.axes[a]):
                raise TaskError(f"{where}: workload[{i}].{a} = {w.axes[a]} does not keep the "
                                f"first workload's ratio to '{spec.follows}'")
        for a, v in w.axes.items():
            spec = task.axes[a]
            if spec.smoke_scaled and not w.smoke and v != spec.max:
                raise TaskError(f"{where}: workload[{i}].{a} = {v}: axis '{a}' is scaled in smoke "
                                f"workloads only; every other workload keeps it at {spec.max}")
            if v < spec.min or (spec.max is not None and v > spec.max) or v % spec.multiple_of:
                rules = [f">= {spec.min}"] + ([f"<= {spec.max}"] if spec.max is not None else [])
                rules += [f"a multiple of {spec.multiple_of}"] if spec.multiple_of > 1 else []
                raise TaskError(f"{where}: workload[{i}].{a} = {v} is outside axis '{a}' "
                                f"(must be {', '.join(rules)})")


def _check_dim_expr(dim: str, key: str, task: TaskSpec, where: str) -> None:
    """A KernelBench shape entry may be an expression over the axes."""
    try:
        unknown = exprs.names(dim) - set(task.axes)
    except exprs.ExprError as exc:
        raise TaskError(f"{where}: {key} entry {dim!r} is neither an axis nor an expression over "
                        f"the axes: {exc}") from None
    if unknown:
        raise TaskError(f"{where}: {key} entry {dim!r} uses '{sorted(unknown)[0]}', which [axes] "
                        f"does not define (defined: {', '.join(task.axes) or 'none'})")


def load_module(path: Path, name: str | None = None) -> ModuleType:
    """Import a Python file under a private module name (exceptions propagate)."""
    mod_name = name or f"_fk_{path.stem}_{abs(hash(str(path.resolve()))):x}"
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(mod_name, None)
        raise
    return module


IMPORT_DEADLINE_S = 120.0
"""How long importing a reference may take before it counts as hanging."""


class _ImportDeadline(BaseException):
    """Raised inside a reference's import when it overruns its deadline."""


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Interrupt Python code that runs past ``seconds`` (main thread only; C code that
    never returns to the interpreter cannot be interrupted this way)."""
    outer_left, outer_interval = signal.getitimer(signal.ITIMER_REAL)
    if (threading.current_thread() is not threading.main_thread() or seconds <= 0
            or 0 < outer_left <= seconds):  # an outer timer (pytest-timeout, say) fires first
        yield
        return

    def fire(signum: int, frame: Any) -> None:
        raise _ImportDeadline

    previous = signal.signal(signal.SIGALRM, fire)
    start = time.monotonic()
    # again every second after the first: a raise that lands in a finaliser or a weakref
    # callback is printed and dropped by Python, and the deadline must still end the block
    signal.setitimer(signal.ITIMER_REAL, seconds, 1.0)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer_left > 0:  # give the outer timer back what it had left
            signal.setitimer(signal.ITIMER_REAL, max(outer_left - (time.monotonic() - start), 1e-3),
                             outer_interval)


def check_reference_module(task: TaskSpec, deadline_s: float = IMPORT_DEADLINE_S) -> ModuleType:
    """Import the reference and check it defines what the task format needs."""
    ref = Path(task.root) / "reference.py"
    try:
        with _deadline(deadline_s):
            module = load_module(ref)
    except _ImportDeadline:
        raise TaskError(f"{ref}: importing it did not finish within {deadline_s:g} s "
                        "(a loop or a wait at import time?)") from None
    except SystemExit as exc:
        raise TaskError(f"{ref}: calls exit ({exc.code}) on import") from None
    except BaseException as exc:  # any import failure becomes one line
        raise TaskError(f"{ref}: fails to import: {type(exc).__name__}: {_first_line(exc)}") from None
    if task.format == "kernelbench":
        for attr in ("Model", "get_inputs", "get_init_inputs"):
            if not callable(getattr(module, attr, None)):
                raise TaskError(f"{ref}: a KernelBench reference must define {attr}")
    elif not callable(getattr(module, "run", None)):
        raise TaskError(f"{ref}: does not define run(*inputs)")
    make = getattr(module, "make_inputs", None)
    if make is not None and not callable(make):
        raise TaskError(f"{ref}: make_inputs must be a function (axes: dict, seed: int) -> tuple")
    custom = [n for n, s in task.inputs.items() if s.dist.kind == "custom"]
    if custom and make is None and task.format != "kernelbench":
        raise TaskError(f"{ref}: inputs.{custom[0]}.dist is 'custom', so reference.py must define "
                        "make_inputs(axes, seed) that makes the values")
    return module


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else ""


def shape_of(spec: TensorSpec, axes: dict[str, int]) -> tuple[int, ...]:
    """Concrete shape of a tensor spec at a workload (an entry may be an axis name, a size,
    or, in a KernelBench task, an expression over the axes such as ``"2 * D"``)."""
    return tuple(d if isinstance(d, int) else axes[d] if d in axes else int(exprs.evaluate(d, axes))
                 for d in spec.shape)


def numel(shape: typing.Iterable[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n

