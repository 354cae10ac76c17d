"""The compare worker: ``python -m forgekernel.compare.worker``, started through a delivery
Runner (sandboxed: it imports the kernels and the peers' libraries).

Every peer of every workload is checked and timed here, in this one process, with the one
method of :mod:`forgekernel.compare.timing`.

Payload: ``task`` (dir), ``workloads`` (axis dicts), ``peers`` (:func:`peers.plan`),
``reps``, ``warmup``, ``budget_s`` (no new workload starts after it). Reply: ``device``,
``versions``, ``label``, ``method`` and one entry per workload with its rows, or
``{"error": "one line"}``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from forgekernel.delivery import channel

REDUCTION = 4
"""A workload is a reduction when its outputs are at most 1/REDUCTION of its inputs' bytes:
it then gets the read-only ceiling (``read``) beside the copy."""


EXCLUSIVE_PREP = ("compile", "call")
"""Peers whose first call may tune itself by timing (Inductor's and libraries' autotuners):
checked with the GPU held alone, so a shared GPU cannot bias what they choose."""


def main() -> None:
    env = channel.receive()
    try:
        result = run(env.payload, env.device)
    except Exception as exc:  # one answer says what went wrong; the parent raises it
        import traceback

        traceback.print_exc()
        text = str(exc).strip()
        result = {"error": f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"}
    env.reply(result)


def versions() -> dict[str, str]:
    from importlib import metadata

    out = {}
    for dist in ("torch", "triton", "liger-kernel", "quack-kernels"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "absent"
    return out


def run(payload: dict[str, Any], device: Any = None) -> dict[str, Any]:
    """``device(mode, footprint)`` asks for the GPU (:meth:`Envelope.device`): shared while
    kernels load and peers are checked, exclusive for what is timed."""
    import torch

    from forgekernel.compare.timing import CpuClock, GpuClock
    from forgekernel.judge.problem import Problem
    from forgekernel.records import Workload
    from forgekernel.task import load_task

    task = load_task(payload["task"], check_reference=False)
    device_fn, on_gpu = device, torch.cuda.is_available()
    device = "cuda" if on_gpu else "cpu"
    problem = Problem(task, device)
    gate = _Gate(device_fn, problem, payload["workloads"])
    gate("S")  # no GPU work before this (the clock's calibration below runs kernels)
    clock = GpuClock() if on_gpu else CpuClock()
    entries = _kernels(problem, payload["peers"])
    started, budget = time.monotonic(), float(payload.get("budget_s") or 1e12)
    workloads = []
    for axes in payload["workloads"]:
        if time.monotonic() - started > budget:
            workloads.append({"axes": axes, "rows": [], "note": "not reached: the time budget was spent"})
            continue
        ctx = {"problem": problem, "entries": entries, "device": device, "interpret": not on_gpu, "gate": gate}
        gate("S")
        workloads.append(_workload(ctx, Workload(axes=dict(axes)), payload, clock))
        if on_gpu:
            torch.cuda.empty_cache()
    return {"device": torch.cuda.get_device_name(0) if on_gpu else "cpu", "versions": versions(),
            "label": clock.label, "method": clock.method, "workloads": workloads,
            "gpu_wait_s": round(gate.waited_s, 3)}


class _Gate:
    """Asks for the GPU in a mode (no-op without a gate); counts the seconds waited."""

    FACTOR = 8
    """Estimated device bytes per byte of the largest workload's inputs and parameters (the
    inputs, each peer's copy, the reference's and the float64 oracle's outputs)."""

    def __init__(self, ask: Any, problem: Any, workloads: list[dict[str, Any]]) -> None:
        from forgekernel.records import Workload

        self.ask, self.waited_s = ask, 0.0
        self.footprint = self.FACTOR * problem.footprint([Workload(axes=dict(a)) for a in workloads]) \
            if ask is not None else 0

    def __call__(self, mode: str) -> None:
        if self.ask is None:
            return
        if mode == "X":  # what is cached goes back before waiting: a job timed meanwhile may need it
            import torch

            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        self.waited_s += self.ask(mode, self.footprint)


def _kernels(problem: Any, peers: list[dict[str, Any]]) -> dict[str, Any]:
    """Each kernel peer's loaded entry, or the one line saying why it did not load."""
    out: dict[str, Any] = {}
    for i, peer in enumerate(p for p in peers if p["kind"] == "kernel"):
        try:
            out[peer["name"]] = problem.load(Path(peer["path"]), name=f"_forge_compare_kernel_{i}")
        except Exception as exc:
            out[peer["name"]] = _line(exc)
    return out


def _line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:200] if text else ''}".rstrip(": ")


