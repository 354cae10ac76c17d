"""Plain words shared by report.md, `forge status` and `forge run`, from the run's records:
what to do next, what happened to a milestone, and why a correct candidate was or was not a
new best (the noise floor that decided it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from forgekernel import curriculum as C
from forgekernel.records import Attempt, Milestone, Verdict
from forgekernel.run.state import RunState

BUDGETS = ("iteration budget", "time budget", "dollar budget")
GPU_HOWTO = ("for device timings run it where an NVIDIA GPU is: on a GPU machine `forge run {task} "
             "--delivery local`, or from here through ssh: `FK_DELIVERY=ssh REMOTE_HOST=<ssh alias> "
             "REMOTE_WORKDIR=<dir there> forge run {task}` (docs/delivery.md)")


def next_steps(state: RunState, run: Path, task: Path, best_kernel: Path, cpu: bool) -> list[str]:
    """What to do next: one line per way the run ended, and one more for CPU timings."""
    end = state.ends[-1] if state.ends else None
    if end is None:
        return [f"the run has not finished: `forge run {run}` resumes it"]
    if end.target_met:
        out = [f"the kernel is {best_kernel}; `forge judge {task} {best_kernel}` judges it again, "
               f"and `forge evolve {task}` searches on with it as the reference"]
    elif end.reason.startswith(BUDGETS):
        out = [f"the budget is spent: raise it and resume, `forge run {run} --max-iterations N` "
               "(or --max-minutes M, --max-dollars D); everything recorded is kept"]
    elif end.reason.startswith("the agent failed"):
        out = ["the agent kept failing: fix what it reported (`forge doctor` lists agents, CLIs and "
               f"keys), then `forge run {run}` resumes"]
    else:
        agent = state.sessions[-1].architect if state.sessions else "the architect"
        agent = "the built-in agent" if agent == "builtin" else f"the {agent} agent"
        out = [f"nothing left to try: {agent} has no new idea for this task; a new run with an LLM "
               f"agent may have one: `forge run {task} --agent claude-code` (or anthropic, openai; "
               "`forge doctor` shows which can run here)"]
    if state.best is None:
        out.append("no candidate passed the judge: the feedback of the last verdicts is in the "
                   f"report's Attempts table and `forge status {run} --last 10`")
    if cpu:
        out.append("timings came from the Triton CPU interpreter (cpu-interpret): they prove the "
                   "kernel correct, never fast; " + GPU_HOWTO.format(task=task))
    return out


def milestone_history(state: RunState, mid: str) -> list[tuple[int, str]]:
    """What happened to milestone ``mid``, in order, as (attempt seq it came after, words):
    gate passes, reopenings, and its closing."""
    out: list[tuple[int, str]] = []
    status, passed = "", False
    for ev in state.marks:
        if ev.kind == "gate":
            if ev.milestone != mid:
                continue
            out.append((ev.after_seq, f"passed after #{ev.after_seq}"))
            status, passed = "passed", True
            continue
        m = next((x for x in ev.curriculum.get("milestone", []) if x.get("id") == mid), None)
        new = "dropped" if m is None else m.get("status", "open")
        if status == "passed" and new == "open":
            out.append((ev.after_seq, f"reopened in v{ev.version}"))
        elif new in ("abandoned", "dropped") and status not in ("", new):
            out.append((ev.after_seq, f"{'closed' if passed else new} in v{ev.version}"))
        if m is not None or status:
            status = new
    return out


def milestone_label(state: RunState, m: Milestone) -> str:
    """What the report says of a milestone's state, true to what happened to it."""
    history = milestone_history(state, m.id)
    words = [w for _, w in history]
    passes = [w for w in words if w.startswith("passed")]
    if m.status == "passed":
        earlier = f"; earlier: {', '.join(words[:-1])}" if len(words) > 1 else ""
        return f"{m.kind}, {passes[-1] if passes else 'passed'}{', frozen' if m.frozen else ''}{earlier}"
    if m.status == "abandoned" and not passes:
        when = f" {words[-1].split(' ', 1)[1]}" if words else ""
        return f"{m.kind}, abandoned{when}: its rows ran out before its gate passed"
    if not passes:
        return f"{m.kind}, {m.status}"
    reopens = [q for q, w in history if w.startswith("reopened")]
    text = f"{m.kind}: {', '.join(words)}"
    best = state.best
    if m.status == "abandoned":
        text += " without a new pass"
        if best is not None and reopens and best.seq <= reopens[-1]:
            meets = C.evaluate_gate(m, best.verdict).passed
            text += (f"; the best (#{best.seq}) is from before the last reopening"
                     + (" and meets its gate" if meets else ""))
    return text


@dataclass(frozen=True)
class Decision:
    """Why a judged attempt was or was not the new best."""

    text: str
    needed: float | None = None
    """The speedup it had to beat (the best's times 1 + noise floor), when there was a best."""
    noise: float | None = None


def threshold(best: Verdict | None, new: Verdict, default_noise: float) -> tuple[float | None, float]:
    """(speedup to beat, noise floor used) for ``new`` against the best's verdict."""
    noise = new.noise_floor if new.noise_floor is not None else default_noise
    if best is None or best.speedup is None:
        return None, noise
    return best.speedup * (1 + noise), noise


def beats(old: Verdict | None, new: Verdict, default_noise: float) -> bool:
    """Whether ``new`` is a new best against the best's verdict ``old``: faster by more than
    the noise floor (``new``'s own, else ``default_noise``)."""
    if old is None or new.speedup is None or old.speedup is None:
        return old is None or (new.speedup is not None and old.speedup is None)
    needed, _ = threshold(old, new, default_noise)
    return needed is not None and new.speedup > needed


def decisions(state: RunState, default_noise: float) -> dict[int, Decision]:
    """Per judged attempt: new best, or accepted and what it would have needed."""
    out: dict[int, Decision] = {}
    best: Attempt | None = None
    for q, a in sorted(state.attempts.items()):
        v = a.verdict
        if v is None or not v.passed:
            continue
        needed, noise = threshold(best.verdict if best else None, v, default_noise)
        if a.best:
            text = "new best" if needed is None else f"new best (> {needed:.3g}x needed)"
            best = a
        elif needed is not None and v.speedup is not None and v.speedup > needed:
            text = "accepted (a faster candidate of its batch competed)"
        else:
            text = "accepted" if needed is None else f"accepted (needed > {needed:.3g}x)"
        out[q] = Decision(text, needed, noise)
    return out


def judged_note(verdict: Verdict, is_best: bool, needed: float | None, noise: float) -> str:
    """The tail of a `[judged]` progress line: NEW BEST, or accepted and why not the best."""
    if is_best:
        return " NEW BEST"
    if not verdict.passed:
        return ""
    if needed is None or verdict.speedup is None:
        return " accepted"
    return (f" accepted (not a new best: needed > {needed:.3g}x, the best's speedup + "
            f"the noise floor {noise:.1%})")
