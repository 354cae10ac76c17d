"""`forge kb ...`: list, show, probe and prescribe hardware knowledge-base entries."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Any

import typer

from forgekernel.cli import app, fail

kb_app = typer.Typer(help="Hardware knowledge base: probe-certified facts per architecture.",
                     no_args_is_help=True)
app.add_typer(kb_app, name="kb")

KB_DIR_HELP = "Knowledge-base directory (default FK_KB_DIR or hw_kb/ at the repository root)."


def _settings(**flags: Any):
    from forgekernel.config import load_settings

    return load_settings(flags)


def _clean(value: Any) -> Any:
    """JSON-safe: NaN becomes null, recursively."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def _entry_json(entry) -> dict[str, Any]:
    from forgekernel.kb import state

    return _clean({**entry.model_dump(mode="python"), "state": state(entry)})


def _table(rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        typer.echo("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1])


@kb_app.command("list")
def list_entries(
    arch: str = typer.Option(None, "--arch", help="Only this architecture (e.g. sm90)."),
    as_json: bool = typer.Option(False, "--json", help="Print the entries as JSON."),
    kb_dir: str = typer.Option(None, "--kb-dir", help=KB_DIR_HELP),
) -> None:
    """List entries with their state (CERTIFIED, FAILED, UNSUPPORTED, UNCERTIFIED) and value."""
    from forgekernel import kb
    from forgekernel.kb.claims import measured_text

    entries = kb.load(arch, _settings(kb_dir=kb_dir).kb_dir)
    if as_json:
        typer.echo(json.dumps([_entry_json(e) for e in entries], indent=2))
        return
    if not entries:
        typer.echo(f"no entries{f' for {arch}' if arch else ''}")
        return
    rows = [("id", "state", "measured", "device", "claim")]
    rows += [(e.id, kb.state(e), measured_text(e), e.certification.device if e.certification else "",
              e.claim) for e in entries]
    _table(rows)


@kb_app.command("show")
def show(
    entry_id: str = typer.Argument(..., help="Entry id, e.g. sm90.copy_large."),
    as_json: bool = typer.Option(False, "--json", help="Print the entry as JSON."),
    kb_dir: str = typer.Option(None, "--kb-dir", help=KB_DIR_HELP),
) -> None:
    """Show one entry: mechanism, claim, prescription and its certification record."""
    from forgekernel import kb
    from forgekernel.kb.claims import measured_text

    e = kb.get(entry_id, _settings(kb_dir=kb_dir).kb_dir)
    if as_json:
        typer.echo(json.dumps(_entry_json(e), indent=2))
        return
    for key, value in (("id", e.id), ("state", kb.state(e)), ("mechanism", e.mechanism),
                       ("claim", e.claim), ("probe", e.probe),
                       ("bottlenecks", ", ".join(e.bottlenecks)),
                       ("families", ", ".join(e.families) or "any"),
                       ("prescription", e.prescription)):
        typer.echo(f"{key:<13}{value}")
    c = e.certification
    if c is None:
        typer.echo("certification none (never probed; not presented to agents)")
        return
    typer.echo(f"certification {'passed' if c.passed else 'not passed'}: measured {measured_text(e)} "
               f"on {c.device} (driver {c.driver or '?'}), {c.date}")
    typer.echo(f"versions     {', '.join(f'{k} {v}' for k, v in c.versions.items())}")
    check = c.details.get("check")
    if check:
        typer.echo(f"check        {check}")


def _git_commit() -> str:
    proc = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else "unknown"


def _targets(ids: list[str], arch: str, kb_dir: str | None):
    from forgekernel.kb.store import load_with_paths

    targets = load_with_paths(None if ids else arch, kb_dir)
    if ids:
        known = {e.id for e, _ in targets}
        unknown = [i for i in ids if i not in known]
        if unknown:
            raise fail(f"no knowledge-base entry {unknown[0]!r} (see forge kb list)")
        targets = [(e, p) for e, p in targets if e.id in ids]
    if not targets:
        raise fail(f"no entries to probe for {arch}")
    return targets


def _measure(targets, delivery: str | None, gpu_settings) -> dict[str, Any]:
    from forgekernel.delivery import make_runner
    from forgekernel.delivery.base import resolve_delivery
    from forgekernel.kb.certify import run_probes

    name, why = resolve_delivery(gpu_settings.delivery)
    if name == "cpu":
        raise fail("kb probe needs a GPU, and the delivery here is cpu (the Triton interpreter "
                   "cannot time hardware); run it where --delivery local works")
    try:
        runner = make_runner(name, gpu=gpu_settings.gpu, settings=gpu_settings)
    except ValueError as exc:
        raise fail(str(exc)) from None
    typer.echo(f"delivery {name} -- {why}")
    return run_probes(sorted({e.probe for e, _ in targets}), runner)


@kb_app.command("probe")
def probe(
    ids: list[str] = typer.Argument(None, help="Entry ids to probe (default: every entry of --arch)."),
    arch: str = typer.Option("sm90", "--arch", help="Architecture whose entries to probe."),
    delivery: str = typer.Option(None, "--delivery", help="auto, cpu or local (default FK_DELIVERY or auto)."),
    out: Path = typer.Option(None, "--out", help="Also write the raw probe run as JSON here."),
    from_json: Path = typer.Option(None, "--from-json", help="Record a saved probe run instead of running probes."),
    commit: str = typer.Option(None, "--commit", help="Git commit to record (default: git rev-parse HEAD)."),
    kb_dir: str = typer.Option(None, "--kb-dir", help=KB_DIR_HELP),
) -> None:
    """Run the entries' probes through the delivery and write their certification records."""
    from forgekernel.kb.certify import apply_run

    settings = _settings(delivery=delivery, kb_dir=kb_dir)
    targets = _targets(ids or [], arch, settings.kb_dir)
    if from_json is not None:
        try:
            run = json.loads(from_json.read_text())
        except (OSError, ValueError) as exc:
            raise fail(f"{from_json}: cannot read a probe run: {exc}") from None
    else:
        run = _measure(targets, delivery, settings)
        run["commit"] = commit or _git_commit()
        if out is not None:
            out.write_text(json.dumps(_clean(run), indent=1) + "\n")
    _check_arch(run, targets)
    outcomes = apply_run(run, targets)
    rows = [("id", "state", "measured", "claim")]
    rows += [(o.entry.id, "ERROR" if o.error else o.state,
              "" if o.error else f"{o.entry.certification.measured:.4g} {o.entry.unit}",
              o.error or o.entry.claim) for o in outcomes]
    typer.echo(f"device {run['device']}, driver {run.get('driver') or '?'}, {run['date']}")
    _table(rows)
    if any(o.error for o in outcomes):
        raise typer.Exit(1)


def _check_arch(run: dict[str, Any], targets) -> None:
    sm = str(run.get("versions", {}).get("sm", ""))
    arch = "sm" + sm.replace(".", "") if sm else ""
    wrong = [e.id for e, _ in targets if arch and e.arch not in (arch, "any")]
    if wrong:
        raise fail(f"the probes ran on {arch} ({run['device']}) but {wrong[0]} is an "
                   f"{wrong[0].split('.')[0]} entry; nothing recorded")


@kb_app.command("prescribe")
def prescribe(
    task_dir: Path = typer.Argument(..., help="A task directory (task.toml + reference.py)."),
    as_json: bool = typer.Option(False, "--json", help="Print the ranking as JSON."),
    kb_dir: str = typer.Option(None, "--kb-dir", help=KB_DIR_HELP),
) -> None:
    """Which entries apply to a task and why, best first, and what each agent would be told."""
    from forgekernel import kb
    from forgekernel.kb.claims import measured_text
    from forgekernel.task import load_task

    task = load_task(task_dir)
    kb_path = _settings(kb_dir=kb_dir).kb_dir
    ranked = kb.prescribe(task, kb_dir=kb_path)
    told = {role: kb.prescriptions_for_agent(task, kb_dir=kb_path, role=role)
            for role in ("coder", "architect")}
    if as_json:
        typer.echo(json.dumps(_clean({
            "task": task.name, "family": task.family,
            "prescriptions": [{"id": p.entry.id, "score": p.score, "state": p.state,
                               "relevant": p.relevant, "bottlenecks": list(p.entry.bottlenecks),
                               "why": p.why, "prescription": p.entry.prescription,
                               "measured": p.entry.certification.measured if p.entry.certification else None,
                               "unit": p.entry.unit, "claim": p.entry.claim,
                               "roles": list(p.entry.roles)} for p in ranked],
            **{role: list(lines) for role, lines in told.items()}}), indent=2))
        return
    typer.echo(f"task {task.name} (family {task.family}, arch {task.arch}); roofline floors from "
               f"{ranked[0].floors if ranked else 'n/a'}")
    rows = [("rank", "score", "state", "id", "measured", "why")]
    rows += [(str(i), f"{p.score:.2f}", p.state, p.entry.id, measured_text(p.entry), p.why)
             for i, p in enumerate(ranked, 1)]
    _table(rows)
    typer.echo("")
    for role, lines in told.items():
        typer.echo(f"for the {role} (certified entries for that role only):" if lines else
                   f"for the {role}: nothing (no certified entry for that role applies)")
        for line in lines:
            typer.echo(f"- {line}")
