"""Every seam of forgekernel in one place, as :class:`typing.Protocol` classes.

The engine, the judge and the CLI depend on these shapes, never on a concrete class:

- :class:`Coder` and :class:`Architect`: the agents (contexts and results live in
  :mod:`forgekernel.agents.base`);
- :class:`Judge`, :class:`Profiler`, :class:`Prescriber`: callables the engine is handed;
- :class:`Runner`: runs one job in a fresh process (jobs and results live in
  :mod:`forgekernel.delivery.base`, which also builds runners by delivery name);
- :class:`BatchRunner`: the capability of running several jobs together (``run_many``),
  tested with ``isinstance``;
- :class:`Progress`: where the engine reports as it goes.

This module imports nothing of forgekernel at run time (only for type checking), so every
layer may import it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from forgekernel.agents.base import ArchitectContext, ArchitectResult, CoderContext, CoderResult
    from forgekernel.delivery.base import Job, JobResult
    from forgekernel.records import Profile, TaskSpec, Verdict
    from forgekernel.run.parts import ProgressEvent


@runtime_checkable
class Coder(Protocol):
    """Implements one decision row by editing the workspace."""

    name: str

    def implement(self, ctx: CoderContext) -> CoderResult: ...


@runtime_checkable
class Architect(Protocol):
    """Writes or revises the curriculum."""

    name: str

    def plan(self, ctx: ArchitectContext) -> ArchitectResult: ...


@runtime_checkable
class Runner(Protocol):
    """Runs jobs somewhere; ``name`` is the delivery name (``cpu``, ``local``, ...)."""

    name: str
    timing_label: str

    def run(self, job: Job) -> JobResult: ...

    def describe(self) -> dict[str, Any]: ...


@runtime_checkable
class BatchRunner(Protocol):
    """A runner that can also run several jobs together (for example one GPU each):
    results in the order of ``jobs``. Only this method is required, so any runner that has
    it is one."""

    def run_many(self, jobs: list[Job]) -> list[JobResult]: ...


class Judge(Protocol):
    """Judges the candidate in ``candidate_dir`` in a fresh process; always returns a Verdict."""

    def __call__(self, task: TaskSpec, candidate_dir: Path, runner: Runner) -> Verdict: ...


class Profiler(Protocol):
    """Profiles the reference (``kernel_dir`` None) or a candidate: one Profile per workload."""

    def __call__(self, task: TaskSpec, runner: Runner, kernel_dir: Path | None) -> list[Profile]: ...


class Prescriber(Protocol):
    """Knowledge-base prescriptions (short texts) the agents should see for a task."""

    def __call__(self, task: TaskSpec, profiles: Sequence[Profile], role: str) -> Sequence[str]: ...


class Progress(Protocol):
    """Receives what the engine (or evolve) reports as it goes."""

    def __call__(self, event: ProgressEvent, /) -> None: ...