def _workload(ctx: dict[str, Any], wl: Any, payload: dict[str, Any], clock: Any) -> dict[str, Any]:
    from forgekernel.compare import calls as cl
    from forgekernel.compare.timing import measure
    from forgekernel.judge import correctness as cx
    from forgekernel.judge import values

    problem = ctx["problem"]
    inputs = problem.make(wl, seed=0)
    refs = problem.reference(wl, inputs)
    oracle = problem.oracle(wl, inputs)
    ctx["tols"] = [cx.tolerance_for(cx.dtype_name(r), values.reference_error(r, o), problem.task.judge,
                                    interpret=ctx["interpret"]) for r, o in zip(refs, oracle, strict=True)]
    ctx.update(inputs=inputs, refs=refs, oracle=oracle, wl=wl)
    bytes_in, bytes_out = cl.nbytes(inputs), cl.nbytes(refs)
    reduction = bytes_out * REDUCTION <= bytes_in
    rows, timed = {}, {}
    for peer in sorted(payload["peers"], key=lambda p: p["kind"] in EXCLUSIVE_PREP):  # shared ones first
        if peer["kind"] == "read" and not reduction:
            continue
        if peer["kind"] in EXCLUSIVE_PREP:
            ctx["gate"]("X")
        rows[peer["name"]], call = _prepare(peer, ctx, bytes_in, bytes_out)
        if call is not None:
            timed[peer["name"]] = call
    rows = [rows[p["name"]] for p in payload["peers"] if p["name"] in rows]
    del ctx["oracle"], ctx["refs"], oracle, refs  # the peers' own inputs stay, for timing
    warmup = int(payload.get("warmup", 3))
    ctx["gate"]("X")
    times = measure(timed, clock, reps=int(payload.get("reps", 5)), warmup=warmup)
    for row in rows:
        got = times.get(row["name"])
        if got is None:
            continue
        failed = got.pop("failed")
        row.update(got)
        if failed:
            row.update(status="failed", detail=f"while timed: {failed}")
    return {"axes": dict(wl.axes), "bytes_in": bytes_in, "bytes_out": bytes_out,
            "reduction": reduction, "rows": rows}


def _prepare(peer: dict[str, Any], ctx: dict[str, Any], bytes_in: int,
             bytes_out: int) -> tuple[dict[str, Any], Any]:
    """The peer's row before timing, and the call to time (None: not timed)."""
    from forgekernel.compare import calls as cl

    kind = peer["kind"]
    row = {"name": peer["name"], "kind": kind, "source": (peer.get("spec") or {}).get("source", kind),
           "status": "ok", "detail": "", "max_err": None}
    if kind == "copy":
        row["detail"] = f"dst.copy_(src), {bytes_in + bytes_out} bytes read + written"
        return row, cl.copy_call(bytes_in + bytes_out, ctx["device"])
    if kind == "read":
        row["detail"] = f"torch.sum over {bytes_in} bytes of float32 (read once)"
        return row, cl.read_call(bytes_in, ctx["device"])
    try:
        fn = _callable(peer, ctx)
        own = cl.clone(ctx["inputs"])
        status, detail, err = _check(fn, own, ctx)
    except cl.NotInstalled as exc:
        return {**row, "status": "not installed", "detail": str(exc)}, None
    except Exception as exc:
        return {**row, "status": "failed", "detail": _line(exc)}, None
    if status != "ok":
        status = "wrong" if kind == "kernel" else status
        return {**row, "status": status, "detail": detail, "max_err": err}, None
    return {**row, "max_err": err}, (lambda: fn(*own))


def _callable(peer: dict[str, Any], ctx: dict[str, Any]) -> Any:
    from forgekernel.compare import calls as cl
    from forgekernel.compare.peers import PeerSpec

    problem, wl = ctx["problem"], ctx["wl"]
    if peer["kind"] == "kernel":
        entry = ctx["entries"][peer["name"]]
        if isinstance(entry, str):
            raise RuntimeError(f"does not load: {entry}")
        return entry.at(wl)
    if peer["kind"] == "eager":
        return problem.reference_callable(wl)
    if peer["kind"] == "compile":
        return cl.compiled(problem.reference_callable(wl))
    spec = PeerSpec.model_validate(peer["spec"])
    return cl.library_call(spec, list(problem.task.inputs), dict(wl.axes))


def _check(fn: Any, args: list[Any], ctx: dict[str, Any]) -> tuple[str, str, float | None]:
    """(status, detail, worst normalised error): the peer's outputs against the float64
    oracle with the task's calibrated tolerance, as the judge compares a candidate's."""
    import torch

    from forgekernel.instance import outputs_of
    from forgekernel.judge import correctness as cx
    from forgekernel.judge import values

    with torch.no_grad():
        outs = outputs_of(fn(*args))
    shape = cx.check_structure(outs, ctx["refs"])
    if not shape.ok:
        return "other semantics", shape.message, None
    worst = 0.0
    for out, ref64, tol in zip(outs, ctx["oracle"], ctx["tols"], strict=True):
        got = values.compare(out, ref64, tol)
        if not got.ok:
            return "other semantics", got.message, got.max_rel
        worst = max(worst, got.max_rel or 0.0)
    return "ok", "", worst


if __name__ == "__main__":
    main()
