"""`forge export`: write a run's best kernel in another benchmark's format."""

from __future__ import annotations

from pathlib import Path

import typer

from forgekernel.cli import app, fail

FORMATS = ("flashinfer", "solexec", "kernelbench")


@app.command()
def export(
    run_dir: Path = typer.Argument(..., metavar="RUN_DIR", help="A run dir with a best kernel."),
    fmt: str = typer.Option(..., "--format", help="flashinfer (a FlashInfer-Trace trace set: Definition, "
                            "Workloads, Solution, Traces), solexec (SOL-ExecBench solution.json) or "
                            "kernelbench (a ModelNew file)."),
    out: Path = typer.Option(..., "--out", help="Directory to write into (created; must be empty)."),
    style: str = typer.Option("dps", "--style", help="flashinfer/solexec entry point: dps "
                              "(destination-passing, FlashInfer-Bench's default) or value."),
) -> None:
    """Write RUN_DIR's best kernel as FORMAT under --out (docs/tasks.md, "Other formats")."""
    from forgekernel.interop import best_kernel, flashinfer_export, kernelbench_out, solexec

    if fmt not in FORMATS:
        raise fail(f"--format {fmt!r}: use {', '.join(FORMATS)}")
    if style not in ("dps", "value"):
        raise fail(f"--style {style!r}: use dps or value")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise fail(f"{out}: exists and is not an empty directory")
    best = best_kernel.load(run_dir)
    dps = style == "dps"
    notes: list[str] = []
    if fmt == "flashinfer":
        files, notes = flashinfer_export.export(best, out, dps=dps)
    elif fmt == "solexec":
        files = solexec.export(best, out, dps=dps)
    else:
        files = kernelbench_out.export(best, out)
    for note in notes:
        typer.echo(f"forge: note: {note}", err=True)
    for path in files:
        typer.echo(str(path))
