"""How one judgement runs: :class:`JudgeOptions` (caller's choices) and the judge's constants."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field


class JudgeOptions(BaseModel):
    """Caller's choices for one judgement; ``None`` means "use the task's [judge] setting"."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    trials: int | None = Field(None, ge=1, le=50)
    """Fresh-seed trials per workload (default: the task's ``[judge] trials``)."""
    timing: bool = True
    """Time the candidate against the reference (PASSED verdicts only)."""
    hidden: bool | None = None
    """Add hidden odd-shaped workloads derived from the axes (default: the task's setting)."""
    smoke_only: bool = False
    """Only the task's smoke workloads (and hidden ones derived from them). Forced on by the
    ``cpu`` delivery, where the Triton interpreter runs."""
    perf_reference: Path | None = None
    """A kernel dir whose ``run()`` is the performance reference (self-evolution). The
    correctness oracle is always the task's reference, computed in float64."""
    graphs: bool = False
    """Also time the candidate (and the reference) replayed from a CUDA graph; reported
    separately in ``profile['cuda_graph']``. GPU only."""
    timeout_s: float | None = Field(None, gt=0)
    """Hard wall-clock limit of the worker process (default: the task's ``[judge] timeout_s``)."""
    reps: int | None = Field(None, ge=2, le=2000)
    """Timed repetitions per side and workload (default: chosen from a time budget)."""
    static: bool = True
    """Run the static source scan first (fast feedback on banned calls). Off, only what the
    candidate does when it runs decides; no verdict depends on the scan."""
    unsafe_no_sandbox: bool = False
    """Run the candidate's executor without the sandbox (``--unsafe-no-sandbox``): it then
    sees this user's files and network; the verdict says so."""
    library_kernels: bool = False
    """Judge as if the task's ``[policy] library_kernels`` were on (``forge judge
    --library-kernels``): an installed library's Triton kernels count as the candidate's."""
    device_memory_gib: float | None = Field(None, gt=0)
    """Device memory the verifier plans its own copies with (``forge judge --device-memory``;
    default: what the GPU reports free once the reference is calibrated). A workload moving
    over an eighth of it per call keeps the verifier's copies in host memory
    (:mod:`forgekernel.judge.residency`); set it below the card's when other jobs share it."""
    lead: bool = True
    """Keep the stream busy with a calibrated spin while the host enqueues each timed call
    (see :mod:`forgekernel.judge.timing`); off only to measure what the lead changes."""


def check_options(trials: int = 2) -> JudgeOptions:
    """What ``forge check`` runs: visible smoke workloads only, no hidden ones, no timing."""
    return JudgeOptions(trials=trials, timing=False, hidden=False, smoke_only=True)


class Unsandboxed:
    """``judge`` with every judgement's executor outside the sandbox (``--unsafe-no-sandbox``):
    whatever options a caller passes (a sealed performance reference) are kept."""

    def __init__(self, judge) -> None:
        self.judge = judge

    def __call__(self, task, candidate, runner, options: JudgeOptions | None = None):
        opts = (options or JudgeOptions()).model_copy(update={"unsafe_no_sandbox": True})
        return self.judge(task, candidate, runner, options=opts)
