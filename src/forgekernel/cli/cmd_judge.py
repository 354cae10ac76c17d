"""`forge judge` and `forge check`: judge one kernel against a task.

Exit codes: 0 when the verdict is PASSED, 1 for any other verdict, 2 for bad input (one
line on stderr). ``--json`` prints only the Verdict JSON on stdout.
"""

from __future__ import annotations

from pathlib import Path

import typer

from forgekernel.cli import app

DELIVERY_HELP = "Where the worker runs: cpu (Triton interpreter), local (this GPU) or auto."
UNSAFE_HELP = ("Run the kernel without the sandbox (when this machine has none: see `forge "
               "doctor`); it then sees your files, network and environment.")


def _runner(delivery: str | None):
    from forgekernel.config import load_settings
    from forgekernel.delivery import make_runner
    from forgekernel.delivery.base import resolve_delivery
    from forgekernel.errors import ForgeError

    settings = load_settings({"delivery": delivery})
    name, _why = resolve_delivery(settings.delivery)
    if name not in ("cpu", "local"):
        raise ForgeError(f"delivery '{name}' cannot run `forge judge` yet; use cpu or local")
    return make_runner(name, gpu=settings.gpu, settings=settings)


def _run(task_dir: Path, kernel: Path, delivery: str | None, options, as_json: bool) -> None:
    from forgekernel.candidate import resolve
    from forgekernel.cli.preflight import sandbox_ready
    from forgekernel.judge import judge
    from forgekernel.task import load_task

    task = load_task(task_dir, check_reference=False)  # the worker imports it; torch stays out of here
    resolve(kernel)  # bad paths fail here, before a worker starts
    runner = _runner(delivery)
    sandbox_ready(runner.name, options.unsafe_no_sandbox)
    verdict = judge(task, kernel, runner, options)
    if as_json:
        typer.echo(verdict.model_dump_json())
    else:
        _print(verdict)
    raise typer.Exit(0 if verdict.passed else 1)


def _print(verdict) -> None:
    typer.echo(f"{verdict.status.value}  candidate {verdict.candidate}  ({verdict.delivery}, "
               f"{verdict.device}, {verdict.wall_s:.1f} s)")
    if verdict.reason:
        typer.echo(f"reason: {verdict.reason}")
    for w in verdict.workloads:
        if w.hidden:
            continue
        label = " x ".join(f"{k}={v}" for k, v in w.axes.items()) or "workload"
        state = {True: "ok", False: "FAIL", None: "-"}[w.passed]
        err = f"err {w.max_rel_err:.3g} / tol {w.tolerance:.3g}" if w.max_rel_err is not None else ""
        timing = ""
        if w.median_ms is not None:
            timing = (f"  {w.median_ms:.4f} ms vs ref {w.reference_ms:.4f} ms = {w.speedup:.2f}x"
                      f" [{w.timing_label}]")
        typer.echo(f"  {label:<24} {state:<4} {err}{timing}")
    hidden = [w for w in verdict.workloads if w.hidden]
    if hidden:
        typer.echo(f"  hidden workloads: {sum(w.passed is True for w in hidden)} of {len(hidden)} passed")
    if verdict.speedup is not None:
        label = verdict.workloads[0].timing_label if verdict.workloads else ""
        typer.echo(f"speedup (geometric mean): {verdict.speedup:.3f}x, noise floor "
                   f"{verdict.noise_floor:.3f} [{label}]")
    held = (verdict.profile or {}).get("sandbox")
    if held:
        typer.echo(f"candidate ran in: {held}")
    if (verdict.profile or {}).get("library_kernels"):
        typer.echo("policy: library kernels count as the candidate's (--library-kernels or the "
                   "task's [policy] library_kernels)")
    if libs := (verdict.profile or {}).get("library_ops"):
        typer.echo("library parts: " + ", ".join(f"aten.{op}" for op in libs) + " ran in PyTorch's "
                   "library (the task's [policy] library_ops)")
    if verdict.feedback:
        typer.echo("\n" + verdict.feedback)


@app.command()
def judge(
    task_dir: Path = typer.Argument(..., help="Task directory (task.toml + reference.py)."),
    kernel: Path = typer.Argument(..., help="kernel.py, or a directory holding one."),
    as_json: bool = typer.Option(False, "--json", help="Print only the Verdict JSON."),
    delivery: str = typer.Option(None, "--delivery", help=DELIVERY_HELP),
    trials: int = typer.Option(None, "--trials", min=1, max=50, help="Fresh-seed trials per workload."),
    timeout: float = typer.Option(None, "--timeout", min=1, help="Hard limit of the worker, seconds."),
    no_timing: bool = typer.Option(False, "--no-timing", help="Correctness and integrity only."),
    graphs: bool = typer.Option(False, "--graphs", help="Also time CUDA-graph replay (GPU)."),
    perf_reference: Path = typer.Option(None, "--perf-reference",
                                        help="Kernel dir timed as the performance reference."),
    no_static: bool = typer.Option(False, "--no-static",
                                   help="Skip the source scan: only what the kernel does decides."),
    library_kernels: bool = typer.Option(
        False, "--library-kernels", help="Count an installed library's Triton kernels (Liger, say) as "
        "the kernel's own, as a task's [policy] library_kernels = true does."),
    unsafe_no_sandbox: bool = typer.Option(False, "--unsafe-no-sandbox", help=UNSAFE_HELP),
    device_memory: float = typer.Option(
        None, "--device-memory", min=0.001, metavar="GIB", help="Device memory the judge plans its own "
        "copies with (default: what the GPU has free); workloads over an eighth of it keep the judge's "
        "copies in host memory."),
) -> None:
    """Judge a kernel: correctness on visible and hidden workloads, integrity, timing."""
    from forgekernel.judge import JudgeOptions

    options = JudgeOptions(trials=trials, timeout_s=timeout, timing=not no_timing, graphs=graphs,
                           perf_reference=perf_reference, static=not no_static,
                           library_kernels=library_kernels, unsafe_no_sandbox=unsafe_no_sandbox,
                           device_memory_gib=device_memory)
    _run(task_dir, kernel, delivery, options, as_json)


@app.command()
def check(
    task_dir: Path = typer.Argument(..., help="Task directory (task.toml + reference.py)."),
    kernel: Path = typer.Argument(..., help="kernel.py, or a directory holding one."),
    as_json: bool = typer.Option(False, "--json", help="Print only the Verdict JSON."),
    delivery: str = typer.Option(None, "--delivery", help=DELIVERY_HELP),
    unsafe_no_sandbox: bool = typer.Option(False, "--unsafe-no-sandbox", help=UNSAFE_HELP),
) -> None:
    """Quick check: compile and correctness on the visible smoke workloads (no timing, no hidden)."""
    from forgekernel.judge import check_options

    options = check_options().model_copy(update={"unsafe_no_sandbox": unsafe_no_sandbox})
    _run(task_dir, kernel, delivery, options, as_json)
