"""Judging several candidates at once: ``judge_many`` and the engine's ``judge_each``.

A judge (:func:`forgekernel.judge.judge`, or any callable ``judge(task, dir, runner)``)
builds its job, hands it to ``runner.run`` and turns the result into a Verdict. To judge a
batch concurrently without splitting any judge in two, every candidate is judged in its
own thread against a :class:`_Gather` runner: it holds each thread's job until every
thread still judging has handed one in (or finished without a job, as a candidate the
static checks reject does), then runs them together with the real runner's ``run_many``
(for example :meth:`forgekernel.delivery.ray_runner.RayRunner.run_many`, one GPU per job).
A runner without ``run_many`` judges the batch one by one, exactly as single judgements.

Nothing is caught: a ``DeliveryError`` from ``run_many`` reaches every waiting judgement
and the caller, as it would from ``run``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from forgekernel.delivery.base import Job, JobResult
from forgekernel.protocols import BatchRunner, Runner
from forgekernel.records import TaskSpec, Verdict

JudgeFn = Callable[[TaskSpec, Path, Any], Verdict]


class _Slot:
    """Where one waiting job's result (or the batch's error) arrives."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: JobResult | None = None
        self.error: BaseException | None = None


class _Gather:
    """The runner the judging threads of one batch share (see the module docstring)."""

    def __init__(self, runner: Runner, threads: int) -> None:
        self._runner, self._live = runner, threads
        self._waiting: list[tuple[Job, _Slot]] = []
        self._lock = threading.Lock()
        self.name = runner.name
        self.timing_label = getattr(runner, "timing_label", "device")
        self.dispatched: list[int] = []
        """How many jobs each ``run_many`` call carried."""

    def __getattr__(self, attr: str) -> Any:  # anything else a judge reads from its runner
        return getattr(self._runner, attr)

    def run(self, job: Job) -> JobResult:
        slot = _Slot()
        with self._lock:
            self._waiting.append((job, slot))
            batch = self._take()
        self._dispatch(batch)
        slot.done.wait()
        if slot.error is not None:
            raise slot.error
        assert slot.result is not None
        return slot.result

    def finished(self) -> None:
        """A judging thread ended: the others need not wait for its job any more."""
        with self._lock:
            self._live -= 1
            batch = self._take()
        self._dispatch(batch)

    def _take(self) -> list[tuple[Job, _Slot]]:
        if not self._waiting or len(self._waiting) < self._live:
            return []
        batch, self._waiting = self._waiting, []
        return batch

    def _dispatch(self, batch: list[tuple[Job, _Slot]]) -> None:
        if not batch:
            return
        self.dispatched.append(len(batch))
        try:
            results = self._runner.run_many([job for job, _ in batch])  # type: ignore[attr-defined]
        except BaseException as exc:  # every waiting judgement sees the infrastructure failure
            for _, slot in batch:
                slot.error = exc
                slot.done.set()
            return
        for (_, slot), res in zip(batch, results, strict=True):
            slot.result = res
            slot.done.set()


def judge_each(judge: JudgeFn, task: TaskSpec, candidates: Sequence[Path], runner: Runner) -> list[Verdict]:
    """``judge`` on every candidate, concurrently through ``runner.run_many`` when the runner
    has it (else one after the other); verdicts in the order of ``candidates``."""
    cands = list(candidates)
    if len(cands) < 2 or not isinstance(runner, BatchRunner):
        return [judge(task, c, runner) for c in cands]
    connect = getattr(runner, "connect", None)
    if callable(connect):  # join or start a cluster from the caller's thread: a local Ray
        connect()          # cluster started from a judging thread stopped answering in tests
    gather = _Gather(runner, len(cands))

    def one(candidate: Path) -> Verdict:
        try:
            return judge(task, candidate, gather)
        finally:
            gather.finished()

    with ThreadPoolExecutor(max_workers=len(cands), thread_name_prefix="forge-judge") as pool:
        futures = [pool.submit(one, c) for c in cands]
        return [f.result() for f in futures]


def fastest_passed(verdicts: Sequence[Verdict]) -> int | None:
    """The index of the PASSED verdict with the highest speedup (None: none passed)."""
    passed = [i for i, v in enumerate(verdicts) if v.passed]
    return max(passed, key=lambda i: verdicts[i].speedup or 0.0, default=None)


def judge_many(task: TaskSpec, candidates: Sequence[str | Path], runner: Runner,
               options: Any = None) -> list[Verdict]:
    """:func:`forgekernel.judge.judge` on every candidate, concurrently when the runner has
    ``run_many``; verdicts in the order of ``candidates``."""
    from forgekernel.judge.api import judge

    return judge_each(lambda t, c, r: judge(t, c, r, options), task, [Path(c) for c in candidates], runner)
