"""What report.md tells a user: the next step for each way a run ends, milestones as they went,
re-plans that count, the noise floor behind "accepted" vs "new best", and a best kernel.py
holding only what its operator uses."""

from __future__ import annotations

import ast
import json

import pytest

from engine_support.fake_judge import judge_in_process
from engine_support.runs import FIX, agents, new_run, step
from forgekernel import curriculum as C
from forgekernel import templates
from forgekernel.delivery import make_runner
from forgekernel.records import AgentCost, Attempt, Status, Verdict, WorkloadResult
from forgekernel.report import markdown as report
from forgekernel.run import engine, explain, rundir
from forgekernel.run import ledger as L
from forgekernel.run.state import replay

COST = AgentCost(agent="test")
PLAN = C.to_dict(C.loads((FIX / "plan_v1.toml").read_text()))


def verdict(speedup: float | None, label: str = "device", noise: float = 0.05,
            status: Status = Status.PASSED) -> Verdict:
    w = WorkloadResult(axes={"M": 16, "N": 256}, median_ms=1.0, reference_ms=speedup or 1.0,
                       speedup=speedup, timing_label=label)
    return Verdict(status=status, speedup=speedup, noise_floor=noise, workloads=(w,),
                   delivery="cpu" if label == "cpu-interpret" else "local")


def ledger_run(tmp_path, verdicts, end: str, met: bool = False, plans=(PLAN,), gates=()) -> rundir.RunDir:
    """A run dir whose ledger holds these plans, attempts (best when faster by the noise), gates
    (after_seq, milestone) and an end line."""
    rd = rundir.open(new_run(tmp_path))
    led = L.Ledger(rd.ledger, rd.ledger_key())
    led.append(L.SessionEvent(delivery="cpu", agent="builtin", architect="builtin"))
    events: list[tuple[int, object]] = [(0, L.PlanEvent(version=1, reason="initial", after_seq=0,
                                                        curriculum=plans[0], agent=COST))]
    for v, (after, cur) in enumerate(plans[1:], 2):
        events.append((after, L.PlanEvent(version=v, reason="re-plan", after_seq=after, curriculum=cur,
                                          agent=COST)))
    best = None
    for seq, v in enumerate(verdicts, 1):
        is_best = v.passed and (best is None or v.speedup > best * (1 + v.noise_floor))
        best = v.speedup if is_best else best
        events.append((seq, Attempt(seq=seq, time=L.now(), milestone="M0", row="M0.1",
                                    candidate=f"c{seq:015d}", agent=COST, verdict=v,
                                    accepted=v.passed, best=is_best)))
    for after, mid in gates:
        events.append((after, L.GateEvent(milestone=mid, candidate="c", after_seq=after)))
    order = {Attempt: 0, L.GateEvent: 1, L.PlanEvent: 2}  # as the engine writes them
    for _, ev in sorted(events, key=lambda e: (e[0], order[type(e[1])])):
        led.append(ev.model_copy(update={"time": L.now()}))
    led.append(L.EndEvent(reason=end, target_met=met, after_seq=len(verdicts)))
    report.write(rd)
    return rd


@pytest.mark.parametrize(("end", "met", "label", "expected"), [
    ("target reached: 3x >= 1.2x, confirmed", True, "device", ["Next: the kernel is ", "forge evolve"]),
    ("iteration budget spent (2 of 2)", False, "device", ["raise it and resume", "--max-iterations N"]),
    ("time budget spent (90.0 of 90 minutes)", False, "device", ["raise it and resume"]),
    ("nothing left to try: the architect has no new open row", False, "device",
     ["nothing left to try: the built-in agent has no new idea", "--agent claude-code"]),
    ("the agent failed 6 times in a row (x)", False, "device", ["fix what it reported", "forge doctor"]),
    ("iteration budget spent (2 of 2)", False, "cpu-interpret",
     ["raise it and resume", "Triton CPU interpreter", "--delivery local", "FK_DELIVERY=ssh REMOTE_HOST="]),
])
def test_every_ending_says_what_to_do_next(tmp_path, end, met, label, expected):
    rd = ledger_run(tmp_path, [verdict(2.0, label)], end, met)
    lines = [ln for ln in rd.report.read_text().splitlines() if ln.startswith("Next: ")]
    text = "\n".join(lines)
    assert lines and all(e in text for e in expected), text
    assert ("Triton CPU interpreter" in text) == (label == "cpu-interpret")
    assert len(lines) == (2 if label == "cpu-interpret" else 1)


