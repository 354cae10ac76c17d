"""The ledger's durability rules and the state folded from it (two-phase attempts)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest

from forgekernel import curriculum as C
from forgekernel.records import AgentCost, Attempt, AttemptOutcome, Status, Verdict
from forgekernel.run import ledger as L
from forgekernel.run.state import replay

PLAN = C.loads("""
[[milestone]]
id = "M0"
kind = "architecture"
[[milestone.row]]
id = "M0.1"
decision = "fuse"
[[milestone.row]]
id = "M0.2"
decision = "search blocks"
params = { tries = 2 }
[milestone.gate]
performance = "speedup >= 2"
""")
COST = AgentCost(agent="test", dollars=0.5)


def plan_event(after=0) -> L.PlanEvent:
    return L.PlanEvent(version=1, reason="initial", after_seq=after, curriculum=C.to_dict(PLAN), agent=COST)


def attempt(seq, row="M0.1", status=Status.WRONG_VALUES, speedup=None, best=False) -> Attempt:
    v = Verdict(status=status, speedup=speedup)
    return Attempt(seq=seq, time=L.now(), milestone="M0", row=row, candidate=f"c{seq}", agent=COST,
                   verdict=v, accepted=v.passed, best=best)


def started(seq, row="M0.1") -> L.StartedEvent:
    return L.StartedEvent(seq=seq, milestone="M0", row=row, candidate=f"c{seq}", agent=COST)


def test_round_trip_every_kind(tmp_path):
    led = L.Ledger(tmp_path / "ledger.jsonl")
    events = [L.SessionEvent(pid=1), plan_event(), started(1), attempt(1),
              L.RowEvent(row="M0.2", status="dropped"), L.GateEvent(milestone="M0", candidate="c1", after_seq=1),
              L.ConfirmEvent(candidate="c1", after_seq=1, verdict=Verdict(status=Status.PASSED), target=1.2, met=False),
              L.EndEvent(reason="done", target_met=False)]
    for ev in events:
        led.append(ev)
    assert led.events() == events
    lines = (tmp_path / "ledger.jsonl").read_text().splitlines()
    assert len(lines) == len(events)
    assert Attempt.model_validate_json(lines[3]) == events[3]  # attempt lines are plain Attempts


def test_torn_last_line_is_ignored_then_cut(tmp_path):
    path = tmp_path / "ledger.jsonl"
    led = L.Ledger(path)
    led.append(started(1))
    led.append(attempt(1))
    whole = path.read_bytes()
    line = attempt(2).model_dump_json().encode()
    for cut in (1, len(line) // 2, len(line)):  # no newline yet: torn wherever it stopped
        path.write_bytes(whole + line[:cut])
        events, torn = L.read(path)
        assert len(events) == 2 and torn == cut
    assert led.repair() == len(line)
    assert path.read_bytes() == whole
    led.append(attempt(2))
    assert [e.seq for e in led.events()] == [1, 1, 2]


def test_a_damaged_middle_line_is_an_error(tmp_path):
    path = tmp_path / "ledger.jsonl"
    L.Ledger(path).append(started(1))
    path.write_bytes(path.read_bytes() + b'{"seq": oops}\n' + attempt(1).model_dump_json().encode() + b"\n")
    with pytest.raises(L.LedgerError, match="line 2 is damaged"):
        L.read(path)


def test_a_complete_but_garbled_last_line_counts_as_torn(tmp_path):
    path = tmp_path / "ledger.jsonl"
    L.Ledger(path).append(started(1))
    path.write_bytes(path.read_bytes() + b"\x00\x00\x00\n")
    events, torn = L.read(path)
    assert [e.seq for e in events] == [1] and torn == 4


def test_started_without_attempt_is_pending_and_counted_once():
    st = replay([plan_event(), started(1), attempt(1), started(2)])
    assert st.pending.seq == 2 and st.iterations == 2 and st.last_seq == 2
    st.apply(attempt(2, status=Status.PASSED, speedup=1.5, best=True))
    assert st.pending is None and st.iterations == 2 and sorted(st.attempts) == [1, 2]
    assert st.best.seq == 2 and st.dollars() == pytest.approx(1.5)  # plan + two attempts


def test_row_statuses_follow_the_attempts():
    st = replay([plan_event(), *(attempt(q) for q in (1, 2))], max_retries=3)
    assert C.milestone(st.curriculum, "M0").rows[0].status == "open"
    st.apply(attempt(3))
    assert C.milestone(st.curriculum, "M0").rows[0].status == "failed"
    st.apply(attempt(4, row="M0.2", status=Status.PASSED, speedup=1.0, best=True))
    assert C.next_row(st.curriculum)[1].id == "M0.2"  # tries = 2: one more correct try
    st.apply(attempt(5, row="M0.2", status=Status.PASSED, speedup=1.1))
    assert C.next_row(st.curriculum) is None
    assert st.since_progress() == 1 and st.last_feedback("M0.1") == ("", 3)
    st.apply(L.GateEvent(milestone="M0", candidate="c4", after_seq=5))
    assert C.milestone(st.curriculum, "M0").frozen
    st.apply(plan_event(after=5))  # a new plan: counts start again
    assert C.next_row(st.curriculum)[1].id == "M0.1" and st.replans == 1 and st.since_progress() == 0


def test_minutes_add_up_over_sessions():
    t0 = datetime.fromisoformat(L.now())
    at = lambda minutes: (t0 + timedelta(minutes=minutes)).isoformat()  # noqa: E731
    events = [L.SessionEvent(time=at(0)), plan_event().model_copy(update={"time": at(2)}),
              L.SessionEvent(time=at(30)), started(1).model_copy(update={"time": at(33)})]
    st = replay(events)
    assert st.minutes() == pytest.approx(5.0)
    assert st.minutes(t0 + timedelta(minutes=40)) == pytest.approx(12.0)


@pytest.mark.parametrize("error,verdict,outcome", [
    ("agent error: made no edit", None, AttemptOutcome.AGENT_ERROR),
    ("duplicate of attempt #2: candidate c2 is unchanged; not judged again", None, AttemptOutcome.DUPLICATE),
    ("internal error: KeyError: 'x'", None, AttemptOutcome.INTERNAL_ERROR),
    ("", {"status": "WRONG_VALUES"}, AttemptOutcome.JUDGED),
])
def test_an_attempt_line_written_before_outcome_still_loads(tmp_path, error, verdict, outcome):
    """Ledgers written before Attempt.outcome said it with the error's prefix."""
    old = {"seq": 3, "time": L.now(), "milestone": "M0", "row": "M0.1", "candidate": "",
           "agent": {"agent": "test"}, "verdict": verdict, "error": error, "accepted": False, "best": False}
    path = tmp_path / "ledger.jsonl"
    path.write_text(json.dumps(old) + "\n")
    [a] = L.Ledger(path).events()
    assert a.outcome is outcome and a.error == error and a.outcome.prefix + a.detail == error
    assert replay([a]).trailing_agent_errors() == (outcome is AttemptOutcome.AGENT_ERROR)


def test_a_failed_attempt_says_its_outcome_and_keeps_its_message(tmp_path):
    a = Attempt.failed(AttemptOutcome.DUPLICATE, "#2: unchanged", seq=3, time=L.now(), agent=COST)
    assert a.error == "duplicate of attempt #2: unchanged" and a.detail == "#2: unchanged"
    led = L.Ledger(tmp_path / "ledger.jsonl")
    led.append(a)
    assert json.loads((tmp_path / "ledger.jsonl").read_text())["outcome"] == "duplicate"
    assert led.events() == [a]


def test_a_started_line_written_before_data_loads_with_empty_data(tmp_path):
    line = started(1).model_dump(mode="json")
    del line["data"]
    path = tmp_path / "ledger.jsonl"
    path.write_text(json.dumps(line) + "\n")
    assert L.Ledger(path).events()[0].data == {}
