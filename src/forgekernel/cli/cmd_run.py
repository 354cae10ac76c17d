"""`forge run` (drive a run dir to the best kernel it can find) and `forge status`."""

from __future__ import annotations

import contextlib
import functools
import importlib
import json
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer

from forgekernel.cli import Interrupted, app, fail

UNSAFE_HELP = ("Run candidate code without the sandbox (when this machine has none: see `forge "
               "doctor`); it then sees your files, network and environment. Say it on every command.")


@app.command("run")
def run_cmd(
    target: Path = typer.Argument(..., metavar="RUN_DIR",
                                  help="Run dir (from `forge new`), or a task dir or KernelBench .py file: a run dir is created first."),
    agent: str = typer.Option(None, "--agent", help="Coder backend: builtin, scripted, claude-code, anthropic, openai."),
    architect: str = typer.Option(None, "--architect", help="Architect backend (default: the coder's)."),
    model: str = typer.Option(None, "--model", help="Model for LLM backends."),
    price: str = typer.Option(None, "--price", help="USD per million input,output tokens of the LLM (e.g. 3,15; 0,0 for a free local model); needed for a model forge has no price for."),
    effort: str = typer.Option(None, "--effort", help="low, medium or high: how hard an LLM agent thinks (extended thinking on anthropic, reasoning_effort on openai, --effort for claude-code); default: the provider's."),
    delivery: str = typer.Option(None, "--delivery", help="cpu, local, ssh, ray or auto (default: the run's, else FK_DELIVERY, else auto); docs/delivery.md."),
    max_iterations: int = typer.Option(None, "--max-iterations", min=1, help="Attempts in the whole run."),
    max_minutes: float = typer.Option(None, "--max-minutes", min=0.01, help="Wall minutes over all sessions."),
    max_dollars: float = typer.Option(None, "--max-dollars", min=0, help="Agent dollars over the run."),
    target_x: float = typer.Option(None, "--target", min=0.001, help="Target speedup over the reference (default: the task's); kept in run.toml."),
    batch: int = typer.Option(None, "--batch", min=1, help="Candidates the coder proposes per row, judged together (concurrently on a runner with run_many, e.g. ray); default 1."),
    script: Path = typer.Option(None, "--script", help="Script for the scripted agent (implies --agent scripted)."),
    replay: Path = typer.Option(None, "--replay", help="Replay a past run dir's plans and edits (scripted agent)."),
    out: Path = typer.Option(None, "--out", help="With a task dir: the run dir to create."),
    language: str = typer.Option(None, "--language", help="triton, cuda or cute-dsl: what the candidates are written in (a new run; default: the task's); several joined by commas let the architect choose per milestone, the first being the default. cuda and cute-dsl first need a GPU delivery."),
    ncu: str = typer.Option("off", "--ncu", help="Nsight Compute in the run's profiles: off (default: it costs minutes), auto or on."),
    unsafe_no_sandbox: bool = typer.Option(False, "--unsafe-no-sandbox", help=UNSAFE_HELP),
    judge_impl: str = typer.Option(None, "--judge", hidden=True, help="module:attr of a judge callable (tests)."),
) -> None:
    """Run the loop on RUN_DIR until the target, the budget or the ideas run out (resumable).

    Exit code 0 when the target speedup is met (after the final confirmation), 2 otherwise.
    """
    from forgekernel.config import load_settings
    from forgekernel.report.markdown import next_steps, summary_line
    from forgekernel.run import engine, rundir

    if ncu not in ("off", "auto", "on"):
        raise fail(f"--ncu {ncu!r}: use off, auto or on")
    settings = load_settings({"delivery": delivery, "agent": agent, "architect": architect, "model": model,
                              "price": price, "effort": effort})
    rd = _existing(target, out)
    if rd is not None and model is None and rd.config.model:
        settings = settings.model_copy(update={"model": rd.config.model})
    parts = _prepare(settings, rd, agent, architect, delivery, replay or script,  # before any write
                     unsafe_no_sandbox)
    _check_language(language, target, rd, parts.delivery)
    if rd is None:
        rd = rundir.open(_create(target, settings, out, language, parts.delivery))
    rd = _keep_budget(rd, {"iterations": max_iterations, "minutes": max_minutes, "dollars": max_dollars,
                           "batch": batch}, target_x)
    seams = _seams(rd, parts, judge_impl, unsafe_no_sandbox)
    seams["profiler"] = _profiler(ncu, sandbox=not unsafe_no_sandbox)
    with _Printer() as printer, resumable(f"forge run {rd.root}"):
        outcome = engine.run(rd.root, settings=settings, progress=printer, **seams)
    state = engine.load_state(rd)
    typer.echo(f"report: {rd.report}")
    typer.echo(summary_line(state))
    typer.echo(f"target {outcome.target:g}x: {'met' if outcome.target_met else 'not met'} "
               f"({outcome.reason}); exit {outcome.exit_code}")
    for line in next_steps(rd, state):
        typer.echo(f"next: {line}")
    raise typer.Exit(outcome.exit_code)


