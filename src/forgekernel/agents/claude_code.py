"""``--agent claude-code``: the real ``claude`` CLI, headless, in the run's workspace.

One CLI process per coder row (``claude -p`` with the prompt on stdin, ``--output-format
stream-json --verbose``), tools limited to Read/Write/Edit inside the working directory plus
Bash for exactly the engine's check command, ``--permission-mode dontAsk`` so anything else
is denied without asking. Events are read by ``type``; the ``result`` event's ``is_error``
(not its ``subtype``) decides failure. Rows of one milestone continue one session
(``--resume``); a new milestone starts a new one. The architect runs the CLI in a scratch
directory where it writes ``curriculum.toml``; an invalid file is sent back (same session)
with the validation errors, a bounded number of times.

The CLI is ``Settings.claude_bin``, else ``claude`` on PATH, else the one bundled in the
``claude-agent-sdk`` wheel (``pip install 'forgekernel[llm]'``). Credentials are the CLI's own
(its login, or ``ANTHROPIC_API_KEY``); ``ANTHROPIC_BASE_URL`` is passed through.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from forgekernel import config
from forgekernel import curriculum as curriculum_io
from forgekernel.agents import prompting
from forgekernel.agents.base import (
    AgentError,
    ArchitectContext,
    ArchitectResult,
    CoderContext,
    CoderResult,
)
from forgekernel.agents.claude_stream import ClaudeRun, run_cli
from forgekernel.records import AgentCost

NAME = "claude-code"

QUIET_ENV = {
    # documented switches: no telemetry, error reports, auto-update or other side traffic
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
}

CLAUDE_TOOLS_NOTE = ("Tools: Read, Write and Edit for files in the working directory (the "
                     "workspace) only{bash}. Every other tool and path is denied.")


def find_cli(settings: Any) -> Path:
    """The ``claude`` executable: configured, on PATH, or bundled with claude-agent-sdk."""
    if settings.claude_bin:
        path = Path(settings.claude_bin).expanduser()
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise AgentError(f"--agent {NAME}: FK_CLAUDE_BIN={settings.claude_bin} is not an "
                             "executable file")
        return path
    found = shutil.which("claude")
    if found:
        return Path(found)
    spec = importlib.util.find_spec("claude_agent_sdk")
    for root in (spec.submodule_search_locations or []) if spec else []:
        bundled = Path(root) / "_bundled" / "claude"
        if bundled.is_file():
            return bundled
    raise AgentError(f"--agent {NAME} needs the claude CLI (not found on PATH; "
                     "pip install 'forgekernel[llm]')")


_PRIVATE: list[Path] = []


def private_config() -> Path:
    """The CLI's configuration directory for this forge process: under forge's state
    directory, never the user's ~/.claude (sessions, transcripts and any auto-memory stay
    out of it, so one session cannot leave instructions for the next); the user's login is
    copied in (0600) when there is one, and the directory is removed when forge exits."""
    import atexit
    import tempfile

    if _PRIVATE:
        return _PRIVATE[0]
    base = config.state_home() / "claude"
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = Path(tempfile.mkdtemp(prefix="session-", dir=base))
    login = Path.home() / ".claude" / ".credentials.json"
    if login.is_file():
        target = path / ".credentials.json"
        target.write_bytes(login.read_bytes())
        target.chmod(0o600)
    atexit.register(shutil.rmtree, path, True)
    _PRIVATE.append(path)
    return path


class _Cli:
    """How to start the CLI: executable, environment, bounds."""

    def __init__(self, settings: Any, kw: dict[str, Any]) -> None:
        self.binary = find_cli(settings)
        self.model = kw.pop("model", None) or settings.model
        self.effort = getattr(settings, "effort", None)
        self.max_turns = int(kw.pop("max_turns", 40))
        self.timeout_s = float(kw.pop("timeout_s", 1800.0))
        self.permission_mode = kw.pop("permission_mode", "dontAsk")
        extra = dict(QUIET_ENV, CLAUDE_CODE_MAX_RETRIES=str(kw.pop("max_retries", 6)),
                     CLAUDE_CODE_DISABLE_AUTO_MEMORY="1", CLAUDE_CONFIG_DIR=str(private_config()))
        if settings.anthropic_base_url:
            extra["ANTHROPIC_BASE_URL"] = settings.anthropic_base_url
        key = config.secret("ANTHROPIC_API_KEY")
        if key:
            extra["ANTHROPIC_API_KEY"] = key
        extra.update(kw.pop("env", None) or {})
        self.env = config.child_env(extra)
        self.max_invalid = int(kw.pop("max_invalid", 3))
        if kw:
            raise TypeError(f"unknown options for the {NAME} backend: {sorted(kw)}")

    def argv(self, system: str, allowed: Sequence[str], tools: Sequence[str],
             resume: str | None, budget: float | None = None) -> list[str]:
        argv = [str(self.binary), "-p", "--output-format", "stream-json", "--verbose",
                "--max-turns", str(self.max_turns), "--permission-mode", self.permission_mode,
                "--tools", ",".join(tools), "--allowedTools", *allowed,
                "--disallowedTools", "Read(./.claude/**)", "Write(./.claude/**)",
                "Edit(./.claude/**)", "--setting-sources", "", "--strict-mcp-config",
                "--append-system-prompt", system]
        if self.model:
            argv += ["--model", self.model]
        if resume:
            argv += ["--resume", resume]
        if self.effort:
            argv += ["--effort", self.effort]
        if budget is not None:  # the CLI stops itself once its calls cost this much
            argv += ["--max-budget-usd", f"{max(budget, 0.0):.4f}"]
        return argv

    def run(self, prompt: str, cwd: Path, system: str, allowed: Sequence[str],
            tools: Sequence[str], resume: str | None = None, budget: float | None = None) -> ClaudeRun:
        return run_cli(self.argv(system, allowed, tools, resume, budget), prompt, cwd, self.env,
                       self.timeout_s)


FILE_RULES = ("Read(./**)", "Write(./**)", "Edit(./**)")


def check_rules(check_command: Sequence[str],
                profile_command: Sequence[str] = ()) -> tuple[list[str], list[str], str]:
    """Allowed rules, tool names and the prompt note for the optional check and profile
    commands (Bash for exactly those command lines, nothing else)."""
    commands = [shlex.join(c) for c in (check_command, profile_command) if c]
    if not commands:
        return list(FILE_RULES), ["Read", "Write", "Edit"], ""
    note = ", and Bash for exactly these commands: " + "; ".join(f"`{c}`" for c in commands)
    return [*FILE_RULES, *(f"Bash({c})" for c in commands)], ["Read", "Write", "Edit", "Bash"], note


def cost_of(run: ClaudeRun, model: str | None, before: float) -> AgentCost:
    """This invocation's cost (a resumed session's ``total_cost_usd`` is cumulative)."""
    dollars = run.cost_since_last if run.cost_since_last is not None else max(0.0, run.total_cost - before)
    return AgentCost(agent=NAME, model=run.model or model or "", dollars=dollars,
                     input_tokens=run.input_tokens, output_tokens=run.output_tokens,
                     cache_read_tokens=run.cache_read, cache_write_tokens=run.cache_write,
                     turns=run.turns, session=run.session)


def raise_if_fatal(run: ClaudeRun) -> None:
    """Auth and unknown-model failures, or a CLI that never produced a result, stop the run."""
    if run.api_status in (401, 403):
        raise AgentError(f"claude CLI: authentication failed ({run.api_status}): {run.message()}; "
                         "log in with `claude` or set ANTHROPIC_API_KEY (see forge doctor)")
    if run.api_status == 404:
        raise AgentError(f"claude CLI: model not found (404): {run.message()}; pick another with "
                         "--model / FK_MODEL")
    if not run.has_result and not run.timed_out:
        raise AgentError(f"claude CLI exited with code {run.returncode} without a result: "
                         f"{run.message()}")


class ClaudeCodeCoder:
    """Coder: one CLI run per row; rows of one milestone share a session."""

    name = NAME

    def __init__(self, cli: _Cli) -> None:
        self.cli = cli
        self.sessions: dict[str, str] = {}
        """milestone id -> CLI session id (continued with --resume)."""
        self.spent: dict[str, float] = {}
        """session id -> cumulative total_cost_usd seen (to price a resumed run's increment)."""

    def implement(self, ctx: CoderContext) -> CoderResult:
        allowed, tools, bash_note = check_rules(ctx.check_command, ctx.profile_command)
        system = prompting.coder_system(ctx.task, CLAUDE_TOOLS_NOTE.format(bash=bash_note))
        check = (f"Run the check command `{shlex.join(ctx.check_command)}` with Bash (exactly "
                 "as written; it may take minutes, so give Bash a 600000 ms timeout) before you "
                 "finish." if ctx.check_command else "")
        if ctx.profile_command:
            check += (f" Measure the kernel with `{shlex.join(ctx.profile_command)}` (Bash, exactly as "
                      "written, 600000 ms timeout: times, floors, %SOL, launches, registers, spills per "
                      "workload) before you finish, and compare with the best so far.")
        instructions = prompting.coder_instructions(ctx, check, "End with a one-line summary.")
        session = self.sessions.get(ctx.milestone.id)
        run = self._run(ctx, instructions, system, allowed, tools, session)
        if session and run.session_missing:
            run = self._run(ctx, instructions, system, allowed, tools, None)
        raise_if_fatal(run)
        cost = cost_of(run, self.cli.model, self.spent.get(run.session, 0.0))
        if run.session:
            self.sessions[ctx.milestone.id] = run.session
            self.spent[run.session] = run.total_cost
        if run.timed_out:
            return CoderResult(summary="", cost=cost,
                               error=f"claude CLI timed out after {self.cli.timeout_s:.0f} s")
        if run.is_error:
            return CoderResult(summary=run.result_text[:500], cost=cost,
                               error=f"claude CLI: {run.message()}")
        return CoderResult(summary=run.result_text.strip()[:500] or "(no summary)", cost=cost)

    def _run(self, ctx: CoderContext, instructions: str, system: str, allowed: list[str],
             tools: list[str], session: str | None) -> ClaudeRun:
        prompt = prompting.coder_prompt(ctx, instructions, brief=session is not None)
        return self.cli.run(prompt, ctx.workspace, system, allowed, tools, resume=session,
                            budget=ctx.dollars_left)


class ClaudeCodeArchitect:
    """Architect: the CLI writes ``curriculum.toml`` in a scratch directory."""

    name = NAME

    def __init__(self, cli: _Cli) -> None:
        self.cli = cli

    def plan(self, ctx: ArchitectContext) -> ArchitectResult:
        system = prompting.architect_system(ctx.task, CLAUDE_TOOLS_NOTE.format(bash=""))
        prompt = prompting.architect_prompt(
            ctx, "Write the complete curriculum to `curriculum.toml` in the working directory "
                 "with the Write tool, then end with a one-line summary of the plan.")
        costs: list[AgentCost] = []
        with tempfile.TemporaryDirectory(prefix="fk-architect-") as tmp:
            where = Path(tmp)
            session, spent = None, 0.0
            for attempt in range(self.cli.max_invalid + 1):
                run = self.cli.run(prompt, where, system, list(FILE_RULES), ["Read", "Write", "Edit"],
                                   resume=session)
                raise_if_fatal(run)
                costs.append(cost_of(run, self.cli.model, spent))
                session, spent = run.session or session, run.total_cost
                problem = _read_plan(where / "curriculum.toml", run)
                if isinstance(problem, tuple):
                    return ArchitectResult(curriculum=problem[0], cost=_sum(costs),
                                           notes=run.result_text.strip()[:500])
                if attempt == self.cli.max_invalid:
                    break
                prompt = ("`curriculum.toml` is not valid yet; fix it and write it again:\n"
                          f"{problem}")
        err = AgentError(f"{NAME} architect: no valid curriculum after {self.cli.max_invalid + 1} "
                         f"tries; the last problem: {' | '.join(problem.splitlines())}")
        err.cost = _sum(costs)  # type: ignore[attr-defined]
        raise err


def _read_plan(path: Path, run: ClaudeRun):
    """(curriculum,) when the file is valid, else the problem text for the model."""
    if run.timed_out:
        return "the CLI timed out"
    if not path.is_file():
        return f"no curriculum.toml was written ({run.message() if run.is_error else 'no file'})"
    try:
        return (curriculum_io.loads(path.read_text()),)
    except curriculum_io.CurriculumError as exc:
        return str(exc)


def _sum(costs: list[AgentCost]) -> AgentCost:
    first = costs[0]
    return first.model_copy(update={
        "dollars": sum(c.dollars for c in costs), "turns": sum(c.turns for c in costs),
        "input_tokens": sum(c.input_tokens for c in costs),
        "output_tokens": sum(c.output_tokens for c in costs), "session": costs[-1].session})


LOGIN_FIX = "log in with `claude` (then /login), or set ANTHROPIC_API_KEY"


def check_login(settings: Any, probe: bool = True, **kw: Any) -> str:
    """Whether the CLI can call the model, before a run dir exists: the CLI's own
    ``claude auth status`` (local, well under a second); a CLI too old for it gets one
    one-turn call instead (``probe``). Returns how it is logged in; AgentError (one line)
    when it is not."""
    cli = _Cli(settings, dict(kw))
    try:
        proc = subprocess.run([str(cli.binary), "auth", "status", "--json"], capture_output=True,
                              text=True, timeout=60, env=cli.env, stdin=subprocess.DEVNULL)
        status = json.loads(proc.stdout)
    except (OSError, subprocess.TimeoutExpired, ValueError):
        status = None
    if isinstance(status, dict) and "loggedIn" in status:
        if not status["loggedIn"]:
            raise AgentError(f"--agent {NAME}: the claude CLI is not logged in (`claude auth "
                             f"status`: auth method {status.get('authMethod', 'none')}); {LOGIN_FIX}")
        return str(status.get("authMethod") or "logged in")
    return _probe_call(cli) if probe else "unknown: this CLI has no `claude auth status`"


def _probe_call(cli: _Cli) -> str:
    """One one-turn call with no tools: the cheapest request that proves the login."""
    with tempfile.TemporaryDirectory(prefix="fk-login-") as tmp:
        run = run_cli([str(cli.binary), "-p", "--output-format", "stream-json", "--verbose",
                       "--max-turns", "1", "--tools", "", "--setting-sources", "",
                       *(["--model", cli.model] if cli.model else [])],
                      "Reply with the word OK.", Path(tmp), cli.env, 120.0)
    if run.api_status in (401, 403) or (run.is_error and "login" in run.message().lower()):
        raise AgentError(f"--agent {NAME}: the claude CLI is not logged in ({run.message()}); "
                         f"{LOGIN_FIX}")
    raise_if_fatal(run)
    if run.timed_out:
        raise AgentError(f"--agent {NAME}: the claude CLI did not answer within 120 s")
    return "checked with one call"


def make_coder(settings: Any, **kw: Any) -> ClaudeCodeCoder:
    """Coder. Options: model, max_turns (40), timeout_s (1800), permission_mode ('dontAsk'),
    max_retries (CLI API retries, 6), env (extra child environment, e.g. for tests)."""
    return ClaudeCodeCoder(_Cli(settings, kw))


def make_architect(settings: Any, **kw: Any) -> ClaudeCodeArchitect:
    """Architect; same options as :func:`make_coder` plus max_invalid (3)."""
    return ClaudeCodeArchitect(_Cli(settings, kw))
