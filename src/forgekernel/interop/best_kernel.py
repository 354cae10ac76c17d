"""A run's best kernel as the exporters see it: its source files, its verdict, its task."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from forgekernel.interop.flashinfer_import import InteropError

if TYPE_CHECKING:
    from forgekernel.records import TaskSpec


@dataclass(frozen=True)
class Best:
    task: TaskSpec
    task_dir: Path
    files: dict[str, str]
    """Source path (relative, posix) -> text; kernel.py among them."""
    verdict: dict[str, Any]
    agent: str

    @property
    def candidate(self) -> str:
        return str(self.verdict.get("candidate") or "best")


def load(run_dir: str | Path) -> Best:
    """The best kernel of ``run_dir``; a one-line error when it has none that passed."""
    from forgekernel import candidate
    from forgekernel.run import rundir

    rd = rundir.open(run_dir)
    if not rd.best_kernel.is_file():
        raise InteropError(f"{run_dir}: no best kernel yet (best/kernel.py); run `forge run {run_dir}` first")
    try:
        verdict = json.loads(rd.best_verdict.read_text())
    except (OSError, json.JSONDecodeError):
        raise InteropError(f"{rd.best_verdict}: missing or not JSON; the best kernel has no verdict") from None
    if verdict.get("status") != "PASSED":
        raise InteropError(f"{run_dir}: the best kernel's verdict is {verdict.get('status')}, not "
                           "PASSED; only a correct kernel is exported")
    files = {rel.as_posix(): (rd.best / rel).read_text() for rel in candidate.source_files(rd.best)}
    return Best(task=rd.task(), task_dir=rd.task_dir, files=files, verdict=verdict,
                agent=rd.config.data().get("agent", "forgekernel"))
