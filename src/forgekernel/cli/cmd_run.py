"""`forge run` (drive a run dir to the best kernel it can find) and `forge status`."""

from __future__ import annotations

import contextlib
import importlib
import json
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer

from forgekernel.cli import Interrupted, app, fail


@app.command("run")
def run_cmd(
    target: Path = typer.Argument(..., metavar="RUN_DIR",
                                  help="Run dir (from `forge new`), or a task dir: a run dir is created first."),
    agent: str = typer.Option(None, "--agent", help="Coder backend: builtin, scripted, claude-code, anthropic, openai."),
    architect: str = typer.Option(None, "--architect", help="Architect backend (default: the coder's)."),
    model: str = typer.Option(None, "--model", help="Model for LLM backends."),
    delivery: str = typer.Option(None, "--delivery", help="cpu, local or auto (default: the run's, else FK_DELIVERY, else auto)."),
    max_iterations: int = typer.Option(None, "--max-iterations", min=1, help="Attempts in the whole run."),
    max_minutes: float = typer.Option(None, "--max-minutes", min=0.01, help="Wall minutes over all sessions."),
    max_dollars: float = typer.Option(None, "--max-dollars", min=0, help="Agent dollars over the run."),
    target_x: float = typer.Option(None, "--target", min=0.001, help="Target speedup over the reference (default: the task's); kept in run.toml."),
    batch: int = typer.Option(None, "--batch", min=1, help="Candidates the coder proposes per row, judged together (concurrently on a runner with run_many, e.g. ray); default 1."),
    script: Path = typer.Option(None, "--script", help="Script for the scripted agent (implies --agent scripted)."),
    replay: Path = typer.Option(None, "--replay", help="Replay a past run dir's plans and edits (scripted agent)."),
    out: Path = typer.Option(None, "--out", help="With a task dir: the run dir to create."),
    ncu: str = typer.Option("off", "--ncu", help="Nsight Compute in the run's profiles: off (default: it costs minutes), auto or on."),
    judge_impl: str = typer.Option(None, "--judge", hidden=True, help="module:attr of a judge callable (tests)."),
) -> None:
    """Run the loop on RUN_DIR until the target, the budget or the ideas run out (resumable).

    Exit code 0 when the target speedup is met (after the final confirmation), 2 otherwise.
    """
    from forgekernel import engine, rundir
    from forgekernel.config import load_settings
    from forgekernel.report import summary_line

    if ncu not in ("off", "auto", "on"):
        raise fail(f"--ncu {ncu!r}: use off, auto or on")
    settings = load_settings({"delivery": delivery, "agent": agent, "architect": architect, "model": model})
    if not rundir.is_run_dir(target):  # a task dir: refuse missing agents or GPUs before creating anything
        _preflight(settings, agent, architect, delivery, replay or script)
    rd = rundir.open(_run_dir(target, settings, out))
    cfg = _keep_budget(rd, {"iterations": max_iterations, "minutes": max_minutes, "dollars": max_dollars,
                            "batch": batch}, target_x)
    if model is None and cfg.get("model"):
        settings = settings.model_copy(update={"model": cfg["model"]})
    seams = _seams(rd, cfg, settings, agent, architect, delivery, replay or script, judge_impl)
    seams["profiler"] = _profiler(ncu)
    with _Printer() as printer, resumable(f"forge run {rd.root}"):
        outcome = engine.run(rd.root, settings=settings, progress=printer, **seams)
    typer.echo(f"report: {rd.report}")
    typer.echo(summary_line(engine.load_state(rd)))
    typer.echo(f"target {outcome.target:g}x: {'met' if outcome.target_met else 'not met'} "
               f"({outcome.reason}); exit {outcome.exit_code}")
    raise typer.Exit(outcome.exit_code)


