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

RMSNORM_KERNEL = '''\
"""RMSNorm: one program per row, the row in registers, fp32 statistics."""

import torch
import triton
import triton.language as tl


@triton.jit
def _rms_row(x_ptr, w_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    keep = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=keep, other=0.0).to(tl.float32)
    inv = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    normed = (x * inv).to(out_ptr.dtype.element_ty).to(tl.float32)
    w = tl.load(w_ptr + offs, mask=keep, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * n_cols + offs, (w * normed).to(out_ptr.dtype.element_ty), mask=keep)


def run(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    rows, cols = x.shape
    out = torch.empty_like(x)
    _rms_row[(rows,)](x, weight.contiguous(), out, cols, 1e-6, BLOCK=triton.next_power_of_2(cols))
    return out
'''
"""A correct Triton RMSNorm the scripted models write (benchmarks/gpu_llm_profile.py too)."""

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
