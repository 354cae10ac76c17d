"""Which peers `forge compare` times against the kernel, and how each is named.

A peer is one of:

* ``kernel``: a kernel file the user named (or the repository's ``kernels/<task>/kernel.py``);
* ``eager``: the task's reference, as written;
* ``compile``: ``torch.compile`` of the reference;
* ``call``: a library function, ``module.path:function``, from the task's ``[[peer]]``
  tables or, for the example tasks, Liger's and QuACK's (:data:`LIBRARY_PEERS`), timed only
  when importable (the row says "not installed" otherwise);
* ``copy``: ``dst.copy_(src)`` moving the same bytes (inputs read + outputs written);
* ``read``: ``torch.sum`` reading the inputs' bytes once (only where the outputs are much
  smaller than the inputs: a reduction's ceiling).

A ``[[peer]]`` table (task.toml)::

    [[peer]]
    name = "F.rms_norm"
    call = "torch.nn.functional:rms_norm"
    inputs = ["x"]                     # positional, first (default: every input, in order)
    args = { normalized_shape = ["=N"], weight = "weight", eps = 1e-6 }

``args`` follows the inputs: a list is passed positionally, a table by keyword. A string
naming an input is that tensor, ``"=expr"`` is an expression over the axes, a list is
converted element by element, anything else is passed as written. Pure: no torch here.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from forgekernel import exprs
from forgekernel.errors import ForgeError
from forgekernel.records import TaskSpec

CALL = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
KINDS = ("kernel", "eager", "compile", "call", "copy", "read")
BUILT_IN = ("eager", "compile", "copy", "read")
"""Peers every comparison has (``--skip`` may leave them out)."""


class PeerError(ForgeError, ValueError):
    """A ``[[peer]]`` table that cannot be used (one line naming the key)."""


class PeerSpec(BaseModel):
    """One library peer: what to import and how to call it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    call: str
    inputs: list[str] | None = None
    args: list[Any] | dict[str, Any] = []
    note: str = ""
    source: str = "task"
    """task (its [[peer]] tables), liger or quack (built in for the example tasks)."""


def _check_value(value: Any, task: TaskSpec, at: str) -> None:
    if isinstance(value, list):
        for i, v in enumerate(value):
            _check_value(v, task, f"{at}[{i}]")
    elif isinstance(value, str) and value.startswith("="):
        try:
            unknown = exprs.names(value[1:]) - set(task.axes)
        except exprs.ExprError as exc:
            raise PeerError(f"{at}: {exc}") from None
        if unknown:
            raise PeerError(f"{at} = {value!r} uses '{sorted(unknown)[0]}', which is not an axis")


def check_peer(spec: PeerSpec, task: TaskSpec, at: str) -> PeerSpec:
    """``spec`` checked against the task: the call's form, input names, axis expressions."""
    if not CALL.match(spec.call):
        raise PeerError(f"{at}.call = {spec.call!r}: use 'module.path:function'")
    if spec.name in KINDS or not spec.name.strip():
        raise PeerError(f"{at}.name = {spec.name!r}: a peer needs its own name (not one of "
                        f"{', '.join(KINDS)})")
    for name in spec.inputs or ():
        if name not in task.inputs:
            raise PeerError(f"{at}.inputs names '{name}', which is not an input "
                            f"(inputs: {', '.join(task.inputs)})")
    values = spec.args.items() if isinstance(spec.args, dict) else enumerate(spec.args)
    for key, value in values:
        _check_value(value, task, f"{at}.args.{key}" if isinstance(key, str) else f"{at}.args[{key}]")
    return spec


