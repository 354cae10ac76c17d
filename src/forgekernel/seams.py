"""The seams of the run engine: protocols, the bundle of concrete parts, progress and outcome.

The engine depends only on what is here; the CLI picks the concrete judge, runner,
agents, profiler and knowledge base and hands them over in :class:`Seams`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from forgekernel import rundir
from forgekernel.delivery import Runner
from forgekernel.errors import ForgeError
from forgekernel.records import Profile, TaskSpec, Verdict


class Judge(Protocol):
    """Judges the candidate in ``candidate_dir`` in a fresh process; always returns a Verdict."""

    def __call__(self, task: TaskSpec, candidate_dir: Path, runner: Runner) -> Verdict: ...


class Profiler(Protocol):
    """Profiles the reference (``kernel_dir`` None) or a candidate: one Profile per workload."""

    def __call__(self, task: TaskSpec, runner: Runner, kernel_dir: Path | None) -> list[Profile]: ...


class Prescriber(Protocol):
    """Knowledge-base prescriptions (short texts) the agents should see for a task."""

    def __call__(self, task: TaskSpec, profiles: Sequence[Profile], role: str) -> Sequence[str]: ...


class EngineError(ForgeError, RuntimeError):
    """The run cannot go on (integrity check failed, run dir busy, no plan)."""


@dataclass(frozen=True)
class ProgressEvent:
    """What the engine reports as it goes; ``kind`` is one of session, plan, propose,
    judged, gate, note, stop, confirm."""

    kind: str
    message: str
    data: dict[str, Any] = field(default_factory=dict)


Progress = Callable[[ProgressEvent], None]


@dataclass(frozen=True)
class RunOutcome:
    """How a `forge run` ended. ``exit_code`` is 0 when the target is met, else 2."""

    run_dir: Path
    reason: str
    target: float
    target_met: bool
    best: str | None
    speedup: float | None
    iterations: int

    @property
    def exit_code(self) -> int:
        return 0 if self.target_met else 2


@dataclass
class Seams:
    """The concrete parts one run uses (picked by the CLI)."""

    coder: Any
    architect: Any
    judge: Judge
    runner: Runner
    profiler: Profiler | None = None
    prescriber: Prescriber | None = None
    hasher: Callable[[Path], str] = rundir.content_hash
    confirm_judge: Judge | None = None
    check_command: tuple[str, ...] = ()
    profile_command: tuple[str, ...] = ()
    """What the coder may run to time and profile its kernel (empty: no such tool)."""
