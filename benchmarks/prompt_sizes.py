"""Sizes of the prompts the LLM agents get: characters and estimated tokens (len / 4).

    .venv/bin/python benchmarks/prompt_sizes.py [--out benchmarks/results/prompt_sizes_vN.json]

Two runs are staged from ``tests/fixtures/prompts/`` the way the engine stages them (a run
dir with reference.json and stored candidates, a RunState folded from ledger events, the
contexts built by :mod:`forgekernel.run.agent_views` as ``RunSession`` builds them):

- ``cpu``: delivery cpu, cpu-interpret timing (a verdict and reference profile taken on the
  Triton CPU interpreter);
- ``gpu``: delivery local, device timing (an H200 verdict of the rmsnorm task and its
  reference profile, with PyTorch's long demangled kernel names).

Both have a hidden workload (M=3 x N=777) the prompts must never show. Every prompt is
rendered: the coder's system prompt and first turn, the next turn of a resumed claude-code
session, a retry of a row, the architect's system prompt, initial plan and re-plan.
``tests/test_prompts_render.py`` renders the same scenes (:func:`scenes`).

``benchmarks/results/prompt_sizes_v1.json`` was written by this script's first version
(commit de14cc9, which built the same scenes without the v2 context fields) over the v1
prompts; ``prompt_sizes_v2.json`` by this one.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forgekernel import curriculum as C
from forgekernel.agents import prompting
from forgekernel.agents.base import ArchitectContext, CoderContext
from forgekernel.judge import feedback
from forgekernel.records import (
    AgentCost,
    Attempt,
    AttemptOutcome,
    Status,
    Verdict,
    Workload,
    WorkloadResult,
)
from forgekernel.run import agent_views as views
from forgekernel.run import rundir
from forgekernel.run.ledger import PlanEvent, StartedEvent
from forgekernel.run.state import Limits, RunState
from forgekernel.task import load_task

REPO = Path(__file__).resolve().parents[1]
FIX = REPO / "tests" / "fixtures" / "prompts"

BEST_KERNEL = REPO / "benchmarks" / "results" / "engine_h200_2026-12-03b" / "rmsnorm" / "best" / "kernel.py"
"""The best kernel of the H200 engine run whose verdict is ``verdict_gpu.json``."""


def best_kernel() -> str:
    return BEST_KERNEL.read_text()


def failed_kernel() -> str:
    """The best kernel after a wrong edit (no eps, no rounding before the weight, other warps)."""
    src = best_kernel()
    for old, new in (("/ N + eps)", "/ N)"), ("y = y.to(X.dtype.element_ty).to(tl.float32) * w", "y = y * w"),
                     ("return 4 if block_n <= 1024 else 8 if block_n <= 4096 else 16",
                      "return 2 if block_n <= 512 else 4 if block_n <= 2048 else 8")):
        assert old in src, old
        src = src.replace(old, new)
    return src
TASK_DIR = REPO / "tasks" / "rmsnorm"

HIDDEN = Workload(axes={"M": 3, "N": 777}, hidden=True)
"""A hidden workload: its label (777) and its times (0.125 ms) must never reach a prompt."""
HIDDEN_MS = 0.125
KINDS = ("cpu", "gpu")
DELIVERY = {"cpu": ("cpu", "cpu-interpret"), "gpu": ("local", "device")}
LIMITS = Limits(iterations=40, minutes=90.0, dollars=20.0, target=1.2, max_retries=3,
                stall_after=2, max_replans=3, noise_floor=0.02, batch=1)
PRICE_NOTE = "no price known for model 'my-llama': cost recorded as $0 (tokens recorded)"
FAILED_CID = "f00dfeedf00dfeed"
INSTRUCTIONS = {"coder": "Implement the decision row in `kernel.py`, then call `finish`.",
                "architect": "Write the curriculum and submit it with `submit_curriculum`."}
PROMPTS = ("coder_system", "coder", "coder_next", "coder_retry", "architect_system",
           "architect", "architect_replan")
"""Every rendered prompt, by name (``coder`` is the first turn of a row)."""


@dataclass
class Scene:
    """One staged run: the contexts each agent gets at the points the engine asks it."""

    kind: str
    task: Any
    rd: rundir.RunDir
    state: RunState
    coder_first: CoderContext
    coder_retry: CoderContext
    architect_initial: ArchitectContext
    architect_replan: ArchitectContext
    texts: dict[str, str] = field(default_factory=dict)


def task():
    """The rmsnorm task with a hidden workload added."""
    spec = load_task(TASK_DIR)
    return spec.model_copy(update={"workloads": (*spec.workloads, HIDDEN)})


def _json(name: str) -> Any:
    return json.loads((FIX / name).read_text())


def _reference(kind: str) -> dict[str, Any]:
    """The fixture's reference.json with a floor and a profile at the hidden workload."""
    ref = _json(f"reference_{kind}.json")
    floor = dict(ref["floors"][-1], axes=dict(HIDDEN.axes), floor_ms=HIDDEN_MS / 7)
    prof = dict(ref["profiles"][0], axes=dict(HIDDEN.axes))
    prof["metrics"] = dict(prof["metrics"], median_ms=HIDDEN_MS)
    return {**ref, "floors": [*ref["floors"], floor], "profiles": [*ref["profiles"], prof]}


