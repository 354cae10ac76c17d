"""The engine end to end: scripted agent, Triton candidates, the real judge (a fresh worker
process per candidate, CPU interpreter), real git.

The main run (module fixture) goes: a wrong kernel, a correct slow one (new best, M0's gate
passes and M0 freezes), an agent failure, a faster one (new best), an unchanged candidate
(a duplicate, not judged again), then the script runs dry: rows close, the architect
re-plans once, then has nothing new, and the best is confirmed.
"""

from __future__ import annotations

import json
import re

import pytest

from engine_support.runs import KERNELS, agents, new_run, step, write_script
from forgekernel import curriculum as C
from forgekernel.delivery import make_runner
from forgekernel.judge import candidate_hash, judge
from forgekernel.records import Attempt
from forgekernel.report import status
from forgekernel.report.markdown import summary_line
from forgekernel.run import engine, ledger, rundir
from forgekernel.run.workspace import Workspace

STEPS = [step("triton_wrong.py", "M0.1", summary="forgot the weight"),
         step("triton_row_slow.py", "M0.1", summary="fused, slow", cost={"dollars": 0.25}),
         step(None, "M1.1", error="the tool crashed"),
         step("triton_row.py", "M1.1", summary="fused, fast"),
         step("triton_row_slow.py", "M1.2", summary="the slow one again")]


@pytest.fixture(scope="module")
def main_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("engine")
    root = new_run(tmp)
    script = write_script(tmp / "script.json", STEPS, ("plan_v1.toml", "plan_v2.toml"))
    coder, architect = agents(script)
    events = []
    outcome = engine.run(root, coder, architect, judge, make_runner("cpu"), progress=events.append,
                         hasher=candidate_hash)
    return rundir.open(root), outcome, coder, events


def attempts(rd) -> list[Attempt]:
    return [e for e in ledger.read(rd.ledger)[0] if isinstance(e, Attempt)]


def test_every_attempt_recorded_once_with_its_outcome(main_run):
    rd, outcome, _, _ = main_run
    got = attempts(rd)
    assert [a.seq for a in got] == [1, 2, 3, 4, 5]
    assert [a.verdict.status.value if a.verdict else a.error.split(":")[0] for a in got] == \
        ["WRONG_VALUES", "PASSED", "agent error", "PASSED", "duplicate of attempt #2"]
    assert [a.best for a in got] == [False, True, False, True, False]
    assert [a.accepted for a in got] == [False, True, False, True, False]
    assert got[4].candidate == got[1].candidate  # the duplicate is the same content
    started = [e for e in ledger.read(rd.ledger)[0] if isinstance(e, ledger.StartedEvent)]
    assert [s.seq for s in started] == [1, 2, 4]  # only judged candidates are started
    assert outcome.iterations == 5 and outcome.best == got[3].candidate


def test_outcome_stop_reason_and_exit_code(main_run):
    rd, outcome, _, events = main_run
    assert not outcome.target_met and outcome.exit_code == 2
    assert outcome.reason.startswith("nothing left to try")
    kinds = {e.kind for e in events}
    assert {"session", "plan", "propose", "judged", "gate", "stop", "confirm"} <= kinds
    end = [e for e in ledger.read(rd.ledger)[0] if isinstance(e, ledger.EndEvent)][-1]
    assert end.reason == outcome.reason and end.target_met is False


def test_the_coder_saw_feedback_history_and_best(main_run):
    _, _, coder, _ = main_run
    second, fourth = coder.seen[1], coder.seen[3]
    assert "WRONG_VALUES" in second.feedback and second.retry == 1
    assert second.best is None and [n.status for n in second.history] == ["WRONG_VALUES"]
    assert "the tool crashed" in fourth.feedback and fourth.retry == 1
    assert fourth.best["seq"] == 2 and fourth.row.id == "M1.1" and fourth.milestone.id == "M1"
    assert len(fourth.history) == 3 and fourth.history[1].summary == "fused, slow"


def test_curriculum_versions_gate_and_freeze(main_run):
    rd, _, _, _ = main_run
    cur = C.loads(rd.curriculum.read_text())
    assert cur.version == 2 and "exhausted" in cur.reason
    m0 = C.milestone(cur, "M0")
    assert m0.status == "passed" and m0.frozen
    assert rd.curriculum_version(1).is_file() and rd.curriculum_version(2).is_file()
    gates = [e for e in ledger.read(rd.ledger)[0] if isinstance(e, ledger.GateEvent)]
    assert [(g.milestone, g.after_seq) for g in gates] == [("M0", 2)]


