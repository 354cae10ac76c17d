"""Prompts for the LLM agents, rendered from versioned templates in ``forgekernel/prompts``.

Templates are Markdown with ``string.Template`` placeholders (``$name``). Everything an
agent sees comes from its context object, filtered once more here: workloads marked
``hidden`` and profiles at hidden shapes are dropped, and no seed is ever rendered.
"""

from __future__ import annotations

import importlib.resources
import string
from collections.abc import Iterable, Sequence
from typing import Any

from forgekernel import curriculum as curriculum_io
from forgekernel.agents.base import ArchitectContext, AttemptNote, CoderContext
from forgekernel.records import Curriculum, DecisionRow, Milestone, Profile, TaskSpec

PROMPT_VERSION = "v1"
HISTORY_LINES = 8
"""Attempts shown in a prompt (the most recent)."""

EXAMPLE_CURRICULUM = """\
version = 1
reason = "initial plan"

[[milestone]]
id = "M0"
kind = "architecture"
title = "one fused pass per row"

[[milestone.row]]
id = "M0.1"
decision = "one program per row, the whole row in registers, fp32 accumulation"
lever = "9 launches -> 1; every element read once and written once"
predict = "speedup >= 5; launches == 1"

[milestone.gate]
correct = true
performance = "speedup >= 3"
mechanism = ["launches == 1", "spills == 0"]

[[milestone]]
id = "M1"
kind = "tuning"
title = "block size and warps for the large rows"

[[milestone.row]]
id = "M1.1"
decision = "num_warps scaled with the row length; 2 rows per program for short rows"
lever = "occupancy at short rows"
predict = "min_speedup >= 2"

[milestone.gate]
correct = true
performance = "speedup >= 4"
mechanism = ["sol_pct >= 70"]
"""


def template(name: str) -> str:
    """The text of ``prompts/<name>.md`` shipped with the package."""
    res = importlib.resources.files("forgekernel").joinpath("prompts", f"{name}.md")
    return res.read_text(encoding="utf-8")


def render(name: str, **values: Any) -> str:
    """Fill a template; a placeholder without a value is a KeyError (templates are ours)."""
    return string.Template(template(name)).substitute({k: str(v) for k, v in values.items()})


# ---------------------------------------------------------------- sections


def visible_workloads(task: TaskSpec):
    return tuple(w for w in task.workloads if not w.hidden)


def task_section(task: TaskSpec) -> str:
    lines = [f"Language: {task.language}; target GPUs: {task.arch}; op family: {task.family}.",
             "", "Axes:"]
    lines += [f"- {k}: {a.description or '(no description)'}"
              + (f" (fixed at {a.min})" if a.max is not None and a.max == a.min else "")
              for k, a in task.axes.items()]
    lines += ["", "Inputs (in call order):"]
    for name, spec in task.inputs.items():
        shape = ", ".join(str(s) for s in spec.shape)
        values = spec.dist.note if spec.dist.kind == "custom" else spec.dist.kind
        lines.append(f"- {name}: {spec.dtype}[{shape}], values {values}")
    if task.format == "kernelbench":
        lines += ["", "KernelBench task: the axes are module constants of the reference; each "
                  "workload sets them, then builds Model(*get_init_inputs()) and calls get_inputs(). "
                  f"Module mode: {task.judge.module_mode}."
                  + (" float32 matmuls/convolutions may use TF32." if task.judge.tf32 else "")]
    lines += ["", "Workloads you may see (smoke = small, also run on the CPU interpreter):"]
    for w in visible_workloads(task):
        lines.append(f"- {w.label()}{' (smoke)' if w.smoke else ''}")
    if task.policy.forbid:
        lines += ["", f"Forbidden calls: {', '.join(task.policy.forbid)}"]
    return "\n".join(lines)


def profile_section(task: TaskSpec, profiles: Sequence[Profile]) -> str:
    hidden = [w.axes for w in task.workloads if w.hidden]
    shown = [p for p in profiles if p.axes not in hidden]
    if not shown:
        return "(no profile yet)"
    out = []
    for p in shown:
        label = " x ".join(f"{k}={v}" for k, v in p.axes.items())
        metrics = ", ".join(f"{k}={_fmt(v)}" for k, v in sorted(p.metrics.items()))
        out.append(f"- {label}: {metrics or '(no metrics)'}")
        if p.kernels:
            ks = "; ".join(f"{k.name} x{k.count}" + (f" {k.share:.0%}" if k.share is not None else "")
                           for k in p.kernels[:6])
            out.append(f"  kernels: {ks}")
    return "\n".join(out)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def gate_lines(m: Milestone) -> str:
    g = m.gate
    lines = [f"- correct: {str(g.correct).lower()}"]
    if g.performance:
        lines.append(f"- performance: {g.performance}")
    lines += [f"- mechanism: {line}" for line in g.mechanism]
    return "\n".join(lines)


def row_section(m: Milestone, row: DecisionRow) -> str:
    lines = [f"## Milestone {m.id} ({m.kind}): {m.title or '(untitled)'}", "",
             "Gate that closes it:", gate_lines(m), "",
             f"## Decision row {row.id}", "", f"Decision: {row.decision}"]
    if row.lever:
        lines.append(f"Lever: {row.lever}")
    if row.predict:
        lines.append(f"Prediction: {row.predict}")
    if row.params:
        lines.append("Parameters: " + ", ".join(f"{k}={v}" for k, v in sorted(row.params.items())))
    others = [r for r in m.rows if r.id != row.id]
    if others:
        lines += ["", "Other rows of this milestone:"]
        lines += [f"- {r.id} [{r.status}]: {r.decision}" for r in others]
    return "\n".join(lines)


