"""The judge on the H200: correct kernels (every workload, timing), every cheating fixture
(the GPU-only ones included) through the `local` delivery, and the judge's overhead.

    source scripts/gpu_env.sh && python3 benchmarks/gpu_judge.py --out $OUT --commit SHA

Writes OUT/judge_gpu.json (device, date, versions, commit, one entry per verdict) after
every step, so a run cut short keeps what it finished; stops starting new steps when
--budget-s is nearly spent; each verdict is bounded by --verdict-timeout-s (a hung verdict is
a TIMEOUT and the next step runs). The first step times the GPU gate alone, in this process
(forgekernel.judge.gate: a spin kernel opened from the host), so a broken gate shows apart
from the judge. Prints one line per step as it ends and a short table last.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KERNELS = REPO / "tests" / "fixtures" / "kernels"
TASKS = sorted((p.name for p in (REPO / "tasks").iterdir() if (p / "task.toml").is_file()),
               key=len, reverse=True)


def meta(commit: str) -> dict:
    import torch
    import triton

    return {"device": torch.cuda.get_device_name(0), "date": datetime.date.today().isoformat(),
            "versions": {"torch": torch.__version__, "triton": triton.__version__,
                         "python": sys.version.split()[0], "cuda": torch.version.cuda},
            "commit": commit}


def gate_smoke(limit_s: float = 20.0) -> dict:
    """Open the gate on a batch of 50 small calls, three times; the host's wait per batch."""
    import torch

    from forgekernel.judge import gate

    words = gate.HostWords()
    device = gate.DeviceGate(words, limit_s=limit_s)
    x = torch.randn(4096, 4096, device="cuda")
    x.mul_(1.0)
    torch.cuda.synchronize()
    rows = []
    for batch in (1, 2, 3):
        start = time.perf_counter()
        device.wait(batch)
        for _ in range(50):
            x.mul_(1.0)
        device.signal(batch)
        enqueue_ms = (time.perf_counter() - start) * 1e3
        reading = gate.open_and_time(words, batch, limit_s + 10)
        torch.cuda.synchronize()
        rows.append({"batch": batch, "enqueue_ms": round(enqueue_ms, 3),
                     "batch_ms": None if reading is None else round(reading.seconds * 1e3, 4),
                     "slack_ms": None if reading is None else round(reading.slack * 1e3, 4),
                     "expired": gate.expired(words, batch)})
    return {"batches": rows}


def judge_one(kind: str, path: Path, **opts) -> dict:
    from forgekernel.delivery import make_runner
    from forgekernel.judge import JudgeOptions, judge
    from forgekernel.task import load_task

    task_name = next(t for t in TASKS if path.name.startswith(t + "_"))
    task = load_task(REPO / "tasks" / task_name)
    start = time.monotonic()
    try:
        v = judge(task, path, make_runner("local"), JudgeOptions(**opts))
    except Exception as exc:  # recorded; the next step still runs
        return {"kind": kind, "fixture": path.name, "error": f"{type(exc).__name__}: {exc}",
                "wall_s": round(time.monotonic() - start, 2)}
    return {"kind": kind, "fixture": path.name, "task": task_name, "options": opts,
            "status": v.status.value, "reason": v.reason, "wall_s": v.wall_s, "speedup": v.speedup,
            "noise_floor": v.noise_floor,
            "workloads": [w.model_dump(exclude_none=True) for w in v.workloads],
            "profile": v.profile, "feedback": v.feedback}