def _existing(target: Path, out: Path | None) -> Any:
    """The run dir at ``target`` (run.toml checked, writable), or None for a task dir."""
    from forgekernel.run import rundir

    if not rundir.is_run_dir(target):
        if target.suffix == ".py" and target.is_file():
            return None  # a KernelBench problem file: converted, as `forge new` does
        if not (target / "task.toml").is_file():
            raise fail(f"{target}: neither a run dir (run.toml), a task dir (task.toml) nor a "
                       "KernelBench problem file (.py)")
        return None
    if out is not None:
        raise fail("--out is only for a task dir; the run dir already exists")
    rd = rundir.open(target)
    rundir.require_writable(rd)
    return rd


def _prepare(settings: Any, rd: Any, agent: str | None, architect: str | None,
             delivery: str | None, script: Path | None, unsafe: bool = False) -> Any:
    """The checked agents and runner: what run.toml says (or, for a new run, the settings)
    unless a flag says otherwise. Nothing is written before this passes."""
    from forgekernel.cli import preflight

    if rd is None:
        wanted = preflight.Wanted(settings.agent, settings.architect, settings.delivery, settings.gpu)
    else:
        cfg = rd.config
        wanted = preflight.Wanted(cfg.agent, cfg.architect, cfg.delivery, cfg.gpu)
    return preflight.prepare(settings, wanted, agent=agent, architect=architect, delivery=delivery,
                             script=script, unsafe_no_sandbox=unsafe)


def _keep_budget(rd: Any, overrides: dict[str, Any], target: float | None = None) -> Any:
    """Write budget (and target) flags into run.toml, so a resumed run keeps them; returns
    the run dir as reopened."""
    from forgekernel.run import rundir

    given = {k: v for k, v in overrides.items() if v is not None}
    if not given and target is None:
        return rd
    data = rd.config.data()
    if given:
        data.setdefault("budget", {}).update(given)
    if target is not None:
        data.setdefault("target", {})["speedup"] = target
    return rundir.write_config(rd, data)


def _seams(rd: Any, parts: Any, judge_impl: str | None, unsafe: bool = False) -> dict[str, Any]:
    """The concrete agents, runner, judge, profiler and knowledge base for this run."""
    from forgekernel.evolve.reference import for_run_dir

    judge, hasher = _judge(judge_impl, unsafe)
    arch, judge = for_run_dir(rd, parts.architect, judge, hasher)  # a `forge evolve` generation
    return {"coder": parts.coder, "architect": arch, "judge": judge, "runner": parts.runner,
            "hasher": hasher, "profiler": _profiler(sandbox=not unsafe), "prescriber": _prescriber(),
            "check_command": _check_command(rd, parts.delivery, unsafe),
            "profile_command": _profile_command(rd, parts.delivery, unsafe)}


def _preflight(settings: Any, agent: str | None, architect: str | None, delivery: str | None,
               script: Path | None, unsafe: bool = False) -> None:
    """Everything a new run needs, checked before anything is created (forge evolve)."""
    _prepare(settings, None, agent, architect, delivery, script, unsafe)


NATIVE = {"cuda": "CUDA C++", "cute-dsl": "CuTe DSL"}


def _check_language(language: str | None, target: Path, rd: Any, delivery: str) -> None:
    """Languages forge knows, and a delivery that can run the first (before anything is written)."""
    from forgekernel.records import LANGUAGES

    wanted = _languages(language)
    bad = [x for x in wanted if x not in LANGUAGES]
    if bad or (language is not None and not wanted):
        raise fail(f"--language {language!r}: use {', '.join(LANGUAGES)}, or several joined by commas "
                   "(the first is the run's own)")
    if wanted and rd is not None:
        raise fail("--language is for a new run (a task dir); this run dir keeps its task's language")
    if not wanted:
        wanted = list(rd.task().allowed_languages()) if rd is not None else _task_languages(target)
    first = wanted[0]
    missing = _missing_tools(wanted)
    if missing:
        raise fail(missing)
    if first in NATIVE and delivery == "cpu":
        raise fail(f"language {first}: {NATIVE[first]} candidates run only on a GPU and this "
                   "run's delivery is cpu (the Triton CPU interpreter); use a GPU delivery (local, ssh, "
                   "ray), or check a kernel's compile here with `forge judge` / `forge profile --static`")


def _languages(language: str | None) -> list[str]:
    return [x.strip() for x in (language or "").split(",") if x.strip()]


def _task_languages(target: Path) -> list[str]:
    import tomllib

    try:
        data = tomllib.loads((target / "task.toml").read_text()) if target.is_dir() else {}
    except (OSError, tomllib.TOMLDecodeError):
        return ["triton"]  # the task's own loading reports a broken task.toml
    first = str(data.get("language", "triton"))
    others = data.get("languages") if isinstance(data.get("languages"), list) else []
    return [first, *(str(x) for x in others if x != first)]


