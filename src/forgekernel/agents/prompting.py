"""Prompts for the LLM agents, rendered from versioned templates in ``forgekernel/prompts``.

Templates are Markdown with ``string.Template`` placeholders (``$name``). Everything an
agent sees comes from its context object, filtered once more here: workloads marked
``hidden`` and profiles at hidden shapes are dropped, and no seed is ever rendered.
"""

from __future__ import annotations

import importlib.resources
import math
import string
from collections.abc import Iterable, Sequence
from typing import Any

from forgekernel import curriculum as curriculum_io
from forgekernel.agents.base import ArchitectContext, AttemptNote, CoderContext
from forgekernel.agents.hardware_sheet import hardware_section
from forgekernel.agents.kernel_names import kernels_line
from forgekernel.agents.language_sheet import architect_languages, language_rules
from forgekernel.records import Curriculum, DecisionRow, Milestone, Profile, TaskSpec

PROMPT_VERSION = "v2"
HISTORY_LINES = 8
"""Attempts shown in a prompt (the most recent)."""
BOOKKEEPING = ("no price known",)
"""Starts of summary notes that are the engine's bookkeeping, never shown to an agent."""
JUDGE_INTERNAL = frozenset({"trials", "hidden_workloads", "native_threads", "nondeterministic",
                            "persisting_l2_guard"})
"""Numbers of the judge's own bookkeeping that gate_envs also carries: not offered to plans."""

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
        metrics = ", ".join(f"{k}={_fmt(v)}" for k, v in sorted(p.metrics.items()))
        out.append(f"- {_label(p.axes)}: {metrics or '(no metrics)'}")
        if p.kernels:
            out.append(f"  kernels: {kernels_line(p)}")
    return "\n".join(out)


def _label(axes: dict[str, Any]) -> str:
    return " x ".join(f"{k}={v}" for k, v in axes.items()) or "(no axes)"


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


def clean_summary(text: str) -> str:
    """A summary without the engine's bookkeeping notes (``; ``-separated parts that start
    with one of :data:`BOOKKEEPING`)."""
    parts = [p for p in text.split("; ") if not p.strip().lower().startswith(BOOKKEEPING)]
    return "; ".join(parts).strip()


def history_section(history: Iterable[AttemptNote]) -> str:
    notes = list(history)[-HISTORY_LINES:]
    if not notes:
        return "(none yet)"
    out = []
    for n in notes:
        speed = f", {n.speedup:.3g}x the reference" if n.speedup is not None else ""
        summary = clean_summary(n.summary)
        out.append(f"- #{n.seq} row {n.row}: {n.status}{speed}" + (f" -- {summary}" if summary else ""))
    return "\n".join(out)


def _num(v: Any, spec: str = ".4g", empty: str = "-") -> str:
    return format(v, spec) if isinstance(v, (int, float)) and not isinstance(v, bool) else empty


def best_section(best: dict[str, Any] | None, task: TaskSpec | None = None) -> str:
    """The best verdict as a per-workload table plus its geometric-mean speedup and noise
    floor; never the judge's internals. ``task``: its hidden workloads are left out."""
    if not best:
        return "(no correct kernel yet)"
    hidden = [w.axes for w in task.workloads if w.hidden] if task else []
    rows = [w for w in best.get("workloads") or () if isinstance(w, dict) and w.get("axes") not in hidden]
    seq = f"attempt #{best['seq']}" if best.get("seq") is not None else "an earlier attempt"
    lines = [f"From {seq}" + (f" (row {best['row']})" if best.get("row") else "") + "."]
    if rows:
        lines += ["", "| workload | ms | reference ms | speedup | %SOL | timing |", "|---|---|---|---|---|---|"]
        for w in rows:
            speed = _num(w.get("speedup"), ".3g")
            lines.append(f"| {_label(w.get('axes') or {})} | {_num(w.get('median_ms'))} "
                         f"| {_num(w.get('reference_ms'))} | {speed + 'x' if speed != '-' else speed} "
                         f"| {_num(w.get('sol_pct'), '.1f')} | {w.get('timing') or 'untimed'} |")
        lines.append("")
    speed, noise = best.get("speedup"), best.get("noise_floor")
    summary = f"Geometric-mean speedup: {_num(speed, '.3g')}x" if speed is not None else "No speedup measured"
    if isinstance(noise, (int, float)):
        summary += f"; noise floor {noise:.2%} (a new best must be faster by more than that)"
    if isinstance(best.get("launches"), int):
        summary += f"; {best['launches']} launch{'es' if best['launches'] != 1 else ''} per call"
    lines.append(summary + ".")
    if any(w.get("timing") == "cpu-interpret" for w in rows):
        lines.append("These times come from the Triton CPU interpreter (cpu-interpret): they say "
                     "nothing about speed on the GPU.")
    return "\n".join(lines)