def test_a_passed_then_reopened_m0_is_not_called_abandoned(tmp_path):
    reopened = json.loads(json.dumps(PLAN))
    reopened["milestone"][0]["row"].append({"id": "M0.2", "decision": "another structure"})
    closed = json.loads(json.dumps(reopened))
    closed["milestone"][0]["status"] = "abandoned"
    for row in closed["milestone"][0]["row"]:
        row["status"] = "done"
    rd = ledger_run(tmp_path, [verdict(2.0), verdict(1.0)], "nothing left to try: x",
                    plans=(PLAN, (1, reopened), (2, closed)), gates=[(1, "M0")])
    state = replay(L.read(rd.ledger)[0])
    assert state.closing_only == {3} and state.replans == 1  # v3 only closed M0
    text = rd.report.read_text()
    m0 = next(ln for ln in text.splitlines() if ln.startswith("- **M0**"))
    assert "abandoned" not in m0
    assert "passed after #1, reopened in v2, closed in v3 without a new pass" in m0
    assert "the best (#1) is from before the last reopening" in m0
    assert "re-plans: 1 (and 1 that only closed exhausted work, not counted)" in text
    assert "it only closes what was exhausted, so it is not counted as a re-plan" in text


def test_accepted_versus_new_best_shows_the_noise_floor(tmp_path):
    rd = ledger_run(tmp_path, [verdict(2.0), verdict(2.05), verdict(2.5)], "iteration budget spent (3 of 3)")
    text = rd.report.read_text()
    assert "only when its speedup beats the best's by more than the noise floor" in text
    rows = [ln for ln in text.splitlines() if ln.startswith("| 2 |") or ln.startswith("| 3 |")]
    assert "| 5.0% | accepted (needed > 2.1x) |" in rows[0]
    assert "| 5.0% | new best (> 2.1x needed) |" in rows[1]
    decision = explain.decisions(replay(L.read(rd.ledger)[0]), 0.02)[2]
    assert decision.needed == pytest.approx(2.1) and decision.noise == 0.05


def script_with_plans(path, plans, steps):
    path.write_text(json.dumps({"plan": [{"curriculum": p, "notes": f"plan {i}"} for i, p in enumerate(plans)],
                                "step": steps}))
    return path


def milestone(mid: str) -> dict:
    return {"id": mid, "title": f"more {mid}", "row": [{"id": f"{mid}.1", "decision": f"try {mid}"}],
            "gate": {"performance": "speedup >= 1000"}}


def test_a_no_change_replan_does_not_use_up_a_replan(tmp_path):
    """max_replans = 1. The first re-plan (M1 exhausted) only closes M1: no change, not
    counted. So when M2 is exhausted a real re-plan is still allowed, and M3.1 is tried."""
    first = json.loads(json.dumps(PLAN))
    first["milestone"].append(milestone("M2"))
    closed = json.loads(json.dumps(first))
    closed["milestone"][1]["status"] = "abandoned"
    for row in closed["milestone"][1]["row"]:
        row["status"] = "done"
    extra = json.loads(json.dumps(closed))
    extra["milestone"][2]["status"] = "abandoned"
    extra["milestone"][2]["row"][0]["status"] = "done"
    extra["milestone"].append(milestone("M3"))
    root = new_run(tmp_path)
    data = rundir.open(root).config.data()
    data["engine"]["max_replans"] = 1
    rundir.write_config(rundir.open(root), data)
    steps = [step("torch_fast.py"), step("torch_slow.py")] * 6
    coder, architect = agents(script_with_plans(tmp_path / "s.json", [first, closed, extra], steps))
    outcome = engine.run(root, coder, architect, judge_in_process, make_runner("cpu"), limits={"iterations": 12})
    rows = [e.row for e in L.read(root / "ledger.jsonl")[0] if isinstance(e, Attempt)]
    assert "M2.1" in rows and "M3.1" in rows, (rows, outcome.reason)
    state = engine.load_state(rundir.open(root))
    assert state.closing_only == {2} and state.replans == 1
    assert "re-plan limit 1 reached" in outcome.reason


@pytest.mark.parametrize(("name", "op"), [(t.name, op) for t in templates.TEMPLATES for op in t.ops])
def test_a_rendered_kernel_holds_only_its_operator(name, op):
    tpl = templates.template(name)
    text = templates.render(templates.complete(tpl), op, ("a", "b"), {})
    defined = {n.name for n in ast.parse(text).body if isinstance(n, ast.FunctionDef)}
    assert op in defined and "run" in defined
    assert not (set(tpl.ops) - {op}) & defined  # the file's other operators are gone
    assert templates.header_values(text) == templates.header_values(tpl.source())  # header intact
    assert text.count("# --- knobs ---") == 1 and "# --- end ---" in text
