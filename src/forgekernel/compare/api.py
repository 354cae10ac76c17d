"""``compare``: the parent side of `forge compare`.

It resolves the task and the kernels, plans the peers, and hands everything to one worker
process (:mod:`forgekernel.compare.worker`; sandboxed, as the kernels and the libraries are
code this process never imports), which checks and times every peer on every workload.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from forgekernel.compare import peers as peer_plan
from forgekernel.compare.record import CompareRecord, build
from forgekernel.delivery import Job, Runner
from forgekernel.errors import ForgeError
from forgekernel.records import TaskSpec, Workload

REPO = Path(__file__).resolve().parents[3]
"""The source checkout holding this package (its tasks/ and kernels/, when it has them)."""


BUDGET_SHARE = 0.75
"""The worker starts no new workload after this share of ``--timeout`` (those left are
"not reached" in the record), so a slow peer costs workloads, never the whole comparison."""


class CompareError(ForgeError, RuntimeError):
    """Bad input to `forge compare`, or a worker that gave no answer (one line)."""


def resolve_task(arg: str) -> Path:
    """A task directory, or the name of one under ``tasks/`` (here, or in forge's checkout)."""
    path = Path(arg)
    if path.exists():
        return path
    for root in (Path.cwd(), REPO):
        if "/" not in arg and (root / "tasks" / arg / "task.toml").is_file():
            return root / "tasks" / arg
    raise CompareError(f"{arg}: no such task (a task directory, or a name under tasks/)")


def default_kernel(task: TaskSpec) -> Path:
    """``kernels/<task>/kernel.py`` beside the task's ``tasks/`` dir, here, or in forge's checkout."""
    roots = [Path(task.root).parent.parent, Path.cwd(), REPO]
    for root in roots:
        path = root / "kernels" / task.name / "kernel.py"
        if path.is_file():
            return path
    raise CompareError(f"no kernel given and no kernels/{task.name}/kernel.py found; name a "
                       "kernel.py, its directory or a run dir")


def resolve_kernel(arg: Path) -> Path:
    """A kernel file, a directory holding kernel.py, or a run dir (its best kernel)."""
    if arg.is_file():
        return arg.resolve()
    if arg.is_dir() and (arg / "run.toml").is_file():  # a run dir (committed ones lack task/)
        best = arg / "best" / "kernel.py"
        if not best.is_file():
            raise CompareError(f"{arg}: a run dir with no best kernel yet (best/kernel.py)")
        return best.resolve()
    if arg.is_dir() and (arg / "kernel.py").is_file():
        return (arg / "kernel.py").resolve()
    raise CompareError(f"{arg}: no kernel (expected kernel.py, a directory with one, or a run dir)")


def kernel_names(paths: list[Path]) -> dict[str, str]:
    """Row names for the kernels: ``kernel``, or ``kernel:<dir>`` when there are several."""
    if len(paths) == 1:
        return {"kernel": str(paths[0])}
    out: dict[str, str] = {}
    for i, p in enumerate(paths):
        name = f"kernel:{p.parent.name}"
        out[name if name not in out else f"{name}#{i + 1}"] = str(p)
    return out


def choose_workloads(task: TaskSpec, which: str, label: str) -> tuple[Workload, ...]:
    """smoke (the CPU interpreter's only choice), all (every workload of the task) or timed
    (the ones the judge times on a GPU: the non-smoke workloads, all if there are none)."""
    if which not in ("smoke", "all", "timed"):
        raise CompareError(f"--workloads {which!r}: use smoke, all or timed")
    if which != "smoke" and label == "cpu-interpret":
        raise CompareError(f"--workloads {which} needs a GPU delivery: the cpu-interpret runner runs "
                           "smoke workloads only")
    if which == "smoke":
        chosen = task.smoke_workloads()
    elif which == "timed":
        chosen = tuple(w for w in task.workloads if not w.smoke) or task.workloads
    else:
        chosen = task.workloads
    if not chosen:
        raise CompareError(f"task {task.name} has no {which} workload")
    return chosen


def compare(task: TaskSpec, runner: Runner, kernels: list[Path], *, which: str, reps: int,
            skip: set[str], sandbox: bool, timeout_s: float, commit: str,
            sandbox_note: str = "") -> CompareRecord:
    """Check and time every peer on the chosen workloads in one worker; the record."""
    names = kernel_names(kernels)
    plan = peer_plan.plan(task, list(names.items()), skip)
    chosen = choose_workloads(task, which, runner.timing_label)
    payload = {"task": task.root, "workloads": [dict(w.axes) for w in chosen], "peers": plan,
               "reps": reps, "warmup": 3 if runner.timing_label == "cpu-interpret" else 10,
               "budget_s": BUDGET_SHARE * timeout_s}
    raw = _run(runner, payload, timeout_s, sandbox)
    return build(raw, task=task.name, delivery=runner.name, commit=commit, kernels=names,
                 skipped=sorted(skip), sandbox=sandbox_note)


def _run(runner: Runner, payload: dict[str, Any], timeout_s: float, sandbox: bool) -> dict[str, Any]:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="forge-compare-") as tmp:
        result = runner.run(Job(module="forgekernel.compare.worker", payload=payload, cwd=tmp,
                                timeout_s=timeout_s, sandboxed=sandbox, gated=True))
    if not result.ok or result.result is None:
        tail = [ln for ln in result.stderr_tail.strip().splitlines() if ln.strip()][-1:]
        raise CompareError(f"compare worker: {result.describe_failure()}"
                           + (f" ({tail[0][:200]})" if tail else ""))
    if "error" in result.result:
        raise CompareError(f"compare worker: {result.result['error']}")
    return result.result