def history_section(history: Iterable[AttemptNote]) -> str:
    notes = list(history)[-HISTORY_LINES:]
    if not notes:
        return "(none yet)"
    out = []
    for n in notes:
        speed = f", {n.speedup:.2f}x the reference" if n.speedup is not None else ""
        out.append(f"- #{n.seq} row {n.row}: {n.status}{speed}" + (f" -- {n.summary}" if n.summary else ""))
    return "\n".join(out)


def best_section(best: dict[str, Any] | None) -> str:
    if not best:
        return "(no correct kernel yet)"
    return "\n".join(f"- {k}: {_fmt(v)}" for k, v in best.items())


def bullets(items: Sequence[str], empty: str) -> str:
    return "\n".join(f"- {s}" for s in items) if items else empty


# ---------------------------------------------------------------- prompts


def entry_rule(task: TaskSpec) -> str:
    """What kernel.py must define: run(*inputs), or (KernelBench) ModelNew like Model."""
    if task.format == "kernelbench":
        mode = "training" if task.judge.module_mode == "train" else "eval"
        return ("it must define `class ModelNew(torch.nn.Module)` whose constructor takes the same "
                "arguments as the reference's `Model` (the judge builds both from "
                "`get_init_inputs()` under one seed, so create parameters in the same order and way "
                f"as Model), and whose `forward` takes what `get_inputs()` returns; both run in {mode} "
                "mode. It returns the same outputs (shapes, dtypes, values within tolerance).")
    return ("it must define `run(*inputs)` with the reference's signature and return the same "
            "outputs (shapes, dtypes, values within tolerance).")


def judge_shapes(task: TaskSpec) -> str:
    """What the judge checks correctness on; hidden odd shapes only when the task has them."""
    if task.judge.hidden and task.axes and any(
            a.max is None or a.max > a.min for a in task.axes.values()):
        return "correctness on more shapes than you are shown (odd sizes included)"
    return "correctness on the workloads you are shown"


def coder_system(task: TaskSpec, tools_note: str) -> str:
    forbid = ", ".join(task.policy.forbid) or "(none listed; still write your own kernels)"
    return render(f"system_{PROMPT_VERSION}", language=task.language, arch=task.arch,
                  forbid=forbid, tools_note=tools_note, entry_rule=entry_rule(task),
                  judge_shapes=judge_shapes(task))


def coder_prompt(ctx: CoderContext, instructions: str, brief: bool = False) -> str:
    """The user message for one row; ``brief`` leaves out what a resumed session has seen."""
    values = dict(row_section=row_section(ctx.milestone, ctx.row), best=best_section(ctx.best),
                  history=history_section(ctx.history),
                  feedback=ctx.feedback.strip() or "(first attempt at this row)",
                  instructions=instructions)
    if brief:
        return render(f"coder_next_{PROMPT_VERSION}", **values)
    return render(f"coder_{PROMPT_VERSION}", task_name=ctx.task.name,
                  task_description=ctx.task.description, task_section=task_section(ctx.task),
                  reference_source=ctx.reference_source.rstrip(),
                  profile_section=profile_section(ctx.task, ctx.profiles),
                  prescriptions=bullets(ctx.prescriptions, "(none for this task)"), **values)


def coder_instructions(ctx: CoderContext, check_note: str, finish_note: str) -> str:
    lines = [f"Implement decision row {ctx.row.id} in `kernel.py` (paths are relative to the workspace)."]
    if ctx.retry:
        lines.append(f"This is retry {ctx.retry} of this row: fix what the feedback above reports.")
    if check_note:
        lines.append(check_note)
    lines.append(finish_note)
    return "\n".join(lines)


def metric_names() -> str:
    from forgekernel.profile import METRICS

    verdict = getattr(curriculum_io, "VERDICT_METRICS", ("correct", "speedup"))
    workload = getattr(curriculum_io, "WORKLOAD_METRICS", ())
    return ", ".join(dict.fromkeys((*verdict, *workload, *METRICS)))


def architect_system(task: TaskSpec, tools_note: str) -> str:
    shapes = ("A judge checks candidates on shapes you are not shown; plan kernels that work for "
              "any shape allowed by the axes." if judge_shapes(task).startswith("correctness on more")
              else "A judge checks candidates on the workloads listed; plan kernels that are "
              "correct at each of them.")
    if task.format == "kernelbench":
        shapes += (" The kernel file defines `ModelNew` (same constructor arguments as the "
                   "reference's `Model`), not `run(*inputs)`.")
    return render(f"architect_system_{PROMPT_VERSION}", metric_names=metric_names(),
                  target_speedup=task.target.speedup, language=task.language, arch=task.arch,
                  tools_note=tools_note, judge_shapes=shapes)


def architect_prompt(ctx: ArchitectContext, instructions: str) -> str:
    current = _current(ctx.current)
    return render(f"architect_{PROMPT_VERSION}", task_name=ctx.task.name,
                  task_description=ctx.task.description, task_section=task_section(ctx.task),
                  reference_source=ctx.reference_source.rstrip(),
                  profile_section=profile_section(ctx.task, ctx.profiles),
                  prescriptions=bullets(ctx.prescriptions, "(none for this task)"),
                  reason=ctx.reason or "initial plan", current=current,
                  best=best_section(ctx.best), history=history_section(ctx.history),
                  example=EXAMPLE_CURRICULUM.rstrip(), instructions=instructions)


def _current(cur: Curriculum | None) -> str:
    if cur is None:
        return "(none: write the first plan)"
    return "```toml\n" + curriculum_io.dumps(cur).rstrip() + "\n```"
