"""The one record that crosses the verifier's boundary: built by the verifier
(``judge/worker.py``) before it signs its reply, read back by :func:`forgekernel.judge.judge`."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from forgekernel.records import Status, WorkloadResult


class WorkerResult(BaseModel):
    """What the verifier (``judge/worker.py``) sends back on its signed channel: either
    ``judge_error`` (it could not start, or the verifier itself ran out of device memory: no
    verdict on the candidate) or a status with its
    reason, details, per-workload results, profile and, when PASSED, the timings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    versions: dict[str, str] = Field(default_factory=dict)
    device: str = ""
    judge_error: str | None = None
    status: Status | None = None
    reason: str = ""
    details: dict[str, Any] = Field(default_factory=dict)
    workloads: tuple[WorkloadResult, ...] = ()
    profile: dict[str, Any] = Field(default_factory=dict)
    noise_floor: float | None = None
    speedup: float | None = None
