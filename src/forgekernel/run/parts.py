"""What the run engine is handed and what it hands back: the bundle of concrete parts
(:class:`Seams`), its progress events, its outcome and its error.

The shapes of the parts are the protocols of :mod:`forgekernel.protocols`; the CLI picks
the concrete judge, runner, agents, profiler and knowledge base and hands them over in
:class:`Seams`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from forgekernel.errors import ForgeError
from forgekernel.protocols import Architect, Coder, Judge, Prescriber, Profiler, Runner
from forgekernel.run import rundir


class EngineError(ForgeError, RuntimeError):
    """The run cannot go on (integrity check failed, run dir busy, no plan)."""


ProgressKind = Literal["session", "plan", "propose", "judged", "gate", "note", "stop", "confirm", "evolve"]
"""What a progress event reports: the engine's steps, and ``evolve`` for the evolve chain's own."""


@dataclass(frozen=True)
class ProgressEvent:
    """What the engine (and `forge evolve`) reports as it goes."""

    kind: ProgressKind
    message: str
    data: dict[str, Any] = field(default_factory=dict)


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

    coder: Coder
    architect: Architect
    judge: Judge
    runner: Runner
    profiler: Profiler | None = None
    prescriber: Prescriber | None = None
    hasher: Callable[[Path], str] = rundir.content_hash
    confirm_judge: Judge | None = None
    check_command: tuple[str, ...] = ()
    profile_command: tuple[str, ...] = ()
    """What the coder may run to time and profile its kernel (empty: no such tool)."""
