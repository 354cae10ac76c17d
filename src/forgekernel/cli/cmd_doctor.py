"""`forge doctor`: what this machine offers, each line ok or missing with its fix."""

from __future__ import annotations

import json

import typer

from forgekernel.cli import app


@app.command()
def doctor(as_json: bool = typer.Option(False, "--json", help="Print the checks as JSON.")) -> None:
    """Check Python, torch, GPU, triton, CUDA tools, agents, credentials and delivery."""
    from forgekernel.cli import doctor as doc
    from forgekernel.config import load_settings

    checks = doc.run_checks(load_settings())
    if as_json:
        typer.echo(json.dumps(doc.as_json(checks), indent=2))
    else:
        width = max(len(c.name) for c in checks)
        for c in checks:
            mark = "ok     " if c.ok else "missing"
            fix = f"  -> {c.fix}" if c.fix else ""
            typer.echo(f"{mark} {c.name:<{width}}  {c.detail}{fix}")
    if any(c.required and not c.ok for c in checks):
        raise typer.Exit(1)
