"""Helpers for engine tests: fresh run dirs, scripts for the scripted agent, a recording coder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from forgekernel.agents.scripted import ScriptedArchitect, ScriptedCoder, load_script
from forgekernel.config import Settings
from forgekernel.run import rundir

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
FIX = TESTS / "fixtures" / "engine"
KERNELS = FIX / "kernels"


def new_run(tmp: Path, name: str = "run", target: float = 1000.0) -> Path:
    """A fresh run dir for tasks/rmsnorm (cpu delivery, scripted agent).

    The target is set out of reach by default: on the CPU a plain-PyTorch candidate runs
    about as fast as the reference, and a test must not depend on which side of 1.2x the
    noise lands.
    """
    root = rundir.create(REPO / "tasks" / "rmsnorm", Settings(delivery="cpu", agent="scripted"), tmp / name)
    rd = rundir.open(root)
    cfg = rd.config.data()
    cfg["target"]["speedup"] = target
    rundir.write_config(rd, cfg)
    return root


def step(kernel: str | None = None, row: str = "", **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"row": row, **extra}
    if kernel:
        out["files"] = {"kernel.py": {"file": str(KERNELS / kernel)}}
    return out


def write_script(path: Path, steps: list[dict[str, Any]], plans: tuple[str, ...] = ("plan_v1.toml",)) -> Path:
    """A JSON script: the given plans (fixture files) and steps."""
    data = {"plan": [{"file": str(FIX / p), "notes": p} for p in plans], "step": steps}
    path.write_text(json.dumps(data, indent=1))
    return path


class RecordingCoder(ScriptedCoder):
    """The scripted coder, keeping every context it was given (to check what the agent saw)."""

    def __init__(self, script_path: Path) -> None:
        super().__init__(load_script(script_path))
        self.seen: list = []

    def implement(self, ctx):
        self.seen.append(ctx)
        return super().implement(ctx)


def agents(script_path: Path) -> tuple[RecordingCoder, ScriptedArchitect]:
    return RecordingCoder(script_path), ScriptedArchitect(load_script(script_path))
