"""The built-in architect's re-plan: revise a curriculum after a stall, exhaustion or impasse.

Rules, in order:

1. open rows whose search is exhausted (see :mod:`builtin_search`) are dropped;
2. if a structure of the operator has not been tried and the best so far sits below
   ``RESTRUCTURE_BELOW`` %SOL (or its %SOL is unknown, as on the CPU), or one of its sizable
   workloads below ``RESTRUCTURE_WORKLOAD_BELOW`` %SOL, M0 is re-opened with
   that structure and a tuning milestone for it is appended; open rows of structures that
   are neither the best nor the new one are dropped;
3. otherwise, with no open row left, a joint refinement around the best point is appended
   when it still has untried neighbours, else (the best structure searched out, the target
   still unmet) M0 is re-opened with the next untried structure as in rule 2, whatever the
   %SOL: a high %SOL of the best does not say another structure cannot beat it (a peer may);
   on a stall with rows still open, the stalled row (the first open one) is dropped;
4. milestones left without an open row and not passed are abandoned, so the engine moves
   on; when nothing is open anywhere the reason says there is nothing left to try.
"""

from __future__ import annotations

from forgekernel import templates
from forgekernel.agents import builtin_plan as plan
from forgekernel.agents import builtin_search as search
from forgekernel.agents.base import ArchitectContext
from forgekernel.agents.builtin_ops import OpMatch
from forgekernel.records import Curriculum, DecisionRow, Milestone


def _rows(cur: Curriculum) -> list[DecisionRow]:
    return [r for m in cur.milestones for r in m.rows]


def _map_rows(cur: Curriculum, fn) -> Curriculum:
    ms = tuple(m.model_copy(update={"rows": tuple(fn(m, r) for r in m.rows)}) for m in cur.milestones)
    return cur.model_copy(update={"milestones": ms})


def _drop_exhausted(cur: Curriculum, ctx: ArchitectContext,
                    match: OpMatch) -> tuple[Curriculum, list[str]]:
    dropped: list[str] = []

    def fn(m: Milestone, r: DecisionRow) -> DecisionRow:
        tpl = r.params.get("template")
        if r.status == "open" and tpl in {t.name for t in match.templates}:
            if search.exhausted(r.params, ctx.history):
                dropped.append(r.id)
                return r.model_copy(update={"status": "dropped"})
        return r

    return _map_rows(cur, fn), dropped


def _drop_rows(cur: Curriculum, keep) -> Curriculum:
    return _map_rows(cur, lambda m, r: r if r.status != "open" or keep(r)
                     else r.model_copy(update={"status": "dropped"}))


def _next_ids(cur: Curriculum, m0: Milestone) -> tuple[str, str]:
    nums = [int(m.id[1:]) for m in cur.milestones if m.id[1:].isdigit()]
    row_nums = [int(r.id.rsplit(".", 1)[-1]) for r in m0.rows if r.id.rsplit(".", 1)[-1].isdigit()]
    return f"M0.{max(row_nums, default=0) + 1}", f"M{max(nums, default=0) + 1}"


def _restructure(cur: Curriculum, ctx: ArchitectContext, match: OpMatch, new: templates.Template,
                 keep_template: str | None) -> Curriculum:
    f = plan.facts(ctx)
    cur = _drop_rows(cur, lambda r: r.params.get("template") in (keep_template, new.name))
    m0 = cur.milestones[0]
    row_id, ms_id = _next_ids(cur, m0)
    m0 = m0.model_copy(update={"rows": (*m0.rows, plan.structure_row(row_id, new, f, match)),
                               "status": "open", "frozen": False, "title": new.structure})
    rows = plan.tuning_rows(ms_id, new, match, ctx.task)
    rows.append(plan.refine_row(f"{ms_id}.{len(rows) + 1}", new, match))
    tuning = Milestone(id=ms_id, title=f"tune {new.name}", rows=tuple(rows),
                       gate=plan.gate(f, match, 1, ctx.task.target.speedup))
    return cur.model_copy(update={"milestones": (m0, *cur.milestones[1:], tuning)})


def _refine(cur: Curriculum, ctx: ArchitectContext, match: OpMatch, tpl: templates.Template) -> Curriculum | None:
    params = {"op": match.op, "template": tpl.name, "space": tpl.space()}
    if search.exhausted(params, ctx.history):
        return None
    _, ms_id = _next_ids(cur, cur.milestones[0])
    f = plan.facts(ctx)
    ms = Milestone(id=ms_id, title=f"refine around the best {tpl.name} point",
                   rows=(plan.refine_row(f"{ms_id}.1", tpl, match),),
                   gate=plan.gate(f, match, 2, ctx.task.target.speedup))
    return cur.model_copy(update={"milestones": (*cur.milestones, ms)})


def _settle(cur: Curriculum) -> Curriculum:
    """Abandon open milestones that have no open row (so the engine can move on)."""
    ms = tuple(m.model_copy(update={"status": "abandoned"})
               if m.status == "open" and not any(r.status == "open" for r in m.rows) else m
               for m in cur.milestones)
    return cur.model_copy(update={"milestones": ms})


def revise(ctx: ArchitectContext, match: OpMatch) -> tuple[Curriculum, str]:
    """A new version of ``ctx.current`` (see the module docstring); returns it and why."""
    assert ctx.current is not None
    cur, dropped = _drop_exhausted(ctx.current, ctx, match)
    tried = search.outcomes(ctx.history)
    top = search.best(tried)
    f = plan.facts(ctx)
    sol = plan.best_sol(ctx.best)
    planned = {r.params.get("template") for r in _rows(cur)} | {o.config.template for o in tried.values()}
    untried = [t for t in plan.ranked_structures(ctx.task, match, f.gpu) if t.name not in planned]
    notes = [f"dropped exhausted rows {', '.join(dropped)}"] if dropped else []
    low = plan.lowest_sizable_sol(ctx.best)
    lagging = low is not None and low[0] < plan.RESTRUCTURE_WORKLOAD_BELOW[f.bound]
    best_name = top.config.template if top else None
    if untried and (sol is None or sol < plan.RESTRUCTURE_BELOW[f.bound] or lagging):
        cur = _restructure(cur, ctx, match, untried[0], best_name)
        capped = f"{sol:.0f}% SOL" if sol is not None else "unknown %SOL"
        if lagging and low is not None:
            shape = " x ".join(f"{k}={v}" for k, v in low[1].items())
            capped += f", {low[0]:.0f}% at {shape}"
        notes.append(f"re-opened M0: best {best_name or 'none'} at {capped}; trying {untried[0].name}")
    elif not any(r.status == "open" for r in _rows(cur)):
        refined = _refine(cur, ctx, match, templates.template(best_name)) if top else None
        if refined is not None:
            cur = refined
            notes.append(f"refining around the best point {top.config.key()}")
        elif untried:  # the best structure is searched out and the target still unmet
            cur = _restructure(cur, ctx, match, untried[0], best_name)
            notes.append(f"re-opened M0: every point near the best {best_name or 'none'} tried below"
                         f" the target; trying {untried[0].name}")
    elif "stall" in ctx.reason.lower():
        first = next(r for r in _rows(cur) if r.status == "open")
        cur = _drop_rows(cur, lambda r: r.id != first.id)
        notes.append(f"dropped stalled row {first.id}")
    cur = _settle(cur)
    if not any(r.status == "open" for r in _rows(cur)):
        notes.append("nothing left to try")
    why = f"re-plan ({ctx.reason}): " + ("; ".join(notes) or "no change")
    return cur.model_copy(update={"version": ctx.current.version + 1, "reason": why}), why
