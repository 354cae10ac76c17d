"""A small judge for self-evolution tests (plain-PyTorch candidates, in this process).

It follows forgekernel.judge's rules where the chain depends on them, and nothing more:
correctness against the task's reference computed in float64 (never against the
performance reference); timing interleaved reference / candidate / reference, where the
reference is ``options.perf_reference`` when given, else the task's reference; the noise
floor is the relative difference of the two reference series; timings are labelled
cpu-interpret on the cpu runner. No hidden workloads, no integrity checks: it is no
substitute for the real judge, only fast.
"""

from __future__ import annotations

import math
import statistics
import time
import traceback
from pathlib import Path
from typing import Any

import torch

from forgekernel.records import Status, Verdict, WorkloadResult
from forgekernel.run.rundir import content_hash
from forgekernel.task import load_module, shape_of

ROUNDS = 3
TOL = 3e-2


def _inputs(task: Any, axes: dict[str, int], seed: int) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    out = []
    for spec in task.inputs.values():
        t = torch.randn(shape_of(spec, axes), generator=gen) * spec.dist.std + spec.dist.mean
        out.append(t.to(getattr(torch, spec.dtype)))
    return out


def _ms(fn: Any, args: list[torch.Tensor]) -> float:
    t0 = time.perf_counter()
    fn(*[a.clone() for a in args])
    return (time.perf_counter() - t0) * 1e3


def _workload(task: Any, ref: Any, cand: Any, perf: Any, axes: dict[str, int], label: str) -> dict:
    args = _inputs(task, axes, seed=7)
    oracle = ref.run(*[a.double() for a in args])
    got = cand.run(*[a.clone() for a in args])
    if not isinstance(got, torch.Tensor) or got.shape != oracle.shape:
        raise _Wrong(Status.WRONG_SHAPE, f"expected shape {tuple(oracle.shape)}")
    err = (got.double() - oracle).abs().max().item()
    if not torch.allclose(got.double(), oracle, rtol=TOL, atol=TOL):
        raise _Wrong(Status.WRONG_VALUES, f"max abs error {err:.3g} at {axes}")
    r1, c, r2 = [], [], []
    for _ in range(ROUNDS):
        r1.append(_ms(perf, args))
        c.append(_ms(cand.run, args))
        r2.append(_ms(perf, args))
    ref_ms, ms = statistics.median(r1 + r2), statistics.median(c)
    return {"axes": axes, "passed": True, "max_abs_err": err, "median_ms": ms,
            "spread_ms": max(c) - min(c), "reference_ms": ref_ms, "speedup": ref_ms / ms,
            "timing_label": label, "noise": abs(statistics.median(r1) / statistics.median(r2) - 1.0)}


class _Wrong(Exception):
    def __init__(self, status: Status, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


def judge(task: Any, candidate_dir: Path, runner: Any, options: Any = None) -> Verdict:
    """Judge ``candidate_dir``: always a Verdict (the candidate's failures are its verdict)."""
    candidate_dir = Path(candidate_dir)
    common = {"candidate": content_hash(candidate_dir), "judge": "chain-judge (tests)",
              "delivery": runner.name}
    label = "cpu-interpret" if runner.name == "cpu" else "device"
    ref = load_module(Path(task.root) / "reference.py")
    perf_dir = getattr(options, "perf_reference", None)
    perf = load_module(Path(perf_dir) / "kernel.py").run if perf_dir else ref.run
    try:
        cand = load_module(candidate_dir / "kernel.py")
        rows = [_workload(task, ref, cand, perf, w.axes, label) for w in task.smoke_workloads()]
    except _Wrong as exc:
        return Verdict(status=exc.status, reason=exc.reason, feedback=exc.reason, **common)
    except Exception as exc:  # the candidate's crash is its verdict
        return Verdict(status=Status.RUNTIME_ERROR, reason=f"{type(exc).__name__}: {exc}",
                       feedback=traceback.format_exc(limit=3), **common)
    noise = max(r.pop("noise") for r in rows)
    ups = [r["speedup"] for r in rows]
    return Verdict(status=Status.PASSED, workloads=tuple(WorkloadResult(**r) for r in rows),
                   speedup=math.exp(sum(math.log(u) for u in ups) / len(ups)), noise_floor=noise,
                   profile={"launches": 1}, **common)
