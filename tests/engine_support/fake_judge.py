"""A small but real judge for engine tests: runs the candidate's run() on the task's smoke
inputs in a fresh worker process (through the given Runner) and compares with the reference.

It is no substitute for forgekernel.judge (no hidden workloads, no integrity checks); it
exists so the engine can be tested against a judge whose behaviour the tests control.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from forgekernel.delivery import Job
from forgekernel.records import Status, Verdict, WorkloadResult
from forgekernel.run.rundir import content_hash

TESTS = Path(__file__).resolve().parents[1]


def judge(task, candidate_dir: Path, runner) -> Verdict:
    """Judge ``candidate_dir`` on the smoke workloads in a worker process; always a Verdict."""
    payload = {"task": task.root, "candidate": str(Path(candidate_dir).resolve()),
               "workloads": [w.axes for w in task.smoke_workloads()]}
    env = {"PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
           "PYTHONDONTWRITEBYTECODE": "1"}
    res = runner.run(Job(module="engine_support.fake_judge_worker", payload=payload,
                         timeout_s=120, env=env))
    common = {"candidate": content_hash(candidate_dir), "judge": "fake-judge (tests)",
              "delivery": runner.name}
    if not res.ok:
        return Verdict(status=Status.RUNTIME_ERROR, reason=res.describe_failure(),
                       feedback=res.describe_failure() + "\n" + res.stderr_tail[-2000:], **common)
    return to_verdict(res.result, common)


def judge_in_process(task, candidate_dir: Path, runner) -> Verdict:
    """The same judgement in this process (fast; for plain-PyTorch candidates only)."""
    from engine_support.fake_judge_worker import evaluate

    r = evaluate(task.root, str(candidate_dir), [w.axes for w in task.smoke_workloads()], "cpu-interpret")
    return to_verdict(r, {"candidate": content_hash(candidate_dir), "judge": "fake-judge in-process (tests)",
                          "delivery": runner.name})


def to_verdict(r: dict, common: dict) -> Verdict:
    status = Status(r["status"])
    workloads = tuple(WorkloadResult(**w) for w in r["workloads"])
    speedup = None
    if status is Status.PASSED:
        ups = [w.speedup for w in workloads]
        speedup = math.exp(sum(math.log(u) for u in ups) / len(ups))
    return Verdict(status=status, reason=r.get("reason", ""), workloads=workloads,
                   speedup=speedup, noise_floor=0.05, feedback=r.get("feedback", ""),
                   profile=r.get("profile", {}), **common)


class LuckyFirstTiming:
    """Judges in process; the first timing of each candidate comes out a hundred times too
    fast, as a noisy clock might, and every later one is honest (tests the confirmation)."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def __call__(self, task, candidate_dir: Path, runner) -> Verdict:
        v = judge_in_process(task, candidate_dir, runner)
        if v.speedup is None or v.candidate in self.seen:
            return v
        self.seen.add(v.candidate)
        return v.model_copy(update={"speedup": v.speedup * 100})
