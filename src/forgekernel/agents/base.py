"""What the engine and its agents exchange: contexts, results and the agents' errors.

The :class:`~forgekernel.protocols.Coder` and :class:`~forgekernel.protocols.Architect`
protocols live in :mod:`forgekernel.protocols`.

A Coder implements one decision row by editing ``workspace/kernel.py`` (and files next to
it). An Architect writes or revises the curriculum. Both receive everything they may see
in a context object; neither ever sees hidden workloads, seeds, or the judge's internals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forgekernel.errors import ForgeError
from forgekernel.records import AgentCost, Curriculum, DecisionRow, Milestone, Profile, TaskSpec


class AgentError(ForgeError, RuntimeError):
    """The agent could not do its job (missing CLI or credential, API error, bad output)."""


class NothingToTry(AgentError):
    """The coder has no further candidate for this row (search space or script exhausted).

    The engine closes the row without counting an attempt; a coder that is out of ideas
    for every row ends in a re-plan, and an architect with nothing new ends the run.
    """


@dataclass(frozen=True)
class AttemptNote:
    """A short line of history the agents see: what was tried and how it ended."""

    seq: int
    row: str
    status: str
    speedup: float | None = None
    summary: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    """The coder's machine-readable state for this attempt (:attr:`CoderResult.data`)."""


@dataclass(frozen=True)
class CoderContext:
    """What the coder may see for one row."""

    task: TaskSpec
    reference_source: str
    workspace: Path
    curriculum: Curriculum
    milestone: Milestone
    row: DecisionRow
    profiles: tuple[Profile, ...] = ()
    prescriptions: tuple[str, ...] = ()
    feedback: str = ""
    """The last verdict's feedback for this row (empty on a first try)."""
    history: tuple[AttemptNote, ...] = ()
    best: dict[str, Any] | None = None
    """Summary of the best verdict so far (speedup, per-workload times), if any."""
    retry: int = 0
    check_command: tuple[str, ...] = ()
    """Command the agent may run for a quick compile+correctness check on smoke workloads."""
    profile_command: tuple[str, ...] = ()
    """Command the agent may run to time and profile its kernel at the visible workloads."""
    dollars_left: float | None = None
    """What is left of the run's dollar budget: an agent billed per token stops its row once
    its calls have cost that much (None: no bound)."""
    current_source: str = ""
    """The workspace's ``kernel.py`` when the row starts (the best so far, or the stub)."""
    retry_diff: str = ""
    """On a retry: a unified diff of the last failed attempt at this row against
    ``current_source`` (empty on a first try)."""


@dataclass(frozen=True)
class CoderResult:
    summary: str
    cost: AgentCost
    error: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    """Machine-readable state the coder wants back with its history (the built-in coder's
    template configuration); recorded with the attempt, never shown to a model."""


@dataclass(frozen=True)
class ArchitectContext:
    """What the architect may see when it plans or re-plans."""

    task: TaskSpec
    reference_source: str
    profiles: tuple[Profile, ...] = ()
    prescriptions: tuple[str, ...] = ()
    current: Curriculum | None = None
    reason: str = "initial plan"
    history: tuple[AttemptNote, ...] = ()
    best: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ArchitectResult:
    curriculum: Curriculum
    cost: AgentCost
    notes: str = ""
