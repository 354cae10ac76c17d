"""`forge profile`: time, count launches, roofline and (when present) ncu per workload."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from forgekernel.cli import app, fail


def _fmt(value: object, digits: int = 4) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def _print_table(profiles: list, delivery: str, why: str) -> None:
    label = profiles[0].sources.get("median_ms", "").split(":", 1)[0] if profiles else ""
    typer.echo(f"delivery {delivery} -- {why}")
    if profiles:
        typer.echo(f"device   {profiles[0].sources.get('device', '?')}; ceilings: "
                   f"{profiles[0].sources.get('ceilings', 'none')}")
    cols = ("launches", "median_ms", "bytes", "floor_ms", "sol_pct", "bound", "dram_pct", "regs",
            "spills")
    typer.echo(f"{'workload':<22}" + "".join(f"{c:>12}" for c in cols))
    for p in profiles:
        axes = " ".join(f"{k}={v}" for k, v in p.axes.items())
        typer.echo(f"{axes:<22}" + "".join(f"{_fmt(p.metrics.get(c)):>12}" for c in cols))
    if label and label != "device":
        typer.echo(f"(median_ms is {label}: CPU time, not a GPU time; sol_pct needs a device)")
    for p in profiles[:1]:
        typer.echo("kernels per call (first workload): " + ", ".join(
            f"{k.name[:48]} x{k.count}" for k in p.kernels[:12]))
    notes = sorted({n for p in profiles for n in p.notes})
    for n in notes:
        typer.echo(f"note: {n}")


@app.command()
def profile(
    task_dir: Path = typer.Argument(..., help="Task directory (task.toml + reference.py)."),
    kernel: Path | None = typer.Option(None, "--kernel", help="Candidate kernel.py (or its dir) "
                                       "to profile instead of the reference."),
    as_json: bool = typer.Option(False, "--json", help="Print the profiles as JSON."),
    ncu: str = typer.Option("auto", "--ncu", help="Nsight Compute: auto, on or off."),
    delivery: str = typer.Option("auto", "--delivery", help="Where to run: auto, cpu or local."),
    static: bool | None = typer.Option(None, "--static/--no-static", help="Compile-time report "
                                       "(default: on for Triton candidates)."),
    ncu_dir: Path | None = typer.Option(None, "--ncu-dir", help="Keep ncu's raw CSV files here."),
    unsafe_no_sandbox: bool = typer.Option(False, "--unsafe-no-sandbox", help="Run the --kernel "
                                           "without the sandbox (when this machine has none)."),
) -> None:
    """Profile a task's reference (or a candidate) at each workload: time, launches, %SOL."""
    from forgekernel.config import load_settings
    from forgekernel.delivery import make_runner
    from forgekernel.delivery.base import resolve_delivery
    from forgekernel.profile.api import profile_task
    from forgekernel.task import load_task

    if ncu not in ("auto", "on", "off"):
        raise fail(f"--ncu {ncu!r}: use auto, on or off")
    if delivery not in ("auto", "cpu", "local"):
        raise fail(f"--delivery {delivery!r}: use auto, cpu or local")
    settings = load_settings({"delivery": None if delivery == "auto" else delivery})
    task = load_task(task_dir)
    name, why = resolve_delivery(settings.delivery)
    if kernel is not None:  # candidate code: a sandbox for it, or the user's explicit flag
        from forgekernel.cli.preflight import sandbox_ready

        sandbox_ready(name, unsafe_no_sandbox)
    runner = make_runner(name, gpu=settings.gpu, settings=settings)
    profiles = profile_task(task, runner, kernel=kernel, ncu=ncu, static=static,  # type: ignore[arg-type]
                            ncu_dir=ncu_dir, sandbox=not unsafe_no_sandbox)
    if as_json:
        typer.echo(json.dumps({"task": task.name, "delivery": name, "kernel": str(kernel) if kernel else None,
                               "profiles": [p.model_dump() for p in profiles]}, indent=2))
    else:
        _print_table(profiles, name, why)