def _verdict(kind: str) -> Verdict:
    v = Verdict.model_validate(_json(f"verdict_{kind}.json"))
    hidden = WorkloadResult(axes=dict(HIDDEN.axes), hidden=True, passed=True, median_ms=HIDDEN_MS,
                            reference_ms=HIDDEN_MS * 3, speedup=3.0, timing_label=DELIVERY[kind][1])
    return v.model_copy(update={"workloads": (*v.workloads, hidden)})


def _failed_verdict(kind: str, best: Verdict) -> Verdict:
    """WRONG_VALUES at a visible workload, with the judge's own feedback text."""
    shown = [w for w in best.workloads if not w.hidden]
    bad = shown[-1].model_copy(update={"passed": False, "max_rel_err": 0.41, "median_ms": None,
                                       "speedup": None, "sol_pct": None})
    works = (*[w.model_copy(update={"median_ms": None, "speedup": None, "sol_pct": None})
               for w in shown[:-1]], bad,
             WorkloadResult(axes={}, hidden=True, passed=True))
    label = " x ".join(f"{k}={v}" for k, v in bad.axes.items())
    reason = f"values differ from the reference on {label}"
    details = {"kind": "values", "workload": label, "output": 0, "where": [5, 101],
               "expected": 0.8125, "got": 1.2031, "max_rel": 0.41, "max_abs": 0.39, "tol": 0.015}
    return Verdict(status=Status.WRONG_VALUES, reason=reason, candidate=FAILED_CID,
                   delivery=DELIVERY[kind][0], workloads=works,
                   feedback=feedback.compose(Status.WRONG_VALUES, reason, details, works))


def _coder_context(sc_task, rd: rundir.RunDir, state: RunState, ws: Path, row_id: str,
                   prescriptions: tuple[str, ...]) -> CoderContext:
    """As ``Steps._propose`` builds it."""
    m, row = next((m, r) for m in state.curriculum.milestones for r in m.rows if r.id == row_id)
    fb, retry = state.last_feedback(row.id)
    current, diff = views.coder_sources(rd, state, ws, row.id)
    return CoderContext(task=sc_task, reference_source=(TASK_DIR / "reference.py").read_text(),
                        workspace=ws, curriculum=state.curriculum, milestone=m, row=row,
                        profiles=views.reference_profiles(rd), prescriptions=prescriptions,
                        feedback=fb, history=views.history(state) + views.proposed(state),
                        best=views.best_summary(state), retry=retry, current_source=current,
                        retry_diff=diff)


def _architect_context(sc_task, rd: rundir.RunDir, state: RunState, kind: str, reason: str,
                       prescriptions: tuple[str, ...]) -> ArchitectContext:
    """As ``Steps.plan`` builds it (the gate as ``Steps.check_gate`` leaves it)."""
    cur = state.curriculum
    m = C.current_milestone(cur) if cur else None
    gate = C.evaluate_gate(m, state.best.verdict if state.best else None) if m else None
    delivery, timing = DELIVERY[kind]
    return ArchitectContext(task=sc_task, reference_source=(TASK_DIR / "reference.py").read_text(),
                            profiles=views.reference_profiles(rd), prescriptions=prescriptions,
                            current=cur, reason=reason, history=views.history(state),
                            best=views.best_summary(state),
                            extra=views.architect_extra(rd, state, gate, delivery, timing,
                                                                 budget=LIMITS))


def _store(rd: rundir.RunDir, cid: str, source: str) -> None:
    src = rd.candidate_src(cid)
    src.mkdir(parents=True, exist_ok=True)
    (src / "kernel.py").write_text(source)