def reset_line(ctx: CoderContext) -> str:
    """Which kernel the workspace was reset to for this row."""
    what = "the best kernel so far" if ctx.best else "the starting stub"
    if ctx.best and ctx.best.get("seq") is not None:
        what += f" (attempt #{ctx.best['seq']})"
    lead = "Your last attempt was discarded; t" if ctx.retry and ctx.feedback.strip() else "T"
    return f"{lead}he workspace was reset to {what}: `kernel.py` holds exactly this:"


def retry_section(ctx: CoderContext) -> str:
    """The last failed attempt's diff under the feedback ('' on a first try)."""
    if not ctx.retry_diff.strip():
        return ""
    return ("\n\n### Your last attempt at this row (diff against the kernel above)\n\n"
            f"```diff\n{ctx.retry_diff.rstrip()}\n```")


# ---------------------------------------------------------------- hardware


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
    return render(f"system_{PROMPT_VERSION}", language_rules=language_rules(task),
                  forbid=forbid, tools_note=tools_note, entry_rule=entry_rule(task),
                  judge_shapes=judge_shapes(task))


def coder_prompt(ctx: CoderContext, instructions: str, brief: bool = False) -> str:
    """The user message for one row; ``brief`` leaves out what a resumed session has seen."""
    values = dict(row_section=row_section(ctx.milestone, ctx.row),
                  best=best_section(ctx.best, ctx.task), history=history_section(ctx.history),
                  feedback=ctx.feedback.strip() or "(first attempt at this row)",
                  retry_diff=retry_section(ctx), reset_line=reset_line(ctx),
                  current_source=ctx.current_source.rstrip() or "# (kernel.py is empty)",
                  instructions=instructions)
    if brief:
        return render(f"coder_next_{PROMPT_VERSION}", **values)
    return render(f"coder_{PROMPT_VERSION}", task_name=ctx.task.name,
                  task_description=ctx.task.description, task_section=task_section(ctx.task),
                  reference_source=ctx.reference_source.rstrip(),
                  profile_section=profile_section(ctx.task, ctx.profiles),
                  hardware=hardware_section(ctx.task.arch),
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
                  target_speedup=task.target.speedup, language=architect_languages(task), arch=task.arch,
                  tools_note=tools_note, judge_shapes=shapes)


def architect_prompt(ctx: ArchitectContext, instructions: str) -> str:
    current = _current(ctx.current)
    best = best_section(ctx.best, ctx.task)
    source = str(ctx.extra.get("best_source") or "").rstrip()
    if ctx.best and source:
        best += f"\n\nIts `kernel.py`:\n\n```python\n{source}\n```"
    return render(f"architect_{PROMPT_VERSION}", task_name=ctx.task.name,
                  task_description=ctx.task.description, task_section=task_section(ctx.task),
                  reference_source=ctx.reference_source.rstrip(),
                  profile_section=profile_section(ctx.task, ctx.profiles),
                  hardware=hardware_section(ctx.task.arch),
                  prescriptions=bullets(ctx.prescriptions, "(none for this task)"),
                  engine=engine_section(ctx), reason=ctx.reason or "initial plan", current=current,
                  best=best, history=history_section(ctx.history),
                  example=example_curriculum(cpu_timing(ctx.extra)), instructions=instructions)


def cpu_timing(extra: dict[str, Any]) -> bool:
    """The run is judged on the CPU interpreter: speed cannot be measured there."""
    return extra.get("timing") == "cpu-interpret" or extra.get("delivery") == "cpu"


CPU_EXAMPLE = {
    'predict = "speedup >= 5; launches == 1"': 'predict = "launches == 1"',
    'predict = "min_speedup >= 2"': 'predict = "correct at every workload, launches == 1"',
    'mechanism = ["launches == 1", "spills == 0"]': 'mechanism = ["launches == 1"]',
    'mechanism = ["sol_pct >= 70"]': 'mechanism = ["launches == 1"]',
}
"""The example curriculum where speed cannot be measured: no performance lines, no gate
on a speedup, %SOL or a metric the interpreter does not give."""


def example_curriculum(cpu: bool) -> str:
    if not cpu:
        return EXAMPLE_CURRICULUM.rstrip()
    text = "\n".join(line for line in EXAMPLE_CURRICULUM.splitlines()
                     if not line.startswith("performance ="))
    for old, new in CPU_EXAMPLE.items():
        text = text.replace(old, new)
    return text.rstrip()