def parse_peers(raw: Any, task: TaskSpec, where: str) -> tuple[PeerSpec, ...]:
    """The task's ``[[peer]]`` tables, validated; a :class:`PeerError` names the bad key."""
    if not isinstance(raw, list) or not all(isinstance(p, dict) for p in raw):
        raise PeerError(f"{where}: peer must be an array of tables, one [[peer]] per library call")
    out: list[PeerSpec] = []
    for i, table in enumerate(raw):
        at = f"{where}: peer[{i}]"
        if "source" in table:
            raise PeerError(f"{at}: unknown key 'source'; allowed keys: name, call, inputs, args, note")
        try:
            spec = PeerSpec.model_validate(table, strict=True)
        except ValidationError as exc:
            err = exc.errors()[0]
            key = ".".join(str(p) for p in err["loc"])
            raise PeerError(f"{at}.{key}: {err['msg']}") from None
        if spec.name in {p.name for p in out}:
            raise PeerError(f"{at}.name = {spec.name!r} is used twice")
        out.append(check_peer(spec, task, at))
    return tuple(out)


def task_peers(task: TaskSpec) -> tuple[PeerSpec, ...]:
    """The ``[[peer]]`` tables of the task directory's task.toml (none: empty)."""
    import tomllib
    from pathlib import Path

    path = Path(task.root) / "task.toml"
    raw = tomllib.loads(path.read_text()).get("peer", [])
    return parse_peers(raw, task, str(path)) if raw else ()


LIGER = "liger_kernel.transformers.functional"
LIBRARY_PEERS: dict[str, tuple[PeerSpec, ...]] = {
    "rmsnorm": (
        PeerSpec(name="liger", call=f"{LIGER}:liger_rms_norm", inputs=("x", "weight"),
                 args=[1e-6], source="liger"),
        PeerSpec(name="quack", call="quack:rmsnorm", inputs=("x", "weight"), args={"eps": 1e-6},
                 source="quack"),
    ),
    "fused_add_rmsnorm": (
        PeerSpec(name="liger", call=f"{LIGER}:liger_fused_add_rms_norm",
                 inputs=("x", "residual", "weight"), args=[1e-6], source="liger"),
    ),
    "layernorm": (
        PeerSpec(name="liger", call=f"{LIGER}:liger_layer_norm", inputs=("x", "weight", "bias"),
                 args=[1e-5], source="liger"),
    ),
    "softmax": (
        PeerSpec(name="liger", call=f"{LIGER}:liger_softmax", inputs=("x",), source="liger"),
        PeerSpec(name="quack", call="quack:softmax", inputs=("x",), source="quack"),
    ),
    "cross_entropy": (
        PeerSpec(name="liger", call=f"{LIGER}:liger_cross_entropy", inputs=("logits", "targets"),
                 source="liger"),
        PeerSpec(name="quack", call="quack:cross_entropy", inputs=("logits", "targets"),
                 source="quack"),
    ),
    "swiglu": (
        PeerSpec(name="liger", call=f"{LIGER}:liger_swiglu", inputs=("gate", "up"), source="liger"),
    ),
}
"""Liger's and QuACK's forward functions for the example tasks (rope: Liger's rotates q and
k together in another layout; matmul: the reference is already cuBLAS). Each is checked
against the reference like any peer before it is timed."""


def library_peers(task: TaskSpec) -> tuple[PeerSpec, ...]:
    """Liger/QuACK peers of an example task, when the task's inputs are the example's."""
    return tuple(p for p in LIBRARY_PEERS.get(task.name, ())
                 if set(p.inputs or ()) <= set(task.inputs))


def plan(task: TaskSpec, kernels: list[tuple[str, str]], skip: set[str]) -> list[dict[str, Any]]:
    """Every peer to time, in table order, as the worker's payload entries."""
    out: list[dict[str, Any]] = [{"name": name, "kind": "kernel", "path": path}
                                 for name, path in kernels]
    out += [{"name": k, "kind": k} for k in ("eager", "compile")]
    out += [{"name": p.name, "kind": "call", "spec": p.model_dump()}
            for p in (*task_peers(task), *library_peers(task))]
    out += [{"name": k, "kind": k} for k in ("copy", "read")]
    names = {p["name"] for p in out}
    unknown = sorted(skip - names)
    if unknown:
        raise PeerError(f"--skip {unknown[0]}: no such peer (peers: {', '.join(sorted(names))})")
    if skip & {name for name, _ in kernels}:
        raise PeerError("--skip cannot leave out the kernel being compared")
    return [p for p in out if p["name"] not in skip]