def _missing_tools(languages: list[str]) -> str:
    """What a language the run may write needs and this machine lacks (one line), or ''."""
    import shutil

    from forgekernel.cli.doctor import installed

    if "cuda" in languages and shutil.which("nvcc") is None:
        return "language cuda: nvcc is not on PATH (CUDA C++ candidates are built with it); see forge doctor"
    if "cute-dsl" in languages and not installed("nvidia-cutlass-dsl"):
        return ("language cute-dsl: the CuTe DSL is not installed: pip install 'forgekernel[cute]'; "
                "see forge doctor")
    return ""


def _create(target: Path, settings: Any, out: Path | None, language: str | None = None,
            delivery: str = "") -> Path:
    import tempfile

    from forgekernel.cli import preflight
    from forgekernel.cli.cmd_new import task_dir_for
    from forgekernel.refplan import check_reference
    from forgekernel.run import rundir
    from forgekernel.task import load_task

    with tempfile.TemporaryDirectory(prefix="forge-run-") as scratch:
        task_dir = task_dir_for(target, Path(scratch))  # a KernelBench file is converted first
        task = load_task(task_dir)
        preflight.judgeable(task, delivery)
        check_reference(task)  # a misbehaving reference is one line, before anything is made
        root = rundir.create(task_dir, settings, out, languages=_languages(language) or None, gpu=delivery != "cpu")
    typer.echo(f"created run dir {root}")
    return root


def _agent_names(agent: str | None, architect: str | None, cfg: dict, scripted: bool) -> tuple[str, str]:
    from forgekernel.cli import preflight

    wanted = preflight.Wanted(cfg.get("agent"), cfg.get("architect"))
    return preflight.agent_names(agent, architect, wanted, scripted)


def _backend(name: str, role: str, settings: Any, script: Path | None):
    from forgekernel.cli import preflight

    return preflight.backend(name, role, settings, script)


def _judge(impl: str | None, unsafe: bool = False):
    """The judge callable and the candidate hasher (one definition: forgekernel.candidate);
    ``unsafe``: the real judge runs candidates outside the sandbox."""
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
        from forgekernel.judge.options import Unsandboxed
    except ImportError as exc:
        raise fail(f"the judge is not available in this install ({exc})") from None
    return (Unsandboxed(real_judge) if unsafe else real_judge), source_hash


def _profiler(ncu: str = "off", sandbox: bool = True):
    """The reference/best profiler. Nsight Compute is off by default inside a run: it replays
    every kernel many times, which costs minutes per workload; `--ncu auto|on` turns it on."""
    try:
        from forgekernel.profile import profile_task
    except ImportError:
        return None

    def profile(task, runner, kernel_dir):
        return profile_task(task, runner, kernel=kernel_dir / "kernel.py" if kernel_dir else None,
                            ncu=ncu, sandbox=sandbox)

    return profile


def _prescriber():
    try:
        from forgekernel.kb import prescriptions_for_agent
    except ImportError:
        return None
    return lambda task, profiles, role: prescriptions_for_agent(task, list(profiles) or None, role=role)


def _check_command(rd: Any, delivery: str, unsafe: bool = False) -> tuple[str, ...]:
    """What an agent may run for a quick verdict on the workspace (`forge check`: visible
    smoke workloads, no timing)."""
    unsafe_flag = ("--unsafe-no-sandbox",) if unsafe else ()
    return _forge_cli("check", str(rd.task_dir), str(rd.workspace), "--delivery", delivery, "--json",
                      *unsafe_flag)


def _profile_command(rd: Any, delivery: str, unsafe: bool = False) -> tuple[str, ...]:
    """What an agent may run to time and profile the workspace's kernel (`forge profile
    --kernel`) where the run judges; none on ssh and ray, which `forge profile` cannot use."""
    if delivery not in ("cpu", "local"):
        return ()
    unsafe_flag = ("--unsafe-no-sandbox",) if unsafe else ()
    return _forge_cli("profile", str(rd.task_dir), "--kernel", str(rd.workspace), "--delivery", delivery,
                      "--json", *unsafe_flag)


@functools.lru_cache(maxsize=1)
def _isolated_import_works() -> bool:
    """Whether ``python -I`` finds forgekernel (it does when installed; not when only a
    PYTHONPATH points at it, as on a machine it was copied to)."""
    probe = subprocess.run([sys.executable, "-I", "-c", "import forgekernel"], capture_output=True, timeout=60)
    return probe.returncode == 0


def _forge_cli(*args: str) -> tuple[str, ...]:
    """An agent's `forge` command: ``python -I`` (the cwd and PYTHON* variables shadow
    nothing), with this process's ``sys.path`` fixed in the command where -I alone would
    not find forgekernel."""
    if _isolated_import_works():
        return (sys.executable, "-I", "-m", "forgekernel.cli", *args)
    from forgekernel.sandbox import python_argv

    return tuple(python_argv("forgekernel.cli", args))


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
    from forgekernel.report import status
    from forgekernel.run import rundir

    data = status.collect(rundir.open(run_dir), last=last)
    if as_json:
        typer.echo(json.dumps(data, indent=2))
    else:
        for line in status.render(data):
            typer.echo(line)
