"""The verifier's reading of a gated batch (judge/gate.py) and the re-takes of disturbed
readings (judge/gated.py): a verifier that loses its core while a batch ends must not turn
that delay into a slower candidate."""

from __future__ import annotations

import time

from forgekernel.judge import gate, gated
from forgekernel.judge.hostwords import DONE_OFFSET, HostWords


class _Words(HostWords):
    """Real shared words whose signal arrives ``after_s`` after the gate opens; the read that
    first sees it stalls ``late_s`` like a preempted process, or one read ``early_s`` before
    the signal does (a stall that ends before it)."""

    def __init__(self, after_s: float, late_s: float = 0.0, early_s: float = 0.0) -> None:
        super().__init__()
        super().write(DONE_OFFSET, 0)  # the page faulted in, as a registered (pinned) one is
        self.after_s, self.late_s, self.early_s = after_s, late_s, early_s
        self.opened: float | None = None

    def write(self, offset: int, value: int) -> None:
        super().write(offset, value)
        self.opened = time.perf_counter()
        self.batch = value

    def read(self, offset: int) -> int:
        if offset == DONE_OFFSET and self.opened is not None:
            left = self.opened + self.after_s - time.perf_counter()
            if left <= 0:
                if self.late_s:
                    time.sleep(self.late_s)
                    self.late_s = 0.0
                return self.batch
            if self.early_s and left < 2 * self.early_s:
                # stalls, returns "not yet", still before the signal: spun rather than slept, as
                # a loaded machine wakes a sleeper late (past the signal: a disturbed reading)
                until = time.perf_counter() + self.early_s
                while time.perf_counter() < until:
                    pass
                self.early_s = 0.0
                return 0
        return super().read(offset)


def _quiet(**words) -> gate.Reading:
    """The first undisturbed reading of up to 100 (this machine may be loaded itself: a
    reading the scheduler did disturb is what the slack is for)."""
    for _ in range(100):
        reading = gate.open_and_time(_Words(**words), 1, timeout_s=5)
        assert reading is not None
        if not reading.disturbed():
            return reading
    raise AssertionError(f"100 readings disturbed, the last: {reading}")


# Batches of half a millisecond: a poll that spins for 5 ms on a loaded machine outlasts its
# time slice nearly every time and is away when the signal comes (CI saw 20 of 20 disturbed).
def test_a_quiet_reading_is_close_and_not_disturbed():
    reading = _quiet(after_s=0.0005)
    assert 0.0005 <= reading.seconds < 0.0015
    assert reading.slack < gate.DISTURBED_MIN_S


def test_losing_the_core_as_the_batch_ends_is_disturbed():
    reading = gate.open_and_time(_Words(after_s=0.005, late_s=0.004), 1, timeout_s=5)
    assert reading is not None and reading.disturbed()
    assert reading.seconds >= 0.009 and reading.slack >= 0.004


def test_losing_the_core_before_the_end_does_not_blur_the_reading():
    """A stall that ends before the signal delays nothing: the next poll is close to it."""
    reading = _quiet(after_s=0.0005, early_s=0.0001)
    assert reading.seconds >= 0.0005


def test_a_batch_that_never_signals_times_out():
    assert gate.open_and_time(_Words(after_s=10.0), 1, timeout_s=0.05) is None


def test_the_threshold_is_relative_to_the_batch():
    assert not gate.Reading(seconds=0.1, slack=150e-6).disturbed()  # 0.15 % of 100 ms
    assert gate.Reading(seconds=0.005, slack=150e-6).disturbed()
    assert not gate.Reading(seconds=0.001, slack=15e-6).disturbed()  # under the 20 us floor


class _Spent:
    def __call__(self, name):
        import contextlib

        return contextlib.nullcontext()


class _Cand:
    """The executor's side: candidate batches read as scripted (ms, disturbed)."""

    def __init__(self, script):
        self.script, self.batches = list(script), 0

    def gated(self, slot, refresh, k, timeout_s):
        refresh()
        self.batches += 1
        ms, disturbed = self.script.pop(0) if self.script else (1.0, False)
        return ms, 0.01, 0.0, disturbed


class _RefGate:
    def __init__(self):
        self.batches = 0

    def time(self, fn, sets, refresh):
        self.batches += 1
        return 4.0, 0.02, 0.0, False


class _Session:
    def __init__(self, script):
        self.cand, self.ref_gate, self.spent = _Cand(script), _RefGate(), _Spent()
        self.problem = None
        self.refreshed = 0

    def timeout_for(self, slot):
        return 60.0


class _Slot:
    wl = None
    label = "w0"


def _rounds(script, monkeypatch):
    session = _Session(script)
    monkeypatch.setattr(gated, "_refresh", lambda *a: setattr(session, "refreshed", session.refreshed + 1))
    monkeypatch.setattr(gated, "_refresh_local", lambda *a: None)
    run = gated._Rounds(session, _Slot(), (None, [[]]), [[]], k=4)
    return run, run.sides(), session


def test_disturbed_candidate_batches_are_taken_again(monkeypatch):
    # warm-up (not checked), then round 0's candidate is disturbed twice (9 ms) before a 1 ms one
    script = [(1.0, False), (9.0, True), (9.0, True), (1.0, False)]
    run, sides, session = _rounds(script, monkeypatch)
    assert sides["cand"].per_call_ms == [1.0] * gated.ROUNDS
    assert run.retaken == 2 and run.kept == 0
    assert session.cand.batches == gated.ROUNDS + 1 + 2
    assert session.refreshed == session.cand.batches  # every batch on fresh values
    assert len(run.tails) == session.cand.batches


def test_retakes_are_bounded_and_what_is_kept_is_counted(monkeypatch):
    script = [(1.0, False)] + [(9.0, True)] * 100
    run, sides, session = _rounds(script, monkeypatch)
    assert run.retaken == gated.RETAKES
    assert run.kept == gated.ROUNDS  # every round kept one disturbed reading once none were left
    assert session.cand.batches == 1 + gated.RETAKES + gated.ROUNDS
    assert sides["cand"].per_call_ms == [9.0] * gated.ROUNDS
    assert len(sides["ref1"].per_call_ms) == len(sides["ref2"].per_call_ms) == gated.ROUNDS
