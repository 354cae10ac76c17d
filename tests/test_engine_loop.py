"""The loop's decisions, driven fast: an in-process test judge (plain-PyTorch candidates).

Stopping (target, iterations, dollars, agent failures), re-planning (stall, gate impasse),
integrity (a stored candidate changed behind the engine's back), one run per run dir.
"""

from __future__ import annotations

import fcntl
import os
import shutil

import pytest

from engine_support.fake_judge import LuckyFirstTiming
from engine_support.fake_judge import judge_in_process as judge
from engine_support.runs import agents, new_run, step, write_script
from forgekernel import curriculum as C
from forgekernel.agents.base import AgentError
from forgekernel.agents.scripted import load_script
from forgekernel.delivery import make_runner
from forgekernel.records import Attempt
from forgekernel.run import engine, ledger, rundir

CPU = make_runner("cpu")


def go(tmp_path, steps, plans=("plan_v1.toml", "plan_v2.toml"), **limits):
    root = new_run(tmp_path)
    coder, architect = agents(write_script(tmp_path / "script.json", steps, plans))
    outcome = engine.run(root, coder, architect, judge, CPU, limits=limits)
    events = ledger.read(rundir.open(root).ledger)[0]
    return outcome, events, coder


def plans(events):
    return [e for e in events if isinstance(e, ledger.PlanEvent)]


def test_target_reached_confirms_and_exits_0(tmp_path):
    outcome, events, _ = go(tmp_path, [step("torch_fast.py"), step("torch_slow.py")], target=1e-9)
    assert outcome.reason.startswith("target reached") and outcome.target_met and outcome.exit_code == 0
    assert outcome.iterations == 1
    confirm = [e for e in events if isinstance(e, ledger.ConfirmEvent)]
    assert len(confirm) == 1 and confirm[0].met and confirm[0].verdict.passed
    text = rundir.open(outcome.run_dir).report.read_text()
    assert "-- met** (exit code 0)" in text


def test_an_agent_that_made_no_edit_is_an_agent_error_not_a_judged_stub(tmp_path):
    outcome, events, _ = go(tmp_path, [step(None, summary="thought about it"), step("torch_fast.py")],
                            iterations=2)
    got = [e for e in events if isinstance(e, Attempt)]
    assert got[0].verdict is None and got[0].error.startswith("agent error: made no edit")
    assert got[1].verdict.passed and outcome.best == got[1].candidate
    assert not [e for e in events if isinstance(e, ledger.StartedEvent) and e.seq == 1]


def test_the_report_names_a_model_whose_tokens_were_not_priced(tmp_path):
    local = {"agent": "openai", "model": "my-local-llama", "input_tokens": 10, "output_tokens": 5}
    outcome, _, _ = go(tmp_path, [step("torch_fast.py", cost=local)], iterations=1)
    text = rundir.open(outcome.run_dir).report.read_text()
    assert "agent dollars: 0.00 (no price known for my-local-llama" in text


def test_iteration_budget(tmp_path):
    outcome, events, _ = go(tmp_path, [step("wrong.py"), step("broken.py"), step("torch_fast.py")], iterations=2)
    assert outcome.reason == "iteration budget spent (2 of 2)" and outcome.best is None
    statuses = [e.verdict.status.value for e in events if isinstance(e, Attempt)]
    assert statuses == ["WRONG_VALUES", "COMPILE_ERROR"]
    assert "best: none" in rundir.open(outcome.run_dir).report.read_text()


def test_dollar_budget(tmp_path):
    costly = [step("wrong.py", cost={"dollars": 1.0}), step("torch_slow.py", cost={"dollars": 1.0}),
              step("torch_fast.py", cost={"dollars": 1.0})]
    outcome, _, _ = go(tmp_path, costly, dollars=1.5)
    assert outcome.reason == "dollar budget spent ($2.00 of $1.50)" and outcome.iterations == 2


def test_repeated_agent_failures_stop_the_run(tmp_path):
    outcome, events, _ = go(tmp_path, [step(error=f"API error {i}") for i in range(8)])
    assert outcome.reason.startswith("the agent failed 6 times in a row") and outcome.iterations == 6
    assert [p.version for p in plans(events)] == [1, 2]  # M0.1 failed after 3 tries: a re-plan


def test_stall_triggers_a_replan(tmp_path):
    steps = [step("torch_fast.py", "M0.1"), step("torch_slow.py", "M1.1"), step("wrong.py", "M1.2")]
    outcome, events, _ = go(tmp_path, steps, stall_after=2)
    assert [p.reason for p in plans(events)][1] == "stall: no new best in 2 attempts"
    assert plans(events)[1].after_seq == 3
    slow = [e for e in events if isinstance(e, Attempt)][1]
    assert slow.accepted and not slow.best  # correct but slower: committed, not the best
    ws = rundir.open(outcome.run_dir).workspace
    assert rundir.content_hash(ws) == outcome.best


def test_gate_impasse_triggers_a_replan(tmp_path):
    outcome, events, _ = go(tmp_path, [step("torch_fast.py", "M0.1")], ("plan_impasse.toml",))
    ps = plans(events)
    assert len(ps) == 1 and outcome.reason.startswith("nothing left to try")
    assert "gate impasse at M0: 'dram_pct >= 70' (not measured: dram_pct)" in outcome.reason


