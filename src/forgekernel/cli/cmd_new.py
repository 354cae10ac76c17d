"""`forge new`: validate a task and create a run dir, or print the plan with --dry-run."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import typer

from forgekernel.cli import app, fail


def _time(ms: float) -> str:
    if ms < 1e-3:
        return f"{ms * 1e6:.1f} ns"
    return f"{ms * 1000:.2f} us" if ms < 1 else f"{ms:.3f} ms"


def _print_workloads(workloads: list[dict]) -> None:
    from forgekernel.cli.plan import human_bytes

    first = workloads[0]
    typer.echo(f"workloads (floors from {first['ceilings']}; {first['peak']} peak "
               + (f"{first['peak_tflops']:g} TFLOP/s" if first["peak_tflops"] else "unknown")
               + (f", {first['peak_source']}" if first.get("peak_source") else "") + "):")
    for w in workloads:
        axes = " ".join(f"{k}={v}" for k, v in w["axes"].items())
        flops = f"{w['flops']:.3g} flop" if w["flops"] is not None else "flops unknown"
        tag = " [smoke]" if w["smoke"] else ""
        params = f", {human_bytes(w['param_bytes'])} of it parameters" if w.get("param_bytes") else ""
        typer.echo(f"  {axes:<28} bytes {w['bytes']:>13,} ({human_bytes(w['bytes'])}{params}), {flops}, "
                   f"floor {_time(w['floor_ms'])} ({w['bound']}-bound){tag}")
        if w.get("note"):
            typer.echo(f"    note: {w['note']}")
    if first.get("flops_source"):
        typer.echo(f"  flops: {first['flops_source']}")


def _print_plan(plan: dict) -> None:

    t = plan["task"]
    typer.echo(f"task      {t['name']} ({t['family']}, {t['language']}, {t['arch']}, {t['format']})")
    if t["description"]:
        typer.echo(f"          {t['description']}")
    typer.echo("inputs    " + ", ".join(f"{k}: {v['dtype']}[{', '.join(map(str, v['shape']))}]"
                                        for k, v in t["inputs"].items()))
    if t["policy_forbid"]:
        typer.echo("forbidden " + ", ".join(t["policy_forbid"]))
    _print_workloads(plan["workloads"])
    for warning in plan.get("warnings", []):
        typer.echo(f"warning   {warning}")
    d, a = plan["delivery"], plan["agent"]
    typer.echo(f"delivery  {d['name']} -- {d['why']}")
    typer.echo(f"agent     coder {a['coder']} -- {a['coder_why']}; architect {a['architect']}"
               + (f"; model {a['model']}" if a["model"] else ""))
    for m in a["missing"]:
        typer.echo(f"  MISSING {m}")
    b = plan["budget"]
    typer.echo(f"budget    {b['iterations']} iterations, {b['minutes']:g} min, ${b['dollars']:g} agent spend")
    typer.echo(f"target    speedup >= {plan['target']['speedup']:g} over the reference")
    cur = plan["curriculum"]
    typer.echo(f"curriculum ({cur['source']}):" if cur["milestones"] else f"curriculum: {cur.get('error', 'none')}")
    if cur.get("traced"):
        typer.echo(f"  traced: {cur['traced']}")
    for m in cur["milestones"]:
        rows = f", {m['rows']} row{'s' if m['rows'] != 1 else ''}" if m["rows"] is not None else ""
        gate = f"; gate: {', '.join(m['gate'])}" if m["gate"] else ""
        typer.echo(f"  {m['id']:<7} {m['kind']:<12} {m['title']}{rows}{gate}")
    if plan["prescriptions"]:
        typer.echo("knowledge base (certified):")
        for p in plan["prescriptions"]:
            typer.echo(f"  - {p}")
    typer.echo("dry run: nothing was written")


def task_dir_for(task: Path, scratch: Path, workloads: Path | None = None) -> Path:
    """A task dir for ``task``; a KernelBench .py file or a FlashInfer-Trace Definition
    (.json, with ``workloads``) is converted into ``scratch``."""
    if workloads is not None and task.suffix != ".json":
        raise fail("--workloads goes with a FlashInfer-Trace Definition (.json)")
    if task.suffix == ".json":
        from forgekernel.interop import flashinfer_import

        imported = flashinfer_import.convert(task, scratch / task.stem, workloads)
        for note in imported.notes:
            typer.echo(f"forge: note: {note}", err=True)
        return imported.root
    if task.suffix == ".py":
        if not task.is_file():
            raise fail(f"{task}: no such file")
        from forgekernel import kernelbench

        return kernelbench.convert(task, scratch / task.stem)
    return task


@app.command()
def new(
    task: Path = typer.Argument(..., help="Task dir (task.toml + reference.py), a KernelBench .py file "
                                          "or a FlashInfer-Trace Definition .json."),
    workloads: Path = typer.Option(None, "--workloads", help="With a Definition .json: its Workloads (JSONL)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan; write nothing."),
    out: Path = typer.Option(None, "--out", help="Run dir to create (default .artifacts/<task>_<stamp>)."),
    as_json: bool = typer.Option(False, "--json", help="With --dry-run: print the plan as JSON."),
    delivery: str = typer.Option(None, "--delivery", help="auto, cpu, local, ssh or ray (default FK_DELIVERY, else auto); docs/delivery.md."),
    agent: str = typer.Option(None, "--agent", help="Coder backend (default FK_AGENT or builtin)."),
    architect: str = typer.Option(None, "--architect", help="Architect backend (default: the coder's)."),
    model: str = typer.Option(None, "--model", help="Model for LLM backends (default FK_MODEL)."),
    price: str = typer.Option(None, "--price", help="USD per million input,output tokens of the LLM (e.g. 3,15; 0,0 for a free local model); needed for a model forge has no price for."),
    unsafe_no_sandbox: bool = typer.Option(False, "--unsafe-no-sandbox",
                                           help="Create the run dir although no sandbox works here "
                                                "(`forge run` then needs the flag too)."),
) -> None:
    """Validate TASK and create a run dir (or, with --dry-run, show what a run would do)."""
    from forgekernel.cli import preflight
    from forgekernel.config import load_settings
    from forgekernel.refplan import check_reference
    from forgekernel.run.rundir import create
    from forgekernel.task import load_task

    settings = load_settings({"delivery": delivery, "agent": agent, "architect": architect, "model": model,
                              "price": price})
    with tempfile.TemporaryDirectory(prefix="forge-new-") as scratch:
        spec = load_task(task_dir_for(task, Path(scratch), workloads))
        if dry_run:
            return _dry_run(spec, settings, as_json)
        delivery_name = preflight.check_new(settings, unsafe_no_sandbox=unsafe_no_sandbox)  # before any write
        preflight.judgeable(spec, delivery_name)
        check_reference(spec)  # a misbehaving reference is one line, before anything is made
        run_dir = create(Path(spec.root), settings, out)
        typer.echo(str(run_dir))


def _dry_run(spec, settings, as_json: bool) -> None:
    from forgekernel.cli import preflight
    from forgekernel.cli.plan import build_plan
    from forgekernel.delivery.base import resolve_delivery

    coder = settings.agent or "builtin"
    preflight.check_names(coder, settings.architect or coder)
    plan = build_plan(spec, settings, resolve_delivery(settings.delivery))
    missing = plan["agent"]["missing"]
    login = "" if missing else preflight.login_problem(settings, plan["agent"]["coder"],
                                                         plan["agent"]["architect"])
    plan["agent"]["login"] = login or None
    if as_json:
        typer.echo(json.dumps(plan, indent=2))
    else:
        _print_plan(plan)
    if missing:
        raise fail(f"agent '{plan['agent']['coder']}' cannot run here: missing " + "; ".join(missing))
    if login:
        raise fail(login)
    preflight.runner(settings.delivery, settings, settings.gpu, connect=False)