def _keep_budget(rd: Any, overrides: dict[str, Any], target: float | None = None) -> dict[str, Any]:
    """Write budget (and target) flags into run.toml, so a resumed run keeps them; returns
    the config."""
    import tomli_w

    from forgekernel import rundir

    cfg = rd.config()
    given = {k: v for k, v in overrides.items() if v is not None}
    if given:
        cfg.setdefault("budget", {}).update(given)
    if target is not None:
        cfg.setdefault("target", {})["speedup"] = target
    if given or target is not None:
        rundir.atomic_write(rd.run_toml, tomli_w.dumps(cfg))
    return cfg


def _seams(rd: Any, cfg: dict, settings: Any, agent: str | None, architect: str | None,
           delivery: str | None, script: Path | None, judge_impl: str | None) -> dict[str, Any]:
    """The concrete agents, runner, judge, profiler and knowledge base for this run."""
    from forgekernel.delivery.base import make_runner, resolve_delivery
    from forgekernel.evolve_ref import for_run_dir

    coder_name, arch_name = _agent_names(agent, architect, cfg, script is not None)
    wanted = delivery or (cfg.get("delivery") if cfg.get("delivery") not in (None, "auto") else settings.delivery)
    name, _why = resolve_delivery(wanted)
    try:
        runner = make_runner(name, gpu=cfg.get("gpu", settings.gpu), settings=settings)
    except ValueError as exc:
        raise fail(str(exc)) from None
    coder = _backend(coder_name, "coder", settings, script)
    arch = _backend(arch_name, "architect", settings, script)
    judge, hasher = _judge(judge_impl)
    arch, judge = for_run_dir(rd, arch, judge, hasher)  # a `forge evolve` generation: its sealed reference
    return {"coder": coder, "architect": arch, "judge": judge, "runner": runner, "hasher": hasher,
            "profiler": _profiler(), "prescriber": _prescriber(), "check_command": _check_command(rd, name)}


def _preflight(settings: Any, agent: str | None, architect: str | None, delivery: str | None,
               script: Path | None) -> None:
    """The checks `_seams` makes that need no run dir: agents (and a script) usable,
    delivery usable. Building an agent or a runner connects to nothing."""
    from forgekernel.delivery.base import make_runner, resolve_delivery

    names = _agent_names(agent, architect, {"agent": settings.agent, "architect": settings.architect},
                         script is not None)
    for role, name in zip(("coder", "architect"), names, strict=True):
        _backend(name, role, settings, script)
    try:
        make_runner(resolve_delivery(delivery or settings.delivery)[0], gpu=settings.gpu, settings=settings)
    except ValueError as exc:
        raise fail(str(exc)) from None


def _run_dir(target: Path, settings: Any, out: Path | None) -> Path:
    from forgekernel import rundir

    if rundir.is_run_dir(target):
        if out is not None:
            raise fail("--out is only for a task dir; the run dir already exists")
        return target
    if (target / "task.toml").is_file():
        root = rundir.create(target, settings, out)
        typer.echo(f"created run dir {root}")
        return root
    raise fail(f"{target}: neither a run dir (run.toml) nor a task dir (task.toml)")


def _agent_names(agent: str | None, architect: str | None, cfg: dict, scripted: bool) -> tuple[str, str]:
    coder = agent or ("scripted" if scripted else cfg.get("agent") or "builtin")
    if agent or scripted:
        arch = architect or coder
    else:
        arch = architect or cfg.get("architect") or coder
    if scripted and "scripted" not in (coder, arch):
        raise fail("--script/--replay drive the scripted agent; drop --agent/--architect or use 'scripted'")
    return coder, arch


def _backend(name: str, role: str, settings: Any, script: Path | None):
    from forgekernel.agents import backend_module
    from forgekernel.plan import agent_missing

    missing = agent_missing(name, settings)
    if missing:
        raise fail(f"{role} agent '{name}' cannot run here: missing {'; '.join(missing)}")
    try:
        module = backend_module(name)
    except ImportError as exc:
        raise fail(f"{role} agent '{name}' is not available in this install ({exc})") from None
    kw = {"script": script} if name == "scripted" else {}
    make = module.make_coder if role == "coder" else module.make_architect
    return make(settings, **kw)


