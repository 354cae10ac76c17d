"""A workload under judgement (:class:`Slot`) and the reference's output specs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from forgekernel.judge import correctness as cx
from forgekernel.records import Workload, WorkloadResult


@dataclass(frozen=True)
class OutSpec:
    """Shape, dtype and device of one reference output (what check_structure compares)."""

    shape: tuple[int, ...]
    dtype: Any
    device: Any
    nbytes: int


@dataclass
class Slot:
    """A workload under judgement and what was found on it."""

    wl: Workload
    label: str
    outputs: list[OutSpec] = field(default_factory=list)
    worst: cx.Check | None = None
    worst_output: int = 0
    passed: bool | None = None
    prints: list[tuple[Any, Any]] = field(default_factory=list)
    staged_bytes: int = 0
    """The staging pool a call needs (its inputs and outputs), known from calibration."""

    def record(self, k: int, check: cx.Check) -> None:
        """Keep the first failing check, else the one closest to its tolerance."""
        if self.worst is not None and not self.worst.ok:
            return
        if self.worst is None or not check.ok or _ratio(check) > _ratio(self.worst):
            self.worst, self.worst_output = check, k

    def result(self) -> WorkloadResult:
        if self.wl.hidden:
            return WorkloadResult(axes={}, hidden=True, passed=self.passed)
        w = self.worst
        where = f"output {self.worst_output} at {w.where}" if w and w.where is not None else None
        return WorkloadResult(axes=dict(self.wl.axes), passed=self.passed,
                              max_abs_err=w.max_abs if w else None, max_rel_err=w.max_rel if w else None,
                              tolerance=w.tol if w else None, where=where)


def _ratio(check: cx.Check) -> float:
    if check.max_rel is None:
        return float("inf")
    return check.max_rel / check.tol if check.tol else check.max_rel
