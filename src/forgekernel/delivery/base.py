"""Jobs and their results, and which delivery a request means (the runners are built by
:func:`forgekernel.delivery.registry.make_runner`).

A :class:`~forgekernel.protocols.Runner` runs one job in a fresh process and brings back
its result.

A job names a worker module (run as ``python -m <module>``) and a JSON payload. The worker
reads the payload with :func:`forgekernel.delivery.channel.receive` and answers once with
:func:`forgekernel.delivery.channel.reply`; the answer travels on a pipe opened before any
candidate code is imported and is signed with a per-job key, so text a candidate prints, or
a second message it writes, can never pass for the worker's result.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Job(BaseModel):
    """One unit of work for a fresh worker process."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    module: str
    payload: dict[str, Any] = Field(default_factory=dict)
    timeout_s: float = 300.0
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    output_cap_bytes: int = 8 * 1024 * 1024
    """Worker stdout+stderr beyond this is a flood: the process group is killed."""
    sandboxed: bool = False
    """The worker runs candidate code in its own process (the profiler on a candidate): it
    starts inside the sandbox (:mod:`forgekernel.sandbox`), seeing read-only only Python and
    the paths its payload names, writing only its ``cwd``; no network, no credentials. The
    judge's verifier is not sandboxed: it starts its own sandboxed executor."""
    gated: bool = False
    """The worker asks for the GPU itself (``Envelope.device``) after its imports, shared for
    untimed work and exclusive for timing (:mod:`forgekernel.delivery.gpu_gate`); otherwise
    the runner holds the GPU exclusively for the whole job."""


class JobResult(BaseModel):
    """What came back: the worker's answer, or why there is none."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    result: dict[str, Any] | None = None
    exit_code: int | None = None
    signal: int | None = None
    timed_out: bool = False
    flooded: bool = False
    channel_error: str = ""
    """Set when the result channel held something other than one valid signed message."""
    stdout_tail: str = ""
    stderr_tail: str = ""
    wall_s: float = 0.0
    gpu_wait_s: float = 0.0
    """A gated job: seconds its worker waited for the GPU (not counted by its timeout)."""
    gpu_held_s: float = 0.0
    """A gated job: seconds from its first grant to its end."""
    gpu_modes: str = ""
    """A gated job: the modes it was granted, in order (``S`` shared, ``X`` exclusive)."""
    gpu_x_s: float = 0.0
    """A gated job: seconds from its first exclusive grant to its end (timing, compile peers)."""

    @property
    def ok(self) -> bool:
        return self.result is not None and not self.channel_error

    def describe_failure(self) -> str:
        """One line saying why no result came back."""
        if self.timed_out:
            waited = f" (and {self.gpu_wait_s:.1f} s waiting for the GPU)" if self.gpu_wait_s >= 0.05 else ""
            return f"timed out after {self.wall_s - self.gpu_wait_s:.1f} s{waited}; the process group was killed"
        if self.flooded:
            return "flooded stdout/stderr beyond the output cap; the process group was killed"
        if self.channel_error:
            return f"result channel tampered with or broken: {self.channel_error}"
        if self.signal is not None:
            return f"worker killed by signal {self.signal} ({_signal_name(self.signal)})"
        if self.exit_code not in (None, 0):
            return f"worker exited with code {self.exit_code} before answering"
        return "worker exited without answering"


def _signal_name(num: int) -> str:
    import signal

    try:
        return signal.Signals(num).name
    except ValueError:
        return "unknown"


def cpu_only_torch() -> bool:
    """True when the installed torch is a CPU-only build (its version ends in ``+cpu``): no
    GPU can be visible to it, and nothing has to be imported to know that."""
    from importlib import metadata

    try:
        return metadata.version("torch").endswith("+cpu")
    except metadata.PackageNotFoundError:
        return False


def cuda_device_name() -> str | None:
    """Name of the first visible CUDA device, or None; asked of the driver's NVML before
    torch is imported (:mod:`forgekernel.delivery.gpu_probe`)."""
    from forgekernel.delivery.gpu_probe import cuda_device_name as probe

    return probe()


def resolve_delivery(requested: str) -> tuple[str, str]:
    """Pick the delivery for ``requested`` ('auto', 'cpu', 'local', ...) and say why.

    ``auto`` means ``local`` when a CUDA GPU is visible and ``cpu`` otherwise. Asking for
    ``local`` without a GPU is an error (no silent fallback to the CPU).
    """
    from forgekernel.errors import ForgeError

    if requested == "auto":
        gpu = cuda_device_name()
        if gpu:
            return "local", f"auto: CUDA GPU found ({gpu})"
        return "cpu", "auto: no CUDA GPU visible, so the Triton CPU interpreter (cpu-interpret; smoke workloads, correctness only)"
    if requested == "local":
        gpu = cuda_device_name()
        if not gpu:
            raise ForgeError("delivery 'local' needs a CUDA GPU, and torch sees none here "
                             "(use --delivery cpu, or see forge doctor)")
        return "local", f"requested: this machine's GPU ({gpu})"
    if requested == "cpu":
        return "cpu", "requested: Triton CPU interpreter (cpu-interpret; smoke workloads, correctness only)"
    return requested, "requested"
