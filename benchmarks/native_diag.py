"""Where a native (CUDA C++ or CuTe DSL) rmsnorm candidate spends its time outside the judge.

Renders the built-in ``rownorm_cute`` (and ``rownorm_cuda`` for comparison) for tasks/rmsnorm
and runs each in a plain child process, step by step, each step timed: the DSL's import, the
module's import, the first call (its compile), a call at another shape, 50 calls, one call
under the profiler the judge's executor wraps every native correctness call in
(``forgekernel.profile.launches._profiler``), then 10 calls each under a fresh profiler. A
watchdog prints every thread's stack if a step hangs. Then ``forge judge`` on the same file,
its own timeout 30 s inside the script's (a hung call then ends as TIMEOUT naming the
workload, with what the executor printed).

    source scripts/gpu_env.sh    # on the GPU machine, with the CuTe wheels installed
    python3 benchmarks/native_diag.py --out $OUT/native --commit SHA [--judge-timeout 300]

Writes OUT/native_diag.json (device, date, versions, commit, the steps and the verdicts).
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO / "src"))

CHILD = r"""
import faulthandler, json, sys, time
faulthandler.dump_traceback_later(float(sys.argv[2]), exit=True)
steps = []
def step(name, fn):
    start = time.perf_counter()
    out = fn()
    steps.append({"step": name, "s": round(time.perf_counter() - start, 4)})
    print(json.dumps(steps[-1]), flush=True)
    return out
import torch
if sys.argv[3] == "cute-dsl":
    step("import cutlass", lambda: __import__("cutlass.cute"))
from forgekernel.task import load_module
mod = step("import kernel.py", lambda: load_module(__import__("pathlib").Path(sys.argv[1]), name="cand"))
x = torch.randn(16, 256, device="cuda", dtype=torch.bfloat16)
w = torch.randn(256, device="cuda", dtype=torch.bfloat16)
def call(a, b, n=1):
    for _ in range(n):
        mod.rmsnorm(a, b)
    torch.cuda.synchronize()
step("first call 16x256 (compile)", lambda: call(x, w))
X = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
W = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
step("first call 4096x4096", lambda: call(X, W))
step("50 calls 4096x4096", lambda: call(X, W, 50))
from forgekernel.profile.launches import _profiler
def profiled():
    with _profiler(cuda=True) as prof:
        call(X, W)
    return sorted({e.name for e in prof.function_events if str(e.device_type).endswith("CUDA")})
names = step("1 call under the profiler (first)", profiled)
step("10 calls, a fresh profiler each", lambda: [profiled() for _ in range(10)])
print(json.dumps({"kernels": names}), flush=True)
"""


def child(kernel: Path, language: str, hang_s: float) -> dict:
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", CHILD, str(kernel), str(hang_s), language],
                          capture_output=True, text=True, timeout=hang_s + 60, cwd=REPO)
    lines = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{")]
    return {"exit": proc.returncode, "wall_s": round(time.monotonic() - start, 1),
            "steps": [x for x in lines if "step" in x],
            "kernels": next((x["kernels"] for x in lines if "kernels" in x), None),
            "stderr_tail": proc.stderr[-4000:]}


def judge(kernel: Path, timeout: float) -> dict:
    start = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, "-m", "forgekernel.cli", "judge", "tasks/rmsnorm", str(kernel),
                               "--delivery", "local", "--json", "--timeout", str(timeout - 30)],
                              capture_output=True, text=True, timeout=timeout, cwd=REPO)
    except subprocess.TimeoutExpired:
        return {"status": None, "reason": f"no verdict within {timeout:.0f} s",
                "wall_s": round(time.monotonic() - start, 1)}
    verdict = json.loads(proc.stdout) if proc.stdout.strip().startswith("{") else {}
    profile = verdict.get("profile") or {}
    return {"status": verdict.get("status"), "speedup": verdict.get("speedup"),
            "reason": (verdict.get("reason") or proc.stderr.strip())[-1500:],
            "feedback": (verdict.get("feedback") or "")[-3000:],
            "wall_s": round(time.monotonic() - start, 1), "phases": profile.get("phases"),
            "spent": profile.get("spent"), "executor_boot": profile.get("executor_boot")}


def main() -> int:
    import torch
    import triton
    from gpu_languages import render

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--commit", default="")
    ap.add_argument("--hang", type=float, default=150, help="seconds before a child's stacks are dumped")
    ap.add_argument("--judge-timeout", type=float, default=300)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    result = {"what": "native rmsnorm candidates step by step, then judged", "commit": args.commit,
              "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
              "device": torch.cuda.get_device_name(0),
              "versions": {"torch": torch.__version__, "triton": triton.__version__,
                           "python": sys.version.split()[0]}, "candidates": []}
    if importlib.util.find_spec("cutlass"):
        import cutlass

        result["versions"]["cutlass_dsl"] = cutlass.__version__
    wanted = {"rownorm_cute_threads256": "cute-dsl", "rownorm_cuda": "cuda"}  # the CUDA one: its
    # verdict is known (benchmarks/results/languages_h200_2026-12-04), its steps compare
    for label, _knobs, d in render(args.out):
        if label not in wanted:
            continue
        row = {"kernel": label, "child": child(d / "kernel.py", wanted[label], args.hang)}
        print(label, json.dumps(row["child"]["steps"]), row["child"]["exit"], flush=True)
        result["candidates"].append(row)  # written now: a judge that hangs past the call keeps it
        (args.out / "native_diag.json").write_text(json.dumps(result, indent=1) + "\n")
        if wanted[label] == "cute-dsl":
            row["judge"] = judge(d / "kernel.py", args.judge_timeout)
            print(label, row["judge"]["status"], row["judge"].get("speedup"), row["judge"]["wall_s"], "s",
                  row["judge"]["reason"][:300], flush=True)
        (args.out / "native_diag.json").write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
