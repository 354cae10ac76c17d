"""The built-in agent: a rule-based architect and a template-instantiating coder (no LLM).

The architect (:class:`BuiltinArchitect`) decides the structure by what the reference
computes (:mod:`builtin_generated`): a shipped Triton template when the reference computes
its operator (:mod:`builtin_ops`), else a candidate generated from the reference through
TorchInductor's Triton code generation; it picks the structure from the row lengths,
and writes M0 (structure), M1 (one sweep per knob) and M2 (joint refinement), with gates
from the reference profile and the roofline (:mod:`builtin_plan`); re-plans follow
:mod:`builtin_replan`. The coder (:class:`BuiltinCoder`) reads the row's ``params``, picks
the next configuration from the measured history (:mod:`builtin_search`), renders the
template into ``workspace/kernel.py`` and reports the configuration as canonical JSON in
its summary; when a row's search is exhausted it raises NothingToTry (the engine closes the
row). A task the agent cannot trace or lower raises AgentError naming why and the LLM agents.
"""

from __future__ import annotations

from typing import Any

from forgekernel import templates
from forgekernel.agents import builtin_generated, builtin_ops, builtin_plan, builtin_replan
from forgekernel.agents import builtin_search as search
from forgekernel.agents.base import (
    AgentError,
    ArchitectContext,
    ArchitectResult,
    CoderContext,
    CoderResult,
    NothingToTry,
)
from forgekernel.records import AgentCost, TaskSpec

NAME = "builtin"


def _cost() -> AgentCost:
    return AgentCost(agent=NAME)


def supports(task: TaskSpec, reference_source: str) -> builtin_ops.OpMatch:
    """The structure for ``task``, or AgentError saying why not and that an LLM agent is needed."""
    match = builtin_generated.resolve(task, reference_source)
    for tpl in match.templates:
        if tpl.name == builtin_generated.GENERATED:
            templates.register(tpl)
    return match


class BuiltinArchitect:
    """Rule-based architect: structure from row lengths, gates from profile and roofline."""

    name = NAME

    def plan(self, ctx: ArchitectContext) -> ArchitectResult:
        match = supports(ctx.task, ctx.reference_source)
        if ctx.current is None:
            cur, why = builtin_plan.initial(ctx, match)
        else:
            cur, why = builtin_replan.revise(ctx, match)
        return ArchitectResult(curriculum=cur, cost=_cost(), notes=why)


class BuiltinCoder:
    """Instantiates a template configuration chosen from the row's params and the history."""

    name = NAME

    def implement(self, ctx: CoderContext) -> CoderResult:
        match = supports(ctx.task, ctx.reference_source)
        params = self._params(ctx.row.params, match)
        cfg = search.next_config(params, ctx.history)
        if cfg is None:
            mid = search.centre(params, search.outcomes(ctx.history))
            raise NothingToTry(f"exhausted: {mid.key()} and its neighbours in the row's space "
                               "were all judged")
        if cfg.template == builtin_generated.GENERATED:
            text = builtin_generated.render(ctx.task, cfg.knobs)
        else:
            text = templates.render(cfg, match.op, match.params, match.constants,
                                    note=f"task {ctx.task.name}, row {ctx.row.id}", call=match.call)
        ctx.workspace.mkdir(parents=True, exist_ok=True)
        (ctx.workspace / "kernel.py").write_text(text)
        return CoderResult(summary=cfg.key(), cost=_cost(), data=cfg.data())

    @staticmethod
    def _params(params: dict[str, Any], match: builtin_ops.OpMatch) -> dict[str, Any]:
        """The row's params, checked; a row without a template searches the default one."""
        names = {t.name for t in match.templates}
        tpl = params.get("template")
        if tpl is None:
            default = match.templates[0]
            return {"template": default.name, "space": default.space(), **params}
        if tpl not in names:
            raise AgentError(f"row names template {tpl!r}, which does not implement {match.op} "
                             f"(templates for it: {', '.join(sorted(names))})")
        try:
            templates.complete(templates.template(tpl), params.get("knobs"))
            for knob in params.get("space") or {}:
                templates.template(tpl).knob(knob)
        except KeyError as exc:
            raise AgentError(f"row params: {exc.args[0]}") from None
        return params


def make_coder(settings: Any = None, **kw: Any) -> BuiltinCoder:
    """The built-in coder (``settings`` and keywords are accepted and unused)."""
    return BuiltinCoder()


def make_architect(settings: Any = None, **kw: Any) -> BuiltinArchitect:
    """The built-in architect (``settings`` and keywords are accepted and unused)."""
    return BuiltinArchitect()
