"""What a comparison found: one row per peer and workload, the ratios, and where it ran.

Ratios use one figure for every row: the device time on a GPU (``device_ms``), the per-call
wall time under the CPU interpreter (``per_call_ms``, labelled ``cpu-interpret``).

* ``vs_kernel`` = the peer's time / the kernel's time: above 1 the kernel is faster;
* ``of_ceiling`` = the ceiling's time / the peer's time: the fraction of the size-matched
  copy's speed it reaches (for a reduction, of the read-only pass over its inputs).

A ratio is given only between rows whose outputs matched the reference (status ``ok``).
"""

from __future__ import annotations

import datetime
import json
import subprocess
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

STATUSES = ("ok", "wrong", "other semantics", "failed", "not installed")


class Row(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    kind: str
    source: str
    status: str
    detail: str = ""
    max_err: float | None = None
    device_ms: float | None = None
    per_call_ms: float | None = None
    host_us: float | None = None
    n: int = 0
    vs_kernel: float | None = None
    of_ceiling: float | None = None


class WorkloadResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    axes: dict[str, int]
    bytes_in: int = 0
    bytes_out: int = 0
    reduction: bool = False
    rows: list[Row] = Field(default_factory=list)
    note: str = ""

    def label(self) -> str:
        return " x ".join(f"{k}={v}" for k, v in self.axes.items())


class CompareRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task: str
    label: str
    """device (a GPU's clocks) or cpu-interpret."""
    method: str
    basis: str
    """The figure the ratios use: device_ms or per_call_ms."""
    device: str
    delivery: str
    date: str
    commit: str
    versions: dict[str, str]
    kernels: dict[str, str]
    """Kernel row name -> the file it came from."""
    skipped: list[str] = Field(default_factory=list)
    sandbox: str = ""
    workloads: list[WorkloadResult]

    def kernel_ok(self) -> bool:
        """Whether every kernel row matched the reference on every workload reached."""
        return all(r.status == "ok" for w in self.workloads for r in w.rows if r.kind == "kernel")


def _ratios(wl: WorkloadResult, basis: str) -> None:
    def t(row: Row | None) -> float | None:
        return getattr(row, basis) if row is not None and row.status == "ok" else None

    kernel = next((r for r in wl.rows if r.kind == "kernel"), None)
    by_kind = {r.kind: r for r in wl.rows}
    ceiling = by_kind.get("read") if wl.reduction else by_kind.get("copy")
    for row in wl.rows:
        if row.kind in ("copy", "read") or t(row) is None:
            continue
        k, c = t(kernel), t(ceiling)
        row.vs_kernel = t(row) / k if k else None
        row.of_ceiling = c / t(row) if c else None


def build(raw: dict[str, Any], *, task: str, delivery: str, commit: str,
          kernels: dict[str, str], skipped: list[str], sandbox: str) -> CompareRecord:
    """The record from the worker's answer, with the ratios filled in."""
    label = raw["label"]
    basis = "device_ms" if label == "device" else "per_call_ms"
    workloads = [WorkloadResult.model_validate(w) for w in raw["workloads"]]
    for wl in workloads:
        _ratios(wl, basis)
    now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    return CompareRecord(task=task, label=label, method=raw["method"], basis=basis,
                         device=raw["device"], delivery=delivery, date=now, commit=commit,
                         versions=raw["versions"], kernels=kernels, skipped=skipped,
                         sandbox=sandbox, workloads=workloads)


def git_commit(where: Path) -> str:
    """HEAD of the git checkout holding ``where`` ("unknown" outside one)."""
    try:
        out = subprocess.run(["git", "-C", str(where), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"


def write(record: CompareRecord, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record.model_dump(), indent=2) + "\n")


def load(path: Path) -> CompareRecord:
    return CompareRecord.model_validate_json(Path(path).read_text())
