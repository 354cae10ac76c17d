"""`forge evolve`: a chain of runs, each timed against the previous generation's best."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from forgekernel.cli import app, fail
from forgekernel.cli.cmd_run import UNSAFE_HELP


@app.command("evolve")
def evolve_cmd(
    target: Path = typer.Argument(..., help="A task dir (a new chain), or an evolve dir to resume."),
    generations: int = typer.Option(None, "--generations", min=1, help="Most generations, generation 0 included (default 3)."),
    agent: str = typer.Option(None, "--agent", help="Coder backend: builtin, scripted, claude-code, anthropic, openai."),
    architect: str = typer.Option(None, "--architect", help="Architect backend (default: the coder's)."),
    model: str = typer.Option(None, "--model", help="Model for LLM backends."),
    delivery: str = typer.Option(None, "--delivery", help="cpu, local, ssh, ray or auto (default: FK_DELIVERY, else auto)."),
    max_iterations: int = typer.Option(None, "--max-iterations", min=1, help="Attempts per generation."),
    max_minutes: float = typer.Option(None, "--max-minutes", min=0.01, help="Wall minutes per generation."),
    chain_minutes: float = typer.Option(None, "--chain-minutes", min=0.01, help="No new generation after this many minutes of runs."),
    noise_rule: str = typer.Option(None, "--noise-rule", help="auto (device timings only), on or off: when the noise-floor stop applies."),
    measure_original: bool = typer.Option(None, "--measure-original/--no-measure-original", help="Also judge each sealed best against the task's reference (default on)."),
    profile: bool = typer.Option(None, "--profile/--no-profile", help="Profile the reference and gate candidates (default on)."),
    script: str = typer.Option(None, "--script", help="Scripted agent: script path; '{generation}' in it is replaced by the generation."),
    out: Path = typer.Option(None, "--out", help="With a task dir: the evolve dir to create."),
    unsafe_no_sandbox: bool = typer.Option(False, "--unsafe-no-sandbox", help=UNSAFE_HELP),
    judge_impl: str = typer.Option(None, "--judge", hidden=True, help="module:attr of a judge callable (tests)."),
) -> None:
    """Evolve a kernel: each generation's best becomes the next generation's performance reference.

    Stops when a generation's gain is within the noise floor, it finds nothing correct, or at --generations.
    Resumable: `forge evolve EVOLVE_DIR`. Exit 0 when some generation sealed a best, 2 otherwise.
    """
    from forgekernel.config import load_settings
    from forgekernel.evolve import generations as evolve

    given = {"generations": generations, "agent": agent, "architect": architect, "model": model,
             "delivery": delivery, "max_iterations": max_iterations, "max_minutes": max_minutes,
             "chain_minutes": chain_minutes, "noise_rule": noise_rule, "measure_original": measure_original,
             "profile": profile, "script": script, "judge": judge_impl, "out": out}
    if evolve.is_chain(target):
        passed = sorted(k for k, v in given.items() if v is not None)
        if passed:
            raise fail(f"{target} is an evolve dir: its options are fixed (evolve.toml); "
                       f"drop {', '.join('--' + p.replace('_', '-') for p in passed)}")
        root = evolve.open_chain(target).root
    elif (target / "task.toml").is_file():
        root = _create(target, given, unsafe_no_sandbox)
        typer.echo(f"created evolve dir {root}")
    else:
        raise fail(f"{target}: neither an evolve dir (evolve.toml) nor a task dir (task.toml)")
    opts = evolve.open_chain(root).options()
    settings = load_settings({"delivery": opts.delivery, "agent": opts.agent,
                              "architect": opts.architect, "model": opts.model or None})
    parts = _parts(opts, settings, unsafe_no_sandbox)
    from forgekernel.cli.cmd_run import _Printer, resumable

    with _Printer() as printer, resumable(f"forge evolve {root}"):
        parts.progress = printer
        outcome = evolve.evolve(root, parts)
    from forgekernel.evolve import lineage as evolve_lineage

    typer.echo(f"lineage: {root / 'lineage.md'}")
    typer.echo(evolve_lineage.best_line(evolve_lineage.load(root) or {}))
    typer.echo(f"{outcome.generations} generation(s); {outcome.stop_reason}; exit {outcome.exit_code}")
    raise typer.Exit(outcome.exit_code)


def _create(task_dir: Path, given: dict[str, Any], unsafe: bool = False) -> Path:
    from forgekernel.cli.cmd_run import _agent_names, _preflight
    from forgekernel.config import load_settings
    from forgekernel.delivery.base import resolve_delivery
    from forgekernel.evolve import generations as evolve

    settings = load_settings({"delivery": given["delivery"], "agent": given["agent"],
                              "architect": given["architect"], "model": given["model"]})
    scripted = given["script"] is not None
    coder, arch = _agent_names(given["agent"], given["architect"], {"agent": settings.agent,
                               "architect": settings.architect}, scripted)
    name, _why = resolve_delivery(given["delivery"] or settings.delivery)
    script = ""
    if scripted:
        script = str(Path(given["script"]).resolve())
        if not Path(script.replace("{generation}", "0")).exists():
            raise fail(f"--script {given['script']}: no such file (for generation 0)")
    _preflight(settings, given["agent"], given["architect"], given["delivery"],
               Path(script.replace("{generation}", "0")) if scripted else None, unsafe)
    picked = {k: given[k] for k in ("generations", "max_iterations", "max_minutes", "chain_minutes",
                                    "noise_rule", "measure_original", "profile") if given[k] is not None}
    if name == "cpu" and given["max_iterations"] is None:
        picked["max_iterations"] = evolve.CPU_ITERATIONS
        typer.echo(f"cpu delivery: {evolve.CPU_ITERATIONS} attempts per generation (cpu-interpret timings "
                   "cannot guide a search; --max-iterations to change)")
    opts = evolve.ChainOptions(**picked, delivery=name, agent=coder, architect=arch,
                               model=settings.model or "", script=script, judge=given["judge"] or "")
    return evolve.create(task_dir, opts, settings, given["out"])


def _parts(opts: Any, settings: Any, unsafe: bool = False) -> Any:
    from forgekernel.cli import preflight
    from forgekernel.cli.cmd_run import (
        _backend,
        _check_command,
        _judge,
        _prescriber,
        _profile_command,
        _profiler,
    )
    from forgekernel.evolve import generations as evolve

    runner, _ = preflight.runner(opts.delivery, settings, settings.gpu)  # a GPU where one is needed
    preflight.sandbox_ready(opts.delivery, unsafe)
    judge, hasher = _judge(opts.judge or None, unsafe)

    def script_for(k: int) -> Path | None:
        return Path(opts.script.replace("{generation}", str(k))) if opts.script else None

    def agents(k: int) -> tuple[Any, Any]:
        return (_backend(opts.agent, "coder", settings, script_for(k)),
                _backend(opts.architect, "architect", settings, script_for(k)))

    return evolve.Parts(agents=agents, judge=judge, runner=runner, settings=settings, hasher=hasher,
                        profiler=_profiler(sandbox=not unsafe) if opts.profile else None,
                        prescriber=_prescriber(),
                        check_command=lambda rd: _check_command(rd, opts.delivery, unsafe),
                        profile_command=lambda rd: _profile_command(rd, opts.delivery, unsafe))
