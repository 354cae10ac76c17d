"""Shared pieces of the LLM-agent tests: a real task, a workspace and contexts built from them."""

from __future__ import annotations

import sys
from pathlib import Path

from forgekernel import curriculum
from forgekernel.agents.base import ArchitectContext, AttemptNote, CoderContext
from forgekernel.config import Settings
from forgekernel.records import Profile, Workload
from forgekernel.task import load_task

REPO = Path(__file__).resolve().parents[1]

START_KERNEL = "def run(x, weight):\n    return x  # TODO\n"

PLAN = """\
version = 1
reason = "test plan"

[[milestone]]
id = "M0"
kind = "architecture"
title = "one fused pass per row"

[[milestone.row]]
id = "M0.1"
decision = "one program per row, fp32 accumulation"
lever = "9 launches -> 1"
predict = "speedup >= 5"

[[milestone.row]]
id = "M0.2"
decision = "two rows per program"

[milestone.gate]
performance = "speedup >= 3"
mechanism = ["launches == 1"]
"""

CHECK_SCRIPT = "import sys; sys.path.insert(0, {!r}); import kernel; print('check sees', kernel.run(6, 7))"
"""A stand-in check command: imports the workspace's kernel.py and calls it."""

HIDDEN = Workload(axes={"M": 3, "N": 777}, hidden=True)


def task(hidden: bool = False):
    spec = load_task(REPO / "tasks" / "rmsnorm")
    if hidden:
        spec = spec.model_copy(update={"workloads": (*spec.workloads, HIDDEN)})
    return spec


def workspace(tmp: Path) -> Path:
    ws = tmp / "workspace"
    ws.mkdir()
    (ws / "kernel.py").write_text(START_KERNEL)
    return ws


def coder_ctx(ws: Path, row: str = "M0.1", check: bool = True, **kw) -> CoderContext:
    spec = kw.pop("task", None) or task()
    cur = curriculum.loads(PLAN)
    m = cur.milestones[0]
    r = next(x for x in m.rows if x.id == row)
    return CoderContext(
        task=spec, reference_source=(REPO / "tasks" / "rmsnorm" / "reference.py").read_text(),
        workspace=ws, curriculum=cur, milestone=m, row=r,
        profiles=kw.pop("profiles", (Profile(axes={"M": 16, "N": 256},
                                             metrics={"launches": 9, "bytes": 16896}),)),
        prescriptions=("keep the row in registers when N <= 16384",),
        feedback=kw.pop("feedback", ""),
        history=(AttemptNote(seq=1, row="M0.1", status="WRONG_VALUES", summary="forgot eps"),),
        best=None, check_command=kw.pop("check_command", (sys.executable, "-c", CHECK_SCRIPT.format(str(ws))) if check else ()),
        **kw)


def architect_ctx(**kw) -> ArchitectContext:
    return ArchitectContext(task=kw.pop("task", None) or task(),
                            reference_source=(REPO / "tasks" / "rmsnorm" / "reference.py").read_text(),
                            prescriptions=("one pass per row",), **kw)


def settings(**kw) -> Settings:
    return Settings(**kw)