def _judge(impl: str | None):
    """The judge callable and the candidate hasher (one definition: forgekernel.candidate)."""
    from forgekernel.candidate import source_hash

    if impl:
        mod, _, attr = impl.partition(":")
        try:
            fn = getattr(importlib.import_module(mod), attr or "judge")
        except (ImportError, AttributeError) as exc:
            raise fail(f"--judge {impl}: {exc}") from None
        return fn, source_hash
    try:
        from forgekernel.judge import judge as real_judge
    except ImportError as exc:
        raise fail(f"the judge is not available in this install ({exc})") from None
    return real_judge, source_hash


def _profiler(ncu: str = "off"):
    """The reference/best profiler. Nsight Compute is off by default inside a run: it replays
    every kernel many times, which costs minutes per workload; `--ncu auto|on` turns it on."""
    try:
        from forgekernel.profile import profile_task
    except ImportError:
        return None

    def profile(task, runner, kernel_dir):
        return profile_task(task, runner, kernel=kernel_dir / "kernel.py" if kernel_dir else None,
                            ncu=ncu)

    return profile


def _prescriber():
    try:
        from forgekernel.kb import prescriptions_for_agent
    except ImportError:
        return None
    return lambda task, profiles: prescriptions_for_agent(task, list(profiles) or None)


def _check_command(rd: Any, delivery: str) -> tuple[str, ...]:
    """What an agent may run for a quick verdict on the workspace (`forge check`: visible
    smoke workloads, no timing)."""
    return (sys.executable, "-m", "forgekernel.cli", "check", str(rd.task_dir), str(rd.workspace),
            "--delivery", delivery, "--json")


class _CtrlC:
    """SIGINT handler of a resumable command: raises KeyboardInterrupt as Python's own does,
    and remembers the press, so that one swallowed where Python ignores exceptions (an
    at-fork hook, a finaliser) still stops the run at its next progress event."""

    hit = False

    def __call__(self, signum: int, frame: Any) -> None:
        _CtrlC.hit = True
        raise KeyboardInterrupt

    @staticmethod
    def check() -> None:
        if _CtrlC.hit:
            raise KeyboardInterrupt


@contextlib.contextmanager
def resumable(command: str) -> Iterator[None]:
    """Ctrl-C: one line saying how to resume (everything recorded so far is kept), exit 130."""
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, _CtrlC()) if main else None
    try:
        yield
    except KeyboardInterrupt:
        raise Interrupted(command) from None
    finally:
        _CtrlC.hit = False
        if main and previous is not None:
            signal.signal(signal.SIGINT, previous)


class _Printer:
    """Progress: a live status line on a terminal, plain lines otherwise."""

    def __enter__(self) -> _Printer:
        self.live = None
        if sys.stdout.isatty():
            from rich.console import Console

            self.console = Console()
            self.live = self.console.status("starting")
            self.live.__enter__()
        return self

    def __call__(self, ev: Any) -> None:
        _CtrlC.check()
        if self.live is None:
            typer.echo(f"[{ev.kind}] {ev.message}")
            return
        if ev.kind == "propose":
            self.live.update(f"{ev.message} (agent working)")
            return
        self.console.print(f"[{ev.kind}] {ev.message}", markup=False, highlight=False)
        waiting = {"plan": "architect planning", "confirm": "judging", "stop": "confirming the best",
                   "session": "starting"}
        self.live.update(waiting.get(ev.kind, f"after: {ev.message}"))

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.__exit__(None, None, None)


@app.command("status")
def status_cmd(
    run_dir: Path = typer.Argument(..., help="A run dir."),
    as_json: bool = typer.Option(False, "--json", help="Print the status as JSON."),
    last: int = typer.Option(5, "--last", min=0, help="How many recent attempts to show."),
) -> None:
    """Where a run stands: best so far, milestone and gate, budget used, recent verdicts."""
    from forgekernel import rundir, status

    data = status.collect(rundir.open(run_dir), last=last)
    if as_json:
        typer.echo(json.dumps(data, indent=2))
    else:
        for line in status.render(data):
            typer.echo(line)
