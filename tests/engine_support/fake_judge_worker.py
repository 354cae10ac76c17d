"""Worker of the test judge: `python -m engine_support.fake_judge_worker`."""

from __future__ import annotations

import statistics
import time
import traceback
from pathlib import Path

from forgekernel.delivery.channel import receive


def _inputs(task, axes, seed):
    import torch

    from forgekernel.task import shape_of

    gen = torch.Generator().manual_seed(seed)
    out = []
    for spec in task.inputs.values():
        t = torch.randn(shape_of(spec, axes), generator=gen) * spec.dist.std + spec.dist.mean
        out.append(t.to(getattr(torch, spec.dtype)))
    return out


def _time(fn, args, n=3):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn(*args)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), max(times) - min(times)


def _check(task, ref, cand, axes):
    import torch

    args = _inputs(task, axes, seed=1234)
    expect = ref.run(*[a.clone() for a in args])
    got = cand.run(*[a.clone() for a in args])
    if not isinstance(got, torch.Tensor) or got.shape != expect.shape:
        return "WRONG_SHAPE", f"expected shape {tuple(expect.shape)}, got {getattr(got, 'shape', type(got))}"
    if got.dtype != expect.dtype:
        return "WRONG_DTYPE", f"expected {expect.dtype}, got {got.dtype}"
    err = (got.float() - expect.float()).abs().max().item()
    if not torch.allclose(got.float(), expect.float(), rtol=2e-2, atol=2e-2):
        return "WRONG_VALUES", f"max abs error {err:.3g} at {axes}"
    return "PASSED", f"{err}"


def evaluate(task_root: str, candidate: str, workloads: list[dict], timing_label: str) -> dict:
    """The verdict data for one candidate (the candidate's own failures become data)."""
    from forgekernel.task import load_module, load_task

    task = load_task(task_root, check_reference=False)
    ref = load_module(Path(task.root) / "reference.py")
    try:
        cand = load_module(Path(candidate) / "kernel.py")
    except Exception as exc:  # the candidate's import failure is the verdict
        return {"status": "COMPILE_ERROR", "reason": f"{type(exc).__name__}: {exc}",
                "feedback": traceback.format_exc(limit=3), "workloads": []}
    results = []
    for axes in workloads:
        try:
            status, detail = _check(task, ref, cand, axes)
        except Exception as exc:  # the candidate's crash is the verdict
            return {"status": "RUNTIME_ERROR", "reason": f"{type(exc).__name__}: {exc}",
                    "feedback": traceback.format_exc(limit=3), "workloads": []}
        if status != "PASSED":
            return {"status": status, "reason": detail, "feedback": detail, "workloads": [{"axes": axes}]}
        args = _inputs(task, axes, seed=99)
        cand.run(*args)  # warm-up (Triton's first call compiles/parses)
        ref_ms, _ = _time(ref.run, args)
        ms, spread = _time(cand.run, args)
        results.append({"axes": axes, "max_abs_err": float(detail), "median_ms": ms,
                        "spread_ms": spread, "reference_ms": ref_ms, "speedup": ref_ms / ms,
                        "timing_label": timing_label})
    return {"status": "PASSED", "workloads": results, "profile": {"launches": 1}}


def main() -> None:
    env = receive()
    p = env.payload
    env.reply(evaluate(p["task"], p["candidate"], p["workloads"], env.timing_label))


if __name__ == "__main__":
    main()