def scene(kind: str, tmp: Path) -> Scene:
    """Stage the ``kind`` run in ``tmp`` (a fresh directory) and build its contexts.

    Ledger: plan v1; #1 M0.1 PASSED and best (its summary carries a price note); #2 M0.2 an
    agent error (no candidate); #3 M0.2 WRONG_VALUES. The first coder turn is M0.2 after #1
    (the workspace holds the best), the retry M0.2 after #3, the re-plan follows a stall.
    """
    spec = task()
    rd = rundir.RunDir(tmp / "run")
    rd.root.mkdir(parents=True)
    rundir.write_json(rd.reference, _reference(kind))
    best_src, failed_src = best_kernel(), failed_kernel()
    ws = rd.workspace
    ws.mkdir()
    (ws / "kernel.py").write_text(best_src)
    presc = _json("prescriptions.json")
    coder_p, arch_p = tuple(presc["coder"]), tuple(presc["architect"])

    state = RunState(max_retries=LIMITS.max_retries)
    architect_initial = _architect_context(spec, rd, state, kind, "initial plan", arch_p)
    plan = C.loads((FIX / "plan.toml").read_text())
    state.apply(PlanEvent(version=1, reason=plan.reason, after_seq=0, curriculum=C.to_dict(plan),
                          agent=AgentCost(agent="fake")))
    best = _verdict(kind)
    cost = AgentCost(agent="fake", model="my-llama")
    state.apply(StartedEvent(seq=1, milestone="M0", row="M0.1", candidate=best.candidate, agent=cost,
                             summary=f"one program per row, the row in registers; {PRICE_NOTE}"))
    _store(rd, best.candidate, best_src)
    state.apply(Attempt(seq=1, time=state.started[1].time, milestone="M0", row="M0.1",
                        candidate=best.candidate, agent=cost, verdict=best, accepted=True, best=True))
    coder_first = _coder_context(spec, rd, state, ws, "M0.2", coder_p)

    state.apply(Attempt.failed(AttemptOutcome.AGENT_ERROR, "made no edit: the workspace still holds the "
                               f"kernel it was given ({best.candidate}); nothing to judge",
                               seq=2, time=state.started[1].time, milestone="M0", row="M0.2", agent=cost))
    state.apply(StartedEvent(seq=3, milestone="M0", row="M0.2", candidate=FAILED_CID, agent=cost,
                             summary="four rows per program for N <= 1024; " + PRICE_NOTE))
    _store(rd, FAILED_CID, failed_src)
    state.apply(Attempt(seq=3, time=state.started[3].time, milestone="M0", row="M0.2",
                        candidate=FAILED_CID, agent=cost, verdict=_failed_verdict(kind, best)))
    coder_retry = _coder_context(spec, rd, state, ws, "M0.2", coder_p)
    architect_replan = _architect_context(spec, rd, state, kind,
                                          "stall: no new best in 2 attempts", arch_p)
    return Scene(kind, spec, rd, state, coder_first, coder_retry, architect_initial, architect_replan)


def render(sc: Scene) -> dict[str, str]:
    """Every prompt of a scene, by name (:data:`PROMPTS`)."""
    coder = prompting.coder_instructions(sc.coder_first, "", INSTRUCTIONS["coder"])
    retry = prompting.coder_instructions(sc.coder_retry, "", INSTRUCTIONS["coder"])
    sc.texts = {
        "coder_system": prompting.coder_system(sc.task, "Tools: read_file, write_file, finish."),
        "coder": prompting.coder_prompt(sc.coder_first, coder),
        "coder_next": prompting.coder_prompt(sc.coder_first, coder, brief=True),
        "coder_retry": prompting.coder_prompt(sc.coder_retry, retry),
        "architect_system": prompting.architect_system(sc.task, "Tool: submit_curriculum(toml)."),
        "architect": prompting.architect_prompt(sc.architect_initial, INSTRUCTIONS["architect"]),
        "architect_replan": prompting.architect_prompt(sc.architect_replan, INSTRUCTIONS["architect"]),
    }
    return sc.texts


def scenes(tmp: Path) -> dict[str, Scene]:
    """Both scenes, rendered (``Scene.texts``), staged under ``tmp``."""
    out = {}
    for kind in KINDS:
        (tmp / kind).mkdir(parents=True, exist_ok=True)
        out[kind] = scene(kind, tmp / kind)
        render(out[kind])
    return out


def tokens(text: str) -> int:
    """The estimate used for the prompt budget: four characters a token."""
    return round(len(text) / 4)


def sizes() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="fk-prompts-") as tmp:
        staged = scenes(Path(tmp))
    try:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = ""
    return {"prompt_version": prompting.PROMPT_VERSION, "commit": commit,
            "tokens": "estimated as len(text) / 4",
            "prompts": {kind: {name: {"chars": len(text), "tokens": tokens(text)}
                               for name, text in sc.texts.items()} for kind, sc in staged.items()}}


def table(data: dict[str, Any]) -> str:
    head = f"{'prompt':<18}" + "".join(f"{k + ' chars':>12}{k + ' tokens':>12}" for k in KINDS)
    lines = [f"prompts {data['prompt_version']} (commit {data['commit'] or '?'}; tokens = chars / 4)",
             head, "-" * len(head)]
    for name in PROMPTS:
        lines.append(f"{name:<18}" + "".join(f"{data['prompts'][k][name]['chars']:>12}"
                                             f"{data['prompts'][k][name]['tokens']:>12}" for k in KINDS))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="write the sizes as JSON here")
    args = ap.parse_args(argv)
    data = sizes()
    print(table(data))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
