"""The built-in architect's rules: structure choice, gates and tuning rows, and re-plans.

Curriculum conventions (what the built-in coder reads from ``DecisionRow.params``):

* ``{"template": NAME, "knobs": {...}}``: a point, judged once (M0 architecture rows);
* ``{"template": NAME, "space": {KNOB: [values]}}``: a hill-climb over those knobs around
  the best configuration of NAME so far (tuning rows); ``knobs`` may pin others.

Every row also carries ``"op"`` (the operator the template instantiates) for readers.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from forgekernel import templates
from forgekernel.agents.base import ArchitectContext
from forgekernel.agents.builtin_ops import OpMatch
from forgekernel.records import Curriculum, DecisionRow, Gate, Milestone, TaskSpec
from forgekernel.task import shape_of

TARGET_SOL = {"memory": 75.0, "compute": 60.0}
"""%SOL a good template reaches, by bound: the basis of predicted speedups."""
SOL_LINES = {"memory": (50, 70, 80), "compute": (30, 45, 55)}
"""Mechanism-line %SOL thresholds by stage on a GPU, by bound (M0's is not used: see gate)."""
RESTRUCTURE_BELOW = {"memory": 70.0, "compute": 50.0}
"""A re-plan tries another structure when the best is below this %SOL (or it is unknown)."""
RESTRUCTURE_WORKLOAD_BELOW = {"memory": 80.0, "compute": 60.0}
"""... or when one sizable workload (floor >= SIZABLE_FLOOR_MS) of the best is below this %SOL:
one structure rarely fits every shape (long rows want a loop over column blocks)."""
SIZABLE_FLOOR_MS = 0.05
"""Workloads whose roofline floor is shorter are too small to say much about a structure."""
PAIRS = {"matmul_tiled": (("BLOCK_M", "BLOCK_N"), ("SKINNY_BLOCK_N", "SKINNY_BLOCK_K")), "gated_rows": (("BLOCK_N", "ROWS"),)}
"""Knobs swept together in one tuning row; every other knob gets a row of its own."""


@dataclass(frozen=True)
class Facts:
    """What the architect knows about the reference: measured, or from the roofline."""

    gpu: bool
    bound: str
    launches: int | None
    sol_pct: float | None
    """The reference's lowest %SOL over the GPU workloads (device timings only)."""
    predicted: float | None
    """Speedup a good template should reach (geometric mean), when the reference was timed."""


def _floor_bound(task: TaskSpec) -> str:
    from forgekernel.profile import roofline
    from forgekernel.task import check_reference_module

    module = check_reference_module(task)
    wls = task.gpu_workloads() or task.workloads
    votes = []
    for wl in wls:
        cost = roofline.workload_cost(task, module, wl)
        fl = roofline.floor(roofline.cost_bytes(task, wl, cost), cost.flops, roofline.H200_SHARED,
                            roofline.compute_dtype(task))
        votes.append(fl.bound)
    return max(set(votes), key=votes.count)


def facts(ctx: ArchitectContext) -> Facts:
    """Bound, launches, %SOL and predicted speedup from the reference profiles and roofline."""
    metrics = [p.metrics for p in ctx.profiles]
    bounds = [m["bound"] for m in metrics if m.get("bound") in ("memory", "compute")]
    bound = max(set(bounds), key=bounds.count) if bounds else _floor_bound(ctx.task)
    launches = [int(m["launches"]) for m in metrics if isinstance(m.get("launches"), (int, float))]
    sols = [float(m["sol_pct"]) for m in metrics if isinstance(m.get("sol_pct"), (int, float))]
    sols = [s for s in sols if s > 0]
    # The runner's timing label says whether timings are real (an ssh or ray host can run the
    # interpreter too); older contexts only carry the delivery name.
    timing = ctx.extra.get("timing")
    gpu = bool(sols) or (timing == "device" if timing else ctx.extra.get("delivery") in ("local", "ssh", "ray"))
    predicted = None
    if sols:
        predicted = statistics.geometric_mean([TARGET_SOL[bound] / s for s in sols])
    return Facts(gpu, bound, max(launches) if launches else None, min(sols) if sols else None,
                 predicted)


def ranked_structures(task: TaskSpec, match: OpMatch, gpu: bool = True) -> list[templates.Template]:
    """The op's templates, best suited to the task's row lengths first, then in the order of
    the task's languages. Without a GPU only Triton structures (the others cannot run on the
    interpreter), unless the task allows nothing else."""
    wls = task.gpu_workloads() or task.workloads
    first = next(iter(task.inputs.values()))
    lengths = [n for wl in wls for n in shape_of(first, wl.axes)[-1:]]  # entries may be expressions

    def score(tpl: templates.Template) -> float:
        kind = tpl.name.rsplit("_", 1)[-1]
        per = {"row": lambda n: 2.0 if 1024 < n <= 32768 else 1.0 if n <= 1024 else 0.0,
               "multirow": lambda n: 2.5 if n <= 1024 else 1.0 if n <= 4096 else 0.0,
               "looped": lambda n: 3.0 if n > 32768 else 0.5}.get(kind, lambda n: 1.0)
        return sum(per(n) for n in lengths)

    order = {t.name: i for i, t in enumerate(match.templates)}
    langs = task.allowed_languages()
    pool = [t for t in match.templates if gpu or t.language == "triton"] or list(match.templates)
    return sorted(pool, key=lambda t: (-score(t), langs.index(t.language) if t.language in langs
                                       else len(langs), order[t.name]))


def launch_line(match: OpMatch) -> str:
    return "launches == 1" if match.launches == 1 else f"launches <= {match.launches}"


def gate(f: Facts, match: OpMatch, stage: int, target: float) -> Gate:
    """Gate of M0 (stage 0) or of tuning milestone ``stage``.

    Tuning gates carry the task's target speedup everywhere, so their sweeps run until the
    target is met or the rows are exhausted (on the CPU the speedup is a cpu-interpret one).
    M0's performance line is half the predicted speedup (capped at the target) on a GPU and
    absent on the CPU, where M0 closes on correctness and launches alone. %SOL lines go on
    tuning gates only: a gate line must hold at every workload, and small (L2-sized,
    launch-bound) workloads sit far below the roofline whatever the structure.
    """
    mechanism = [launch_line(match)]
    performance = f"speedup >= {round(target, 2)}" if stage > 0 else ""
    if f.gpu:
        if stage > 0:
            mechanism.append(f"sol_pct >= {SOL_LINES[f.bound][min(stage, 2)]}")
        else:
            guess = 0.5 * f.predicted if f.predicted else (1.0 if f.bound == "memory" else 0.5)
            performance = f"speedup >= {round(min(target, max(guess, 0.3)), 2)}"
    return Gate(correct=True, performance=performance, mechanism=tuple(mechanism))


def structure_row(row_id: str, tpl: templates.Template, f: Facts, match: OpMatch,
                  prescriptions: tuple[str, ...] = ()) -> DecisionRow:
    ref = f"reference: {f.launches} launches" if f.launches else "reference"
    sol = f", lowest {f.sol_pct:.0f}% SOL" if f.sol_pct is not None else ""
    lever = f"{tpl.lever}; {ref}{sol}, {f.bound}-bound by the roofline"
    if prescriptions:
        lever += f"; kb: {prescriptions[0]}"
    predict = [launch_line(match)]
    if f.predicted:
        predict.insert(0, f"speedup ~{f.predicted:.1f}")
    return DecisionRow(id=row_id, decision=f"{match.op}: {tpl.structure}", lever=lever,
                       predict="; ".join(predict),
                       params={"op": match.op, "template": tpl.name, "knobs": tpl.defaults()})


def knob_groups(tpl: templates.Template, task: TaskSpec) -> list[tuple[str, ...]]:
    """The knobs swept together, one tuning row each: PAIRS for templates; for a generated
    candidate, the groups of the kernel kinds it contains."""
    from forgekernel.agents import builtin_generated

    if tpl.name == builtin_generated.GENERATED:
        return builtin_generated.tuning_groups(builtin_generated.generate(task))
    groups: list[tuple[str, ...]] = list(PAIRS.get(tpl.name, ()))
    paired = {k for g in groups for k in g}
    groups += [(k.name,) for k in tpl.knobs if k.name not in paired]
    groups.sort(key=lambda g: [k.name for k in tpl.knobs].index(g[0]))
    return groups


def tuning_rows(prefix: str, tpl: templates.Template, match: OpMatch,
                task: TaskSpec) -> list[DecisionRow]:
    """One sweep row per knob group (:func:`knob_groups`), in the catalog's order. A row stays
    open for as many accepted attempts as its space has other values (``tries``), or until the
    coder has nothing left to try in it: one attempt per row left ROWS 32 and 64 untried."""
    groups = knob_groups(tpl, task)
    rows = []
    for i, group in enumerate(groups, 1):
        space = {k: list(tpl.knob(k).space) for k in group}
        rows.append(DecisionRow(
            id=f"{prefix}.{i}", decision=f"{tpl.name}: sweep {' x '.join(group)} around the best point",
            lever="launch shape: " + ", ".join(f"{k} in {v}" for k, v in space.items()),
            predict="speedup up a few % per step until a local optimum",
            params={"op": match.op, "template": tpl.name, "space": space,
                    "tries": max(1, sum(len(v) - 1 for v in space.values()))}))
    return rows


def refine_row(row_id: str, tpl: templates.Template, match: OpMatch) -> DecisionRow:
    return DecisionRow(id=row_id, decision=f"{tpl.name}: joint hill-climb over every knob",
                       lever="interactions between knobs the one-at-a-time sweeps missed",
                       predict="small gains; stops at a local optimum",
                       params={"op": match.op, "template": tpl.name, "space": tpl.space(),
                               "tries": 2 * len(tpl.knobs)})


def carried_start(ctx: ArchitectContext, match: OpMatch) -> templates.Config | None:
    """Self-evolution: the previous generation's best point (``ctx.extra['evolve']``), if the
    built-in coder made it with one of this op's templates."""
    best = (ctx.extra.get("evolve") or {}).get("best") or {}
    cfg = templates.Config.of(best.get("data") or {}, str(best.get("summary") or ""))
    if cfg is None or cfg.template not in {t.name for t in match.templates}:
        return None
    try:
        return templates.complete(templates.template(cfg.template), cfg.knobs)
    except KeyError:
        return None


def initial(ctx: ArchitectContext, match: OpMatch) -> tuple[Curriculum, str]:
    """M0: the structure; M1: per-knob sweeps; M2: a joint refinement.

    In a self-evolution generation M0 starts from the previous generation's best point.
    """
    f = facts(ctx)
    tpl = ranked_structures(ctx.task, match, f.gpu)[0]
    start = carried_start(ctx, match)
    if start is not None:
        tpl = templates.template(start.template)
    row0 = structure_row("M0.1", tpl, f, match, ctx.prescriptions)
    if start is not None:
        row0 = row0.model_copy(update={"params": {**row0.params, "knobs": start.knobs},
                                       "decision": f"{row0.decision} (the previous generation's best point)"})
    target = ctx.task.target.speedup
    g0 = gate(f, match, 0, target)
    if start is not None:  # the previous best cannot beat itself: M0 only re-establishes it
        g0 = g0.model_copy(update={"performance": ""})
    m0 = Milestone(id="M0", kind="architecture", title=tpl.structure, rows=(row0,), gate=g0)
    milestones = [m0]
    tuning = tuning_rows("M1", tpl, match, ctx.task)
    if tuning:  # a structure with nothing to tune (a generated candidate of library calls) has no M1
        milestones.append(Milestone(id="M1", title=f"tune {tpl.name} launch shape", rows=tuple(tuning),
                                    gate=gate(f, match, 1, target)))
    if len(tuning) > 1:  # with one knob group the joint refinement would repeat M1
        milestones.append(Milestone(id="M2", title=f"refine {tpl.name} jointly",
                                    rows=(refine_row("M2.1", tpl, match),),
                                    gate=gate(f, match, 2, target)))
    why = (f"initial plan: {match.op} via {tpl.name} ({f.bound}-bound"
           + (f"; traced: {match.graph}" if match.graph else "")
           + (f"; library parts: {'; '.join(match.notes)}" if match.notes else "")
           + (f", starting from the previous generation's best {start.key()}" if start else "")
           + (f", reference at {f.sol_pct:.0f}% SOL" if f.sol_pct is not None else "")
           + ("" if f.gpu else ", CPU interpreter: M0 gate without a timing line") + ")")
    return Curriculum(version=1, reason=why, milestones=tuple(milestones)), why


def lowest_sizable_sol(best: dict[str, Any] | None) -> tuple[float, dict[str, Any]] | None:
    """The lowest %SOL among the best verdict's sizable workloads, with their axes."""
    low = None
    for w in (best or {}).get("workloads", ()):
        if not isinstance(w, dict):
            continue
        sol, median = w.get("sol_pct"), w.get("median_ms")
        if not isinstance(sol, (int, float)) or not isinstance(median, (int, float)):
            continue
        if median * sol / 100 >= SIZABLE_FLOOR_MS and (low is None or sol < low[0]):
            low = (float(sol), w.get("axes") or {})
    return low


def best_sol(best: dict[str, Any] | None) -> float | None:
    """Median %SOL over the best verdict's workloads, if the engine passed it (the median:
    one small L2-sized workload far from the roofline says little about the structure)."""
    if not best:
        return None
    if isinstance(best.get("sol_pct"), (int, float)):
        return float(best["sol_pct"])
    sols = [w.get("sol_pct") for w in best.get("workloads", ()) if isinstance(w, dict)]
    sols = [float(s) for s in sols if isinstance(s, (int, float))]
    return statistics.median(sols) if sols else None
