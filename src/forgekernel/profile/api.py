"""``profile_task``: one Profile per workload, measured in a worker process.

The caller's process imports no torch and runs no candidate code: a delivery Runner starts
``python -m forgekernel.profile.worker`` (a fresh process), which times, counts launches,
computes the roofline and, on a GPU with Nsight Compute, collects hardware counters. For a
Triton candidate a second job adds the compile-time report (registers, shared memory,
spills, wgmma/TMA) per workload. On the CPU runner only smoke workloads are profiled.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any, Literal

from forgekernel.delivery import Job, Runner
from forgekernel.errors import ForgeError
from forgekernel.records import Profile, TaskSpec, Workload

NcuMode = Literal["auto", "on", "off"]


class ProfileError(ForgeError, RuntimeError):
    """The profile worker failed or answered with an error (one line)."""


def workloads_for(task: TaskSpec, runner: Runner) -> tuple[Workload, ...]:
    """Smoke workloads on the CPU runner, visible non-smoke ones on a GPU (smoke if none)."""
    if runner.timing_label == "cpu-interpret":
        chosen = task.smoke_workloads()
        if not chosen:
            raise ProfileError(f"task {task.name} has no smoke workload for the CPU runner")
        return chosen
    return task.gpu_workloads() or task.smoke_workloads()


def is_triton_candidate(kernel: Path | None) -> bool:
    """A candidate whose kernel.py uses Triton (and has no .cu sources)."""
    if kernel is None:
        return False
    from forgekernel.profile.subject import kernel_file

    path = kernel_file(kernel)
    if list(path.parent.glob("*.cu")):
        return False
    return "triton" in path.read_text(errors="replace")


def profile_task(task: TaskSpec, runner: Runner, *, kernel: Path | None = None,
                 ncu: NcuMode = "auto", static: bool | None = None,
                 workloads: tuple[Workload, ...] | None = None, ncu_dir: Path | None = None,
                 timeout_s: float | None = None, sandbox: bool = True) -> list[Profile]:
    """Profile the task's reference (or ``kernel``) at each workload; one Profile each.

    ``ncu``: 'auto' uses Nsight Compute when the worker finds it, 'on' requires it (a
    ForgeError otherwise), 'off' skips it. ``static`` (default: yes for Triton candidates)
    adds compile-time metrics. ``ncu_dir`` keeps ncu's raw CSV files there. A ``kernel`` is
    candidate code: its workers run in the sandbox unless ``sandbox`` is False
    (``--unsafe-no-sandbox``).
    """
    if ncu not in ("auto", "on", "off"):
        raise ProfileError(f"--ncu {ncu!r}: use auto, on or off")
    if ncu == "on" and runner.timing_label == "cpu-interpret":
        raise ProfileError("--ncu on needs a GPU delivery (local); the cpu runner has no device")
    chosen = workloads or workloads_for(task, runner)
    if kernel is not None and runner.timing_label == "cpu-interpret" and _native(kernel):
        return _compiled_only(task, runner, Path(kernel), chosen, static, sandbox)
    boxed = sandbox and kernel is not None
    payload = {"mode": "profile", "task": task.root, "workloads": [w.axes for w in chosen],
               "kernel": str(Path(kernel).resolve()) if kernel else None, "ncu": ncu, "seed": 0,
               "ncu_dir": str(ncu_dir.resolve()) if ncu_dir and not boxed else None}
    limit = timeout_s or 120.0 + 60.0 * len(chosen) * (3 if ncu != "off" else 1)
    with tempfile.TemporaryDirectory(prefix="forge-profile-") as tmp:
        if boxed and ncu_dir:  # the sandbox writes only its own directory: copied out after
            payload["ncu_dir"] = str(Path(tmp) / "ncu")
        answer = _run(runner, payload, limit, sandboxed=boxed, cwd=tmp if boxed else None)
        if boxed and ncu_dir and (Path(tmp) / "ncu").is_dir():
            shutil.copytree(Path(tmp) / "ncu", ncu_dir, dirs_exist_ok=True)
    profiles = [Profile.model_validate(p) for p in answer["profiles"]]
    wanted = static if static is not None else is_triton_candidate(kernel)
    if wanted and kernel is not None:
        try:
            reports = static_reports(task, runner, Path(kernel), chosen, timeout_s=limit,
                                     sandboxed=sandbox)
        except ProfileError as exc:
            if static:  # asked for explicitly: its failure is the answer
                raise
            note = f"static report not made: {exc}"
            return [p.model_copy(update={"notes": (*p.notes, note)}) for p in profiles]
        profiles = [merge_static(p, r) for p, r in zip(profiles, reports, strict=True)]
    return profiles


def _native(kernel: Path) -> str | None:
    from forgekernel.native.sources import language_of

    lang = language_of(Path(kernel))
    return lang if lang != "triton" else None


def _compiled_only(task: TaskSpec, runner: Runner, kernel: Path, chosen: tuple[Workload, ...],
                   static: bool | None, sandbox: bool) -> list[Profile]:
    """A CUDA C++ or CuTe DSL candidate on the CPU interpreter: not run; its compile-time
    report only (``--no-static``: a one-line error, there is nothing else to give)."""
    lang = _native(kernel)
    why = f"a {lang} candidate does not run on the cpu delivery (the Triton CPU interpreter)"
    if static is False:
        raise ProfileError(f"{why}; drop --no-static for its compile-time report, or profile it on a GPU")
    reports = static_reports(task, runner, kernel, chosen, sandboxed=sandbox)
    return [merge_static(Profile(axes=dict(w.axes), notes=(f"not run: {why}",)), r)
            for w, r in zip(chosen, reports, strict=True)]


def static_reports(task: TaskSpec, runner: Runner, kernel: Path,
                   workloads: tuple[Workload, ...], *, timeout_s: float = 600.0,
                   sandboxed: bool = True) -> list[Any]:
    """Compile-time reports (one per workload) made in a worker process."""
    from forgekernel.profile.static import StaticReport

    payload = {"mode": "static", "task": task.root, "kernel": str(kernel.resolve()),
               "workloads": [w.axes for w in workloads], "sandboxed": sandboxed}
    # Triton's own library (tl.sum, ...) must be compiled-mode JIT functions: the worker
    # starts outside the interpreter and switches it on only to capture the launches.
    answer = _run(runner, payload, timeout_s, env={"TRITON_INTERPRET": "0"}, sandboxed=sandboxed)
    return [StaticReport.model_validate(r) for r in answer["static"]]


def merge_static(prof: Profile, report: Any) -> Profile:
    """Add compile-time metrics a run-time tool (ncu) did not already measure."""
    metrics = dict(prof.metrics)
    sources = dict(prof.sources)
    for key, value in report.metrics().items():
        if key not in metrics:
            metrics[key] = value
            sources[key] = f"static: {report.tool} for {report.target}"
    facts = [f"static {report.target}: {k.name} [{k.config}] regs {k.regs}, smem {k.smem_bytes} B, "
             f"spill stores {k.spill_stores} B, wgmma {k.uses_wgmma}, tma {k.uses_tma}"
             for k in report.kernels]
    notes = (*prof.notes, *facts, *(f"static: {n}" for n in report.notes))
    return prof.model_copy(update={"metrics": metrics, "sources": sources, "notes": notes})


def _run(runner: Runner, payload: dict[str, Any], timeout_s: float,
         env: dict[str, str] | None = None, sandboxed: bool = False,
         cwd: str | None = None) -> dict[str, Any]:
    result = runner.run(Job(module="forgekernel.profile.worker", payload=payload, cwd=cwd,
                            timeout_s=timeout_s, env=env or {}, sandboxed=sandboxed, gated=True))
    if not result.ok or result.result is None:
        tail = [ln for ln in result.stderr_tail.strip().splitlines() if ln.strip()][-1:]
        raise ProfileError(f"profile worker: {result.describe_failure()}"
                           + (f" ({tail[0][:200]})" if tail else ""))
    if "error" in result.result:
        raise ProfileError(f"profile worker: {result.result['error']}")
    return result.result