def engine_section(ctx: ArchitectContext) -> str:
    """The engine's facts for this plan (``ctx.extra``): delivery and timing, what is
    measurable, the current gate's lines with their states, the roofline floors and speedup
    bounds of the visible workloads, and the budget left."""
    extra = ctx.extra
    hidden = [w.axes for w in ctx.task.workloads if w.hidden]
    delivery, timing = extra.get("delivery") or "(unknown)", extra.get("timing") or "(unknown)"
    lines = [f"- Delivery: {delivery}; timing: {timing}."]
    if cpu_timing(extra):
        lines.append("- Speed cannot be measured here: kernels run on the Triton CPU interpreter, so "
                     "a speedup or a time is a host-time ratio that says nothing about the GPU (an "
                     "interpreted kernel is far slower than the reference). Performance gates must "
                     "not require speedup >= 1 (or any speedup, %SOL or time): gate on correctness "
                     "and mechanism lines (for example launches == 1).")
    names = [n for n in extra.get("measurable") or () if n not in JUDGE_INTERNAL]
    if names and ctx.best:
        lines.append("- Names with a value for the best kernel now: " + ", ".join(names) + ".")
    gate = extra.get("gate") or []
    if gate:
        which = extra.get("gate_milestone") or "the current milestone"
        lines.append(f"- Gate of {which} against the best kernel:")
        lines += [f"  - [{g.get('state', '?')}] {g.get('line', '')}"
                  + (f" ({g['detail']})" if g.get("detail") else "") for g in gate]
    lines += _bounds_lines(extra, hidden)
    lines.append(_budget_line(extra.get("budget"), ctx))
    profiles = [Profile.model_validate(p) for p in extra.get("best_profiles") or ()
                if isinstance(p, dict)]
    if profiles:
        lines += ["- Profile of the best kernel:", profile_section(ctx.task, profiles)]
    return "\n".join(lines)


def _bounds_lines(extra: dict[str, Any], hidden: list[dict[str, int]]) -> list[str]:
    rows = [b for b in extra.get("bounds") or () if b.get("axes") not in hidden and b.get("floor_ms")]
    if not rows:
        floors = [f for f in extra.get("floors") or () if f.get("axes") not in hidden and f.get("floor_ms")]
        rows = [{"axes": f["axes"], "floor_ms": f["floor_ms"], "floor_bound": f.get("bound")} for f in floors]
    if not rows:
        return []
    out = ["- Roofline per workload (floor: the least time the GPU needs to move the bytes and do "
           "the flops; bound = reference time / floor, the most a kernel can gain there):", "",
           "  | workload | floor ms | bound by | reference ms | speedup bound |", "  |---|---|---|---|---|"]
    for b in rows:
        ref = _num(b.get("reference_ms"))
        if ref != "-" and b.get("timing") and b["timing"] != "device":
            ref += f" ({b['timing']})"
        bound = b.get("bound")
        out.append(f"  | {_label(b['axes'])} | {_num(b['floor_ms'])} | {b.get('floor_bound') or '-'} "
                   f"| {ref} | {format(bound, '.3g') + 'x' if isinstance(bound, (int, float)) else '-'} |")
    bounds = [b["bound"] for b in rows if isinstance(b.get("bound"), (int, float)) and b["bound"] > 0]
    if bounds:
        geo = math.exp(sum(math.log(b) for b in bounds) / len(bounds))
        out += ["", f"  Geometric mean of the bounds: {geo:.3g}x (the target is judged the same way)."]
    return out


def _budget_line(budget: dict[str, Any] | None, ctx: ArchitectContext) -> str:
    if not budget:
        b = ctx.task.budget
        return (f"- Budget (the task's, in all): {b.iterations} iterations, {b.minutes:g} minutes, "
                f"{b.dollars:.2f} USD; {len(ctx.history)} attempts made so far.")

    def part(key: str, unit: str, spec: str) -> str:
        d = budget.get(key) or {}
        used, limit = d.get("used"), d.get("limit")
        if not isinstance(used, (int, float)) or not isinstance(limit, (int, float)):
            return f"{unit}: unknown"
        return f"{format(max(0.0, limit - used), spec)} of {format(limit, spec)} {unit}"
    return ("- Budget left: " + ", ".join((part("iterations", "iterations", "g"),
                                           part("minutes", "minutes", ".0f"),
                                           part("dollars", "USD", ".2f"))) + ".")


def _current(cur: Curriculum | None) -> str:
    if cur is None:
        return "(none: write the first plan)"
    return "```toml\n" + curriculum_io.dumps(cur).rstrip() + "\n```"