def plan(quick: bool = False, cheats: bool = False) -> list[tuple[str, Path, dict]]:
    rowwise = KERNELS / "correct" / "rmsnorm_rowwise"
    cpu_class = sorted(p for p in (KERNELS / "cheating").iterdir() if "_gpu_" not in p.name)
    if cheats:  # the cheats that are not GPU-specific, judged on the GPU
        return [("cheating", p, {"trials": 2}) for p in cpu_class]
    if quick:  # the verdicts that matter most first: a correct kernel timed, the GPU cheats
        gpu_only = sorted(p for p in (KERNELS / "cheating").iterdir() if "_gpu_" in p.name)
        return [("correct", rowwise, {}), *[("cheating-gpu", p, {"trials": 2}) for p in gpu_only],
                *[("correct", p, {}) for p in sorted((KERNELS / "correct").iterdir()) if p != rowwise]]
    steps: list[tuple[str, Path, dict]] = [("correct", rowwise, {"graphs": True})]
    # what the timing lead changes: the same kernel without and with it, twice each
    steps += [(f"lead-{'on' if on else 'off'}", rowwise, {"lead": on}) for on in (False, True, False, True)]
    gpu_only = sorted(p for p in (KERNELS / "cheating").iterdir() if "_gpu_" in p.name)
    steps += [("cheating-gpu", p, {"trials": 2, "reps": 20}) for p in gpu_only]
    steps += [("correct", p, {}) for p in sorted((KERNELS / "correct").iterdir())
              if p.name != "rmsnorm_rowwise"]
    steps += [("cheating", p, {"trials": 2, "reps": 10}) for p in cpu_class]
    return steps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--commit", default="")
    parser.add_argument("--budget-s", type=float, default=270.0)
    parser.add_argument("--quick", action="store_true", help="No overhead or lead steps; the "
                        "timed correct kernel and the GPU cheats first.")
    parser.add_argument("--cheats", action="store_true", help="Only the cheating fixtures that "
                        "are not GPU-specific (the second half of --quick's coverage).")
    parser.add_argument("--only", default="", help="Comma-separated fixture names: only these "
                        "steps of the chosen plan.")
    parser.add_argument("--shard", default="0/1", help="I/N: every N-th step of the plan from "
                        "the I-th (several processes share the plan).")
    parser.add_argument("--verdict-timeout-s", type=float, default=120.0)
    parser.add_argument("--scan-off", action="store_true", help="Judge with the static source "
                        "scan off: only what the candidate does when it runs decides")
    args = parser.parse_args()
    start = time.monotonic()
    args.out.mkdir(parents=True, exist_ok=True)
    doc = {**meta(args.commit), "overhead": None, "verdicts": [], "skipped": []}

    def save() -> None:
        (args.out / "judge_gpu.json").write_text(json.dumps(doc, indent=1, default=str))

    sys.path.insert(0, str(REPO / "benchmarks"))
    from judge_overhead import measure

    try:
        doc["gate_smoke"] = gate_smoke()
    except Exception as exc:  # recorded; the verdict steps still run
        doc["gate_smoke"] = {"error": f"{type(exc).__name__}: {exc}"}
    print("gate smoke:", json.dumps(doc["gate_smoke"]), flush=True)
    save()
    try:
        doc["overhead"] = None if args.quick or args.cheats else measure("local", runs=2)
    except Exception as exc:  # recorded; the verdict steps still run
        doc["overhead"] = {"error": f"{type(exc).__name__}: {exc}", "first_s": -1.0, "warm_median_s": -1.0}
    save()
    only = {n for n in args.only.split(",") if n}
    index, count = (int(x) for x in args.shard.split("/"))
    for kind, path, opts in plan(args.quick, args.cheats)[index::count]:
        if only and path.name not in only:
            continue
        if time.monotonic() - start > args.budget_s:
            doc["skipped"].append(path.name)
            continue
        if args.scan_off:
            opts = {**opts, "static": False}
        if path.name in ("rmsnorm_visible_shapes_only", "rmsnorm_task_toml_shapes"):
            opts = {**opts, "hidden": True}  # they behave honestly unless hidden workloads are judged
        doc["verdicts"].append(judge_one(kind, path, timeout_s=args.verdict_timeout_s, **opts))
        v = doc["verdicts"][-1]
        print(f"{kind} {path.name}: {v.get('status', 'ERROR')} in {v['wall_s']} s "
              f"{(v.get('reason') or v.get('error') or '')[:120]}", flush=True)
        save()
    save()
    if doc["overhead"]:
        print(f"overhead: first {doc['overhead']['first_s']:.2f} s, warm {doc['overhead']['warm_median_s']:.2f} s")
    for v in doc["verdicts"]:
        speed = f" {v['speedup']:.2f}x" if v.get("speedup") else ""
        timed = [w for w in v.get("workloads", []) if w.get("median_ms")]
        if timed:  # the first timed workload, where host latency showed most
            w = timed[0]
            speed += f" [{w['median_ms']:.4f} vs ref {w['reference_ms']:.4f} ms]"
        print(f"{v['kind']:<13} {v['fixture']:<32} {v.get('status', 'ERROR'):<13} {v['wall_s']:>6}s{speed} "
              f"{(v.get('reason') or v.get('error') or '')[:90]}")
    if doc["skipped"]:
        print("skipped (budget):", ", ".join(doc["skipped"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