@pytest.mark.parametrize("iterations", [1, 2])
def test_the_best_is_profiled_for_a_gate_only_while_work_can_follow(tmp_path, iterations):
    """A gate line that needs a profile (dram_pct) profiles the best, unless the budget is
    spent: then no attempt could follow, and the run says the line stays open."""
    calls, notes = [], []

    def profiler(task, runner, src):
        if src is not None:  # None: the reference, profiled once at the start
            calls.append(src)
        return []

    root = new_run(tmp_path)
    coder, architect = agents(write_script(tmp_path / "s.json", [step("torch_fast.py", "M0.1")] * 2,
                                           ("plan_impasse.toml",)))
    engine.run(root, coder, architect, judge, CPU, limits={"iterations": iterations}, profiler=profiler,
               progress=lambda ev: notes.append(ev.message))
    spent = [n for n in notes if "stay open: the budget is spent" in n]
    assert (len(calls), len(spent)) == ((0, 1) if iterations == 1 else (1, 0))


def test_a_changed_candidate_is_not_judged(tmp_path):
    root = new_run(tmp_path)
    script = write_script(tmp_path / "s.json", [step("torch_fast.py")])
    coder, architect = agents(script)
    engine.run(root, coder, architect, judge, CPU, limits={"iterations": 1})
    rd = rundir.open(root)
    best = [e for e in ledger.read(rd.ledger)[0] if isinstance(e, Attempt)][0].candidate
    led = ledger.Ledger(rd.ledger, rd.ledger_key())
    led.append(ledger.StartedEvent(seq=2, milestone="M0", row="M0.1", candidate=best,
                                   agent={"agent": "scripted"}))  # pending, as if killed
    (rd.candidate_src(best) / "kernel.py").write_text("def run(x, weight):\n    return x\n")
    with pytest.raises(engine.EngineError, match="do not match its recorded hash"):
        engine.run(root, coder, architect, judge, CPU, limits={"iterations": 3})


def test_one_run_per_run_dir(tmp_path):
    root = new_run(tmp_path)
    coder, architect = agents(write_script(tmp_path / "s.json", [step("torch_fast.py")]))
    fd = os.open(rundir.open(root).lock, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with pytest.raises(engine.EngineError, match="another `forge run`"):
            engine.run(root, coder, architect, judge, CPU)
    finally:
        os.close(fd)


def test_no_initial_plan_is_an_error(tmp_path):
    root = new_run(tmp_path)
    coder, architect = agents(write_script(tmp_path / "s.json", [step("torch_fast.py")], ()))
    with pytest.raises(engine.EngineError, match="could not make a plan: the script .* has no plan"):
        engine.run(root, coder, architect, judge, CPU)


def test_scripts_refuse_paths_outside_the_workspace(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[[step]]\nfiles = { "../escape.py" = "x = 1" }\n')
    with pytest.raises(AgentError, match="not a path inside the workspace"):
        load_script(bad)
    bad.write_text('[[step]]\nfile = "kernel.py"\n')
    with pytest.raises(AgentError, match="a step is a table with keys"):
        load_script(bad)
    with pytest.raises(AgentError, match="no such script"):
        load_script(tmp_path / "missing.toml")


def test_run_dir_layout(tmp_path):
    rd = rundir.open(new_run(tmp_path))
    cfg = rd.config
    assert cfg.task == "rmsnorm" and cfg.agent == "scripted" and cfg.delivery == "cpu"
    assert cfg.budget.iterations == 40 and cfg.target == 1000.0
    assert (rd.task_dir / "reference.py").is_file() and rd.git_dir.is_dir() and not (rd.workspace / ".git").exists()
    assert "def run(x, weight):" in (rd.workspace / "kernel.py").read_text()
    assert not any("KEY" in line for line in rd.run_toml.read_text().splitlines())
    with pytest.raises(rundir.RunDirError, match="already exists"):
        new_run(tmp_path)
    shutil.rmtree(rd.task_dir)
    with pytest.raises(rundir.RunDirError, match="not a run directory"):
        rundir.open(rd.root)


def test_a_reopened_m0_must_be_passed_by_new_work(tmp_path):
    steps = [step("torch_fast.py", "M0.1"), step("torch_slow.py", "M1.1"), step("torch_slow.py", "M0.2")]
    outcome, events, _ = go(tmp_path, steps, ("plan_short.toml", "plan_reopen.toml"))
    ps = plans(events)
    assert [p.version for p in ps] == [1, 2] and "reopens frozen M0" in ps[1].reason
    gates = [e for e in events if isinstance(e, ledger.GateEvent)]
    assert [(g.milestone, g.after_seq) for g in gates] == [("M0", 1)]  # not passed again by the old best
    rows = [(e.seq, e.row) for e in events if isinstance(e, Attempt)]
    assert rows == [(1, "M0.1"), (2, "M1.1"), (3, "M0.2")]  # the new structure was tried
    m0 = C.milestone(C.loads(rundir.open(outcome.run_dir).curriculum.read_text()), "M0")
    assert m0.status == "open" and not m0.frozen


def test_a_lucky_timing_does_not_end_the_search(tmp_path):
    root = new_run(tmp_path)
    coder, architect = agents(write_script(tmp_path / "s.json", [step("torch_fast.py"), step("wrong.py"),
                                                                  step("torch_slow.py")], ("plan_v1.toml",)))
    outcome = engine.run(root, coder, architect, LuckyFirstTiming(), CPU, limits={"iterations": 3, "target": 50})
    events = ledger.read(rundir.open(root).ledger)[0]
    confirms = [e for e in events if isinstance(e, ledger.ConfirmEvent)]
    assert [(c.after_seq, c.met) for c in confirms] == [(1, False)]  # refuted once, not re-timed
    assert outcome.reason == "iteration budget spent (3 of 3)" and outcome.exit_code == 2