def test_workspace_git_holds_the_best(main_run):
    rd, outcome, _, _ = main_run
    ws = Workspace(rd.workspace)
    assert ws.log() == [f"c4 {outcome.best}: fused, fast", f"c2 {attempts(rd)[1].candidate}: fused, slow",
                        "start: the stub kernel"]
    assert ws.git("rev-parse", "best") == ws.git("rev-parse", "HEAD") == ws.git("rev-parse", "c4^{commit}")
    assert rundir.content_hash(rd.workspace) == outcome.best
    assert (rd.workspace / "kernel.py").read_text() == (KERNELS / "triton_row.py").read_text()
    assert ws.git("status", "--porcelain") == ""


def test_a_git_killed_mid_commit_leaves_locks_that_recover_removes(tmp_path):
    """SIGKILL during `git commit` left workspace.git/HEAD.lock; the resumed run then failed
    at its first git call ('git reset failed ... remove the file manually')."""
    ws = Workspace(tmp_path / "workspace")
    ws.init({"kernel.py": "x = 1\n"})
    (ws.root / "kernel.py").write_text("x = 2\n")
    locks = [ws.git_dir / "index.lock", ws.git_dir / "HEAD.lock", ws.git_dir / "refs" / "tags" / "best.lock"]
    for lock in locks:
        lock.write_text("")
    with pytest.raises(Exception, match="failed"):
        ws.git("commit", "-q", "--allow-empty", "-m", "blocked")
    ws.recover()
    assert not any(lock.exists() for lock in locks)
    assert (ws.root / "kernel.py").read_text() == "x = 1\n"  # reset to the start
    ws.git("commit", "-q", "--allow-empty", "-m", "works again")


def test_best_dir_candidates_and_report(main_run):
    rd, outcome, _, _ = main_run
    assert rd.best_kernel.read_text() == (KERNELS / "triton_row.py").read_text()
    verdict = json.loads(rd.best_verdict.read_text())
    assert verdict["status"] == "PASSED" and verdict["candidate"] == outcome.best
    info = json.loads((rd.candidate(outcome.best) / "agent.json").read_text())
    assert info["summary"] == "fused, fast" and info["seq"] == 4
    text = rd.report.read_text()
    line = text.splitlines()[2]
    assert re.fullmatch(rf"best: {outcome.best} -- cpu-interpret median [0-9.e+-]+ ms, [0-9.e+-]+x the reference", line)
    assert line == summary_line(engine.load_state(rd))
    assert "NOT met** (exit code 2)" in text and "| 5 | M1.2 | DUPLICATE |" in text
    assert "gate M0 passed" in text and "curriculum v2" in text and " by forgekernel " in text
    assert (rd.plots / "speedup.png").read_bytes()[:4] == b"\x89PNG"
    assert not (rd.plots / "roofline.png").exists()  # no device timings on the CPU


def test_status_reports_where_the_run_stands(main_run):
    rd, outcome, _, _ = main_run
    d = status.collect(rd)
    assert d["state"] == "stopped" and d["iterations"] == 5 and d["pending"] is None
    assert d["best"]["candidate"] == outcome.best and d["best"]["timing"] == "cpu-interpret"
    assert d["milestone"] == "M1" and d["row"] is None
    assert [g["line"] for g in d["gate"]] == ["correct", "speedup >= 1000"]
    assert [a["seq"] for a in d["last"]] == [1, 2, 3, 4, 5]
    assert d["budget"]["dollars"][0] == pytest.approx(0.25)
    text = "\n".join(status.render(d))
    assert "5/40 attempts" in text and "[not met] speedup >= 1000" in text


def test_running_a_finished_run_again_adds_nothing(main_run):
    rd, outcome, _, _ = main_run
    before = attempts(rd)
    script = rd.root.parent / "script.json"
    coder, architect = agents(script)
    again = engine.run(rd.root, coder, architect, judge, make_runner("cpu"), hasher=candidate_hash)
    assert attempts(rd) == before and again.best == outcome.best and again.exit_code == 2
    confirms = [e for e in ledger.read(rd.ledger)[0] if isinstance(e, ledger.ConfirmEvent)]
    assert len(confirms) == 1  # the confirmation of the same best is not repeated
    assert coder.seen == []
