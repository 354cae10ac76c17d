"""The run engine: next row -> propose -> judge -> record -> accept/revert -> gate -> re-plan.

Each turn of the loop asks :func:`forgekernel.run.decisions.decide` (pure: state, limits,
session flags, clock) what comes next and dispatches on the answer; the effects live in
:class:`forgekernel.run.session.RunSession`.

It depends only on the protocols of :mod:`forgekernel.protocols`: the agents
(``Coder``/``Architect``), a ``Judge`` callable, a delivery ``Runner``, and optional
``Profiler`` and ``Prescriber`` callables. The CLI picks the concrete ones. All state lives in the run dir's ledger; see
:mod:`forgekernel.run.ledger` for the two-phase attempt protocol that makes a kill at any
moment safe to resume.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from forgekernel.config import Settings
from forgekernel.protocols import Architect, Coder, Judge, Prescriber, Profiler, Progress, Runner
from forgekernel.run import lockfile, rundir
from forgekernel.run.decisions import Attempt, Confirm, JudgePending, Replan, Stop, decide
from forgekernel.run.ledger import Ledger
from forgekernel.run.parts import EngineError, ProgressEvent, RunOutcome, Seams
from forgekernel.run.session import RunSession
from forgekernel.run.state import Limits, RunState, replay


def run(run_dir: Path, coder: Coder, architect: Architect, judge: Judge, runner: Runner,
        settings: Settings | None = None, *, limits: dict[str, Any] | None = None,
        progress: Progress | None = None, profiler: Profiler | None = None,
        prescriber: Prescriber | None = None, hasher: Callable[[Path], str] | None = None,
        confirm_judge: Judge | None = None, check_command: tuple[str, ...] = (),
        profile_command: tuple[str, ...] = ()) -> RunOutcome:
    """Drive one run dir until the target, the budget or the ideas run out; resumable.

    ``limits`` overrides run.toml (keys of :class:`~forgekernel.run.state.Limits`).
    """
    seams = Seams(coder, architect, judge, runner, profiler, prescriber,
                  hasher or rundir.content_hash, confirm_judge, check_command, profile_command)
    rd = rundir.open(run_dir)
    with _locked(rd):
        s = RunSession(rd, seams, Limits.from_config(rd.config, rd.target, **(limits or {})),
                  progress or (lambda ev: None))
        s.resume(settings)
        while True:
            match decide(s.state, s.limits, s.flags, datetime.now(UTC)):
                case JudgePending():
                    s.judge_waiting()
                    s.check_gate()
                case Confirm(best):
                    s.confirm(best)
                case Replan(why):
                    if not s.plan(why):  # s.flags says why; the next decision stops
                        s.flags.nothing_left = s.flags.nothing_left or "the architect has nothing new to try"
                case Attempt(milestone, row):
                    s.attempt(milestone, row)
                    s.check_gate()
                case Stop(reason):
                    return s.finish(reason)


def _locked(rd: rundir.RunDir) -> contextlib.AbstractContextManager[None]:
    """One `forge run` per run dir; the lock dies with its process (even on SIGKILL)."""
    return lockfile.exclusive(
        rd.lock, EngineError(f"{rd.root}: another `forge run` is using this run dir"),
        lambda exc: EngineError(f"{rd.root}: cannot take the run dir's lock ({exc.strerror or exc}); "
                                "`forge run` needs to write the run dir"))


def load_state(rd: rundir.RunDir) -> RunState:
    """The run's state from its ledger, read-only (a torn last line is ignored)."""
    return replay(Ledger(rd.ledger, rd.ledger_key()).events(), rd.config.engine.max_retries, str(rd.ledger))


__all__ = ["EngineError", "Judge", "Limits", "Prescriber", "Profiler", "ProgressEvent",
           "RunOutcome", "Seams", "load_state", "run"]
