"""decide(): what the loop does next, from a RunState folded in memory (no run dir)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from forgekernel import curriculum as C
from forgekernel.agents.base import ArchitectContext
from forgekernel.agents.builtin import make_architect
from forgekernel.config import load_settings
from forgekernel.records import AgentCost, Status, Verdict
from forgekernel.records import Attempt as AttemptRecord
from forgekernel.run.decisions import (
    Attempt,
    Confirm,
    Flags,
    JudgePending,
    Replan,
    Stop,
    decide,
)
from forgekernel.run.ledger import ConfirmEvent, GateEvent, PlanEvent, SessionEvent, StartedEvent
from forgekernel.run.state import Limits, RunState
from forgekernel.task import load_task

T0 = datetime(2026, 1, 1, tzinfo=UTC)
PLAN = """
version = 1
reason = "initial"

[[milestone]]
id = "M0"
kind = "architecture"
title = "fused"
[[milestone.row]]
id = "M0.1"
decision = "one program per row"
[[milestone.row]]
id = "M0.2"
decision = "block size"
[milestone.gate]
performance = "speedup >= 3"
"""


def limits(**kw) -> Limits:
    base = dict(iterations=10, minutes=30.0, dollars=5.0, target=2.0, max_retries=3, stall_after=4,
                max_replans=2, noise_floor=0.02, batch=1)
    return Limits(**{**base, **kw})


def at(minutes: float) -> str:
    return (T0 + timedelta(minutes=minutes)).isoformat()


def state(*events) -> RunState:
    st = RunState(max_retries=3)
    for ev in (SessionEvent(time=at(0)), *events):
        st.apply(ev)
    return st


def plan(version=1, after_seq=0, text=PLAN) -> PlanEvent:
    return PlanEvent(time=at(0), version=version, reason="r", after_seq=after_seq,
                     curriculum=C.to_dict(C.loads(text)), agent=AgentCost(agent="a"))


def attempt(seq, speedup=None, best=False, error="", dollars=0.0, row="M0.1") -> AttemptRecord:
    verdict = Verdict(status=Status.PASSED, speedup=speedup) if speedup is not None else None
    return AttemptRecord(seq=seq, time=at(0), milestone="M0", row=row, candidate=f"c{seq}",
                         agent=AgentCost(agent="a", dollars=dollars), verdict=verdict, error=error,
                         accepted=verdict is not None, best=best)


def replans_used(st: RunState, n: int) -> RunState:
    """``st`` as if ``n`` re-plans (each adding work) had followed its plan."""
    st.plans.extend([st.plans[-1]] * n)
    st.closing_only.clear()
    assert st.replans == n
    return st


def go(st: RunState, lim: Limits | None = None, flags: Flags | None = None, minutes: float = 1.0):
    return decide(st, lim or limits(), flags or Flags(), T0 + timedelta(minutes=minutes))


def test_no_plan_yet_asks_for_the_initial_plan():
    assert go(state()) == Replan("initial plan")
    assert go(state(), limits(max_replans=0)) == Replan("initial plan")


def test_the_next_open_row_is_attempted():
    d = go(state(plan()))
    assert isinstance(d, Attempt) and (d.milestone.id, d.row.id) == ("M0", "M0.1")


def test_a_pending_judgement_comes_first():
    started = StartedEvent(time=at(0), seq=1, milestone="M0", row="M0.1", candidate="c1",
                           agent=AgentCost(agent="a"))
    st = state(plan(), started)
    assert go(st, limits(iterations=1), minutes=99) == JudgePending()


def test_iteration_budget():
    d = go(state(plan(), attempt(1, 1.1, best=True)), limits(iterations=1))
    assert d == Stop("iteration budget spent (1 of 1)")


def test_time_budget():
    d = go(state(plan()), limits(minutes=30), minutes=31)
    assert isinstance(d, Stop) and d.reason == "time budget spent (31.0 of 30 minutes)"


def test_dollar_budget():
    d = go(state(plan(), attempt(1, 1.1, best=True, dollars=6.0)))
    assert d == Stop("dollar budget spent ($6.00 of $5.00)")


def test_agent_failures_in_a_row_stop_the_run():
    fails = [attempt(q, error="agent error: no key", row=f"M0.{q % 2 + 1}") for q in range(1, 7)]
    d = go(state(plan(), *fails), limits(max_retries=3, stall_after=99))
    assert d == Stop("the agent failed 6 times in a row (agent error: no key)")


def test_target_met_is_confirmed_before_the_run_stops():
    best = attempt(1, 2.5, best=True)
    st = state(plan(), best)
    assert go(st) == Confirm(st.best)
    st.apply(ConfirmEvent(time=at(0), candidate="c1", after_seq=1, target=2.0, met=True,
                          verdict=Verdict(status=Status.PASSED, speedup=2.4)))
    assert go(st) == Stop("target reached: 2.4x >= 2x, confirmed")


def test_a_refuted_confirmation_lets_the_search_go_on():
    st = state(plan(), attempt(1, 2.5, best=True))
    st.apply(ConfirmEvent(time=at(0), candidate="c1", after_seq=1, target=2.0, met=False,
                          verdict=Verdict(status=Status.PASSED, speedup=1.5)))
    assert isinstance(go(st), Attempt)


def test_stall_asks_for_a_replan():
    st = state(plan(), attempt(1, 1.1, best=True), *(attempt(q, 1.0) for q in range(2, 6)))
    assert go(st, limits(max_retries=99)) == Replan("stall: no new best in 4 attempts")


def test_stall_past_the_replan_limit_keeps_attempting_open_rows():
    st = replans_used(state(plan(), attempt(1, 1.1, best=True), *(attempt(q, 1.0) for q in range(2, 6))), 2)
    assert isinstance(go(st, limits(max_retries=99)), Attempt)


def test_exhausted_rows_replan_then_stop_at_the_limit():
    closed = PLAN.replace('decision = "one program per row"', 'decision = "x"\nstatus = "done"').replace(
        'decision = "block size"', 'decision = "y"\nstatus = "failed"')
    why = "the rows of M0 are exhausted without passing its gate"
    assert go(state(plan(text=closed))) == Replan(why)
    st = replans_used(state(plan(text=closed)), 2)
    assert go(st, limits(max_replans=2)) == Stop(f"nothing left to try ({why}; re-plan limit 2 reached)")


def test_the_session_flag_nothing_left_stops_the_run():
    flags = Flags(nothing_left="the architect (a) failed: boom")
    assert go(state(plan()), flags=flags) == Stop("the architect (a) failed: boom")


def test_a_gate_impasse_asks_for_a_replan():
    cur = C.loads(PLAN.replace('performance = "speedup >= 3"', 'mechanism = ["dram_pct >= 70"]'))
    st = state(plan(text=C.dumps(cur)), attempt(1, 1.1, best=True))
    gate = C.evaluate_gate(cur.milestones[0], st.best.verdict)
    d = go(st, flags=Flags(gate=gate))
    assert isinstance(d, Replan) and d.why.startswith("gate impasse at M0: 'dram_pct >= 70'")


def test_a_builtin_sweep_row_stays_open_until_its_space_is_tried():
    """The built-in plan's sweep rows carry ``tries``: after one accepted attempt the run went
    on to the next knob with ROWS 32 and 64 never judged (an H100 rope run)."""
    root = Path(__file__).resolve().parents[1] / "tasks" / "rope"
    cur = make_architect(load_settings({})).plan(ArchitectContext(
        task=load_task(root), reference_source=(root / "reference.py").read_text())).curriculum
    sweep = next(r for m in cur.milestones for r in m.rows if r.id == "M1.1")
    assert sweep.params["tries"] == len(sweep.params["space"]["ROWS"]) - 1
    ev = PlanEvent(time=at(0), version=1, reason="r", after_seq=0, curriculum=C.to_dict(cur),
                   agent=AgentCost(agent="a"))
    done = [attempt(1, 9.0, best=True), GateEvent(time=at(0), milestone="M0", candidate="c1", after_seq=1)]
    for seq in range(2, 2 + sweep.params["tries"]):
        d = go(state(ev, *done), limits(target=100.0))
        assert isinstance(d, Attempt) and d.row.id == "M1.1", (seq, d)
        a = attempt(seq, 9.0 + seq / 100, best=True, row="M1.1")  # each a new best: no stall
        done.append(a.model_copy(update={"milestone": "M1"}))
    d = go(state(ev, *done), limits(target=100.0))
    assert isinstance(d, Attempt) and d.row.id == "M1.2"
