"""`forge compare TASK [KERNEL...]`: the kernel against eager, torch.compile, library peers
and a size-matched copy, every peer checked against the reference first, all timed in one
worker process with one method (docs/compare.md)."""

from __future__ import annotations

from pathlib import Path

import typer

from forgekernel.cli import app, fail

DELIVERY_HELP = "Where the worker runs: cpu (Triton interpreter, smoke shapes), local (this GPU) or auto."


def _runner(delivery: str):
    from forgekernel.config import load_settings
    from forgekernel.delivery import make_runner
    from forgekernel.delivery.base import resolve_delivery

    if delivery not in ("auto", "cpu", "local"):
        raise fail(f"--delivery {delivery!r}: use auto, cpu or local")
    settings = load_settings({"delivery": None if delivery == "auto" else delivery})
    name, _why = resolve_delivery(settings.delivery)
    return make_runner(name, gpu=settings.gpu, settings=settings)


@app.command()
def compare(
    task: str = typer.Argument(..., metavar="TASK", help="Task directory, or a name under tasks/."),
    kernels: list[Path] = typer.Argument(None, metavar="KERNEL...", help="kernel.py files, their "
                                         "directories or run dirs (default: kernels/<task>/kernel.py)."),
    workloads: str = typer.Option(None, "--workloads", help="smoke, all or timed (the judge's timed "
                                  "ones: not smoke) (default: smoke on the cpu runner, all on a GPU)."),
    smoke: bool = typer.Option(False, "--smoke", help="Same as --workloads smoke."),
    reps: int = typer.Option(None, "--reps", min=1, max=1000, help="Timed rounds per peer "
                             "(default: 60 on a GPU, 5 on the cpu runner)."),
    skip: list[str] = typer.Option([], "--skip", help="Leave a peer out (repeatable): eager, "
                                   "compile, copy, read or a library peer's name."),
    json_path: Path = typer.Option(None, "--json", help="Where the JSON goes (default: "
                                   "./compare_<task>.json)."),
    plot_path: Path = typer.Option(None, "--plot", help="Where the PNG goes (default: ./compare_<task>.png)."),
    delivery: str = typer.Option("auto", "--delivery", help=DELIVERY_HELP),
    timeout: float = typer.Option(900.0, "--timeout", min=30, help="Limit of the worker, seconds."),
    commit: str = typer.Option(None, "--commit", help="Commit recorded in the JSON (default: git HEAD)."),
    unsafe_no_sandbox: bool = typer.Option(False, "--unsafe-no-sandbox", help="Run the kernels and "
                                           "peers without the sandbox (when this machine has none)."),
) -> None:
    """Time a task's kernel against eager, torch.compile, library peers and a copy."""
    from forgekernel.cli.preflight import sandbox_ready
    from forgekernel.compare import api, render
    from forgekernel.compare.record import git_commit, write
    from forgekernel.task import load_task

    spec = load_task(api.resolve_task(task), check_reference=False)
    paths = [api.resolve_kernel(k) for k in kernels] if kernels else [api.default_kernel(spec)]
    runner = _runner(delivery)
    held = sandbox_ready(runner.name, unsafe_no_sandbox)
    cpu = runner.timing_label == "cpu-interpret"
    which = "smoke" if smoke else workloads or ("smoke" if cpu else "all")
    record = api.compare(spec, runner, paths, which=which, reps=reps or (5 if cpu else 60),
                         skip=set(skip), sandbox=not unsafe_no_sandbox, timeout_s=timeout,
                         commit=commit or git_commit(Path(spec.root)), sandbox_note=held)
    json_path = json_path or Path(f"compare_{spec.name}.json")
    plot_path = plot_path or Path(f"compare_{spec.name}.png")
    write(record, json_path)
    typer.echo(render.text(record))
    drawn = render.plot(record, plot_path)
    typer.echo(f"wrote {json_path}" + (f" and {plot_path}" if drawn else " (no plot: nothing timed)"))
    if not record.kernel_ok():
        raise typer.Exit(1)
