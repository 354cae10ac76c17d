"""The steps :func:`forgekernel.run.engine.run` strings together.

Every step appends to the ledger first and applies the same event to the in-memory state
(:meth:`RunSession.record`); the workspace, ``best/`` and ``curriculum.toml`` are views that a
resumed run rebuilds from the ledger.
"""

from __future__ import annotations

import dataclasses
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from forgekernel import candidate, exprs
from forgekernel import curriculum as C
from forgekernel.agents.base import (
    AgentError,
    ArchitectContext,
    AttemptNote,
    CoderContext,
    NothingToTry,
)
from forgekernel.config import Settings
from forgekernel.errors import ForgeError
from forgekernel.protocols import Progress
from forgekernel.records import (
    AgentCost,
    Attempt,
    AttemptOutcome,
    DecisionRow,
    Milestone,
    Profile,
    Verdict,
)
from forgekernel.run import agent_views as views
from forgekernel.run import explain, rundir
from forgekernel.run.decisions import Flags, budget_spent
from forgekernel.run.ledger import (
    ConfirmEvent,
    EndEvent,
    Event,
    GateEvent,
    PlanEvent,
    RowEvent,
    SessionEvent,
    StartedEvent,
    now,
)
from forgekernel.run.parts import EngineError, ProgressEvent, ProgressKind, RunOutcome, Seams
from forgekernel.run.record import RunRecord
from forgekernel.run.state import Limits, RowCount, RunState
from forgekernel.run.workspace import Workspace

AGENT = AttemptOutcome.AGENT_ERROR


class RunSession:
    """One `forge run` session over a run dir."""

    def __init__(self, rd: rundir.RunDir, seams: Seams, limits: Limits, progress: Progress) -> None:
        self.rd, self.seams, self.limits, self.say = rd, seams, limits, progress
        self.task = rd.task()
        self.log = RunRecord(rd, limits.max_retries)
        self.ws = Workspace(rd.workspace, rd.git_dir)
        self.reference_source = (rd.task_dir / "reference.py").read_text()
        self.flags = Flags()
        self.unrecorded_cost: AgentCost | None = None
        self._prescriptions: dict[str, tuple[str, ...]] = {}

    # -- plumbing
    def emit(self, kind: ProgressKind, message: str, **data: Any) -> None:
        self.say(ProgressEvent(kind, message, data))

    @property
    def state(self) -> RunState:
        return self.log.state

    def record(self, ev: Event) -> Event:
        return self.log.commit(ev)

    def resume(self, settings: Settings | None) -> None:
        """Rebuild the state from the ledger and put the workspace and the derived files
        back on the best."""
        torn = self.log.reopen()
        best = self.state.best
        if best is not None:
            src = self._verified(best.candidate, f"the best (attempt #{best.seq})")
            self.ws.ensure_best(best.seq, best.candidate, src, self.seams.hasher)
        else:
            self.ws.recover()
        self.log.refresh()
        again = bool(self.state.attempts or self.state.started)
        s = self.seams
        self.record(SessionEvent(pid=os.getpid(), delivery=s.runner.name, agent=s.coder.name,
                                 architect=s.architect.name, model=(settings.model or "") if settings else "",
                                 limits=dataclasses.asdict(self.limits)))
        self.emit("session", f"{'resuming' if again else 'starting'} {self.task.name} in {self.rd.root} "
                  f"(agent {s.coder.name}, architect {s.architect.name}, delivery {s.runner.name})")
        if torn:
            self.emit("note", f"cut a torn last ledger line ({torn} bytes) left by an interruption")
        if not self.rd.reference.exists():
            self.emit("note", "analysing the reference")
            from forgekernel.run.analysis import analyse_reference, bound_note, speedup_bound

            reference = analyse_reference(self.task, s.runner, s.profiler)
            rundir.write_json(self.rd.reference, reference)
            note = bound_note(speedup_bound(reference), self.limits.target)
            if note:
                self.emit("note", note)
        self.check_gate()

    # -- planning
    def plan(self, reason: str) -> bool:
        """Ask the architect for a (new) plan; False when there is none to follow."""
        st, arch = self.state, self.seams.architect
        end = st.ends[-1] if st.ends else None
        if (end and end.after_seq == st.last_seq and end.reason.startswith("nothing left")
                and (not st.plans or st.plans[-1].time < end.time)):
            self.flags.nothing_left = end.reason  # asked already when the run ended; do not pay again
        if self.flags.nothing_left:
            return False
        initial = st.curriculum is None
        self.emit("plan", f"architect ({arch.name}): {reason}")
        ctx = ArchitectContext(task=self.task, reference_source=self.reference_source,
                               profiles=self.reference_profiles(), prescriptions=self.prescriptions("architect"),
                               current=st.curriculum, reason=reason, history=self.history(),
                               best=self.best_summary(), extra=self._architect_extra())
        try:
            res = arch.plan(ctx)
            new = self._next_version(res.curriculum, reason)
        except (AgentError, C.CurriculumError) as exc:
            if initial:
                raise EngineError(f"the architect ({arch.name}) could not make a plan: {exc}") from None
            self.flags.nothing_left = f"the architect ({arch.name}) failed: {exc}"
            return False
        if new is None or C.open_rows(new) == 0:
            self.flags.nothing_left = f"nothing left to try: the architect has no new open row ({reason})"
            self.unrecorded_cost = res.cost
            return False
        self.record(PlanEvent(version=new.version, reason=new.reason, after_seq=st.last_seq,
                              curriculum=C.to_dict(new), agent=res.cost, notes=res.notes))
        self.flags.gate = None
        self.check_gate()
        return True

    def _next_version(self, proposed, reason: str):
        checked = C.from_dict(C.to_dict(proposed))
        old = self.state.curriculum
        if old is None:
            return checked.model_copy(update={"version": 1, "reason": checked.reason or reason})
        if C.same_content(checked, old):
            return None
        return C.revise(old, checked, reason)

    # -- one attempt (or a batch of them)
    def attempt(self, m: Milestone, row: DecisionRow) -> None:
        """``limits.batch`` proposals for ``row``, each from the best; then they are judged."""
        room = self.limits.iterations - self.state.iterations
        for _ in range(max(1, min(self.limits.batch, room))):
            if not self._propose(m, row):
                break
        if self.state.waiting:
            self.judge_waiting()

    def _propose(self, m: Milestone, row: DecisionRow) -> bool:
        """One proposal, started (or recorded as failed); False: nothing more to try for ``row``."""
        st, coder = self.state, self.seams.coder
        seq = st.last_seq + 1
        feedback, retry = st.last_feedback(row.id)
        current, diff = views.coder_sources(self.rd, st, self.ws.root, row.id)
        ctx = CoderContext(task=self.task, reference_source=self.reference_source,
                           workspace=self.ws.root, curriculum=st.curriculum, milestone=m, row=row,
                           profiles=self.reference_profiles(), prescriptions=self.prescriptions("coder"),
                           feedback=feedback, history=self.history() + views.proposed(st),
                           best=self.best_summary(), retry=retry, check_command=self.seams.check_command,
                           profile_command=self.seams.profile_command,
                           dollars_left=max(0.0, self.limits.dollars - st.dollars()),
                           current_source=current, retry_diff=diff)
        self.emit("propose", f"#{seq} {row.id} ({coder.name}): {row.decision}", seq=seq, row=row.id)
        given = self.seams.hasher(self.ws.root)
        try:
            res = coder.implement(ctx)
        except NothingToTry as exc:
            self.ws.reset()
            if st.waiting:  # the batch so far is judged first; the row closes on the next ask
                return False
            done = st.counts.get(row.id, RowCount()).accepted > 0
            self.record(RowEvent(row=row.id, status="done" if done else "failed",
                                 reason=str(exc), after_seq=st.last_seq))
            self.emit("note", f"{row.id} closed: {exc}")
            return False
        except AgentError as exc:
            return self._failed(seq, m, row, AGENT, str(exc), AgentCost(agent=coder.name))
        except Exception as exc:
            self._failed(seq, m, row, AttemptOutcome.INTERNAL_ERROR,
                         f"{type(exc).__name__}: {exc}", AgentCost(agent=coder.name))
            raise
        if res.error:
            return self._failed(seq, m, row, AGENT, res.error, res.cost)
        cid = self.seams.hasher(self.ws.root)
        if cid == given:
            return self._failed(seq, m, row, AGENT, "made no edit: the workspace still holds "
                                f"the kernel it was given ({cid}); nothing to judge", res.cost)
        prev = st.judged(cid) or next((s.seq for s in st.waiting if s.candidate == cid), None)
        if prev is not None:
            return self._failed(seq, m, row, AttemptOutcome.DUPLICATE, f"#{prev}: candidate {cid} "
                                "is unchanged; not judged again", res.cost, cid)
        rundir.store_candidate(self.rd, cid, self.ws.root, {"seq": seq, "row": row.id,
                               "summary": res.summary, "cost": res.cost.model_dump(mode="json")})
        self.record(StartedEvent(seq=seq, milestone=m.id, row=row.id, candidate=cid,
                                 agent=res.cost, summary=res.summary, data=res.data))
        if self.limits.batch > 1:
            self.ws.reset()  # the next proposal of the batch starts from the best too
        return True

    def _failed(self, seq: int, m: Milestone, row: DecisionRow, outcome: AttemptOutcome, detail: str,
                cost: AgentCost, cid: str = "") -> bool:
        a = Attempt.failed(outcome, detail, seq=seq, time=now(), milestone=m.id, row=row.id,
                           candidate=cid, agent=cost)
        self.record(a)
        self.ws.reset()
        self.emit("judged", f"#{seq} {row.id}: {a.error.splitlines()[0][:160]}", seq=seq, status="ERROR")
        return True

    def _verified(self, cid: str, what: str) -> Path:
        src = self.rd.candidate_src(cid)
        if not src.is_dir() or not candidate.matches(src, cid, self.seams.hasher):
            raise EngineError(f"{what}: the stored files of candidate {cid} do not match its "
                              "recorded hash; the run dir was modified")
        return src

    def _judge(self, cid: str, src: Path, judge=None, runner=None) -> Verdict:
        verdict = (judge or self.seams.judge)(self.task, src, runner or self.seams.runner)
        got = verdict.candidate
        same = {cid, self.seams.hasher(src)}  # the second: an id recorded by the legacy hash
        if got and not any(got.startswith(c) or c.startswith(got) for c in same):
            raise EngineError(f"the judge judged candidate {got}, not the recorded {cid}")
        return verdict

    def judge_waiting(self) -> None:
        """Phase two for every started, unrecorded candidate: a batch's are judged together
        (:func:`~forgekernel.judge.batch.judge_each`), recorded in seq order, and only the
        fastest correct one may become the best."""
        waiting = self.state.waiting
        if len(waiting) == 1:
            return self.judge_and_record(waiting[0])
        from forgekernel.judge.batch import fastest_passed, judge_each

        srcs = [self._verified(s.candidate, f"attempt #{s.seq}") for s in waiting]
        self.emit("note", f"judging a batch of {len(waiting)} candidates")
        cids = {src: s.candidate for s, src in zip(waiting, srcs, strict=True)}
        verdicts = judge_each(lambda _task, src, runner: self._judge(cids[src], src, runner=runner),
                              self.task, srcs, self.seams.runner)
        winner = fastest_passed(verdicts)
        for i, started in enumerate(waiting):
            self._record(started, srcs[i], verdicts[i], contender=i == winner)

    def judge_and_record(self, started: StartedEvent) -> None:
        """Phase two of an attempt: judge the stored candidate, record, accept or revert."""
        src = self._verified(started.candidate, f"attempt #{started.seq}")
        self._record(started, src, self._judge(started.candidate, src))

    def _record(self, started: StartedEvent, src: Path, verdict: Verdict, contender: bool = True) -> None:
        """Record a verdict, accept or revert; ``contender``: it may become the best."""
        cid, seq = started.candidate, started.seq
        rundir.write_json(self.rd.candidate(cid) / "verdict.json", verdict.model_dump(mode="json"))
        old = self.state.best.verdict if self.state.best else None
        needed, noise = explain.threshold(old, verdict, self.limits.noise_floor)
        is_best = contender and verdict.passed and explain.beats(old, verdict, self.limits.noise_floor)
        self.record(Attempt(seq=seq, time=now(), milestone=started.milestone, row=started.row,
                            candidate=cid, agent=started.agent, verdict=verdict,
                            accepted=verdict.passed, best=is_best))
        if verdict.passed:
            self.ws.accept(seq, cid, src, started.summary, best=is_best)
        else:
            self.ws.reset()
        x = f", {verdict.speedup:.3g}x" if verdict.speedup is not None else ""
        tag = explain.judged_note(verdict, is_best, needed if contender else None, noise)
        self.emit("judged", f"#{seq} {started.row}: {verdict.status.value}{x}{tag}", seq=seq,
                  status=verdict.status.value, speedup=verdict.speedup, best=is_best)

    # -- gates
    def check_gate(self) -> None:
        """Pass every milestone whose gate the best now meets (M0 freezes), in order."""
        best = self.state.best
        while self.state.curriculum is not None:
            m = C.current_milestone(self.state.curriculum)
            if m is None:
                break
            verdict = best.verdict if best else None
            self.flags.gate = C.evaluate_gate(m, verdict, self._gate_profiles(m))
            if best is None or not self.flags.gate.passed:
                break
            if m.id in self.state.reopened and best.seq <= self.state.plans[-1].after_seq:
                break  # a reopened milestone is passed by new work, not by the old best
            self.record(GateEvent(milestone=m.id, candidate=best.candidate, after_seq=self.state.last_seq,
                                  lines=tuple(dataclasses.asdict(r) for r in self.flags.gate.lines)))
            self.emit("gate", f"gate {m.id} passed" + (" (frozen)" if m.kind == "architecture" else ""))

    def _gate_profiles(self, m: Milestone) -> list[Profile]:
        best, profiler = self.state.best, self.seams.profiler
        if best is None or profiler is None:
            return []
        needed = set().union(*(exprs.names(x) for x in (m.gate.performance, *m.gate.mechanism) if x))
        have = set().union(*(e.keys() for e in C.gate_envs(best.verdict)))
        if needed <= have:
            return []
        path = self.rd.candidate(best.candidate) / "profile.json"
        if not path.exists() and budget_spent(self.state, self.limits, datetime.now(UTC)):
            # nothing more will be attempted: a profile could only close a gate no work follows
            self.emit("note", f"{m.id}'s profile-based gate lines stay open: the budget is spent")
            return []
        if not path.exists():
            self.emit("note", f"profiling the best ({best.candidate}) for {m.id}'s gate")
            try:
                data: dict[str, Any] = {"profiles": [p.model_dump(mode="json") for p in
                                                     profiler(self.task, self.seams.runner,
                                                              self.rd.candidate_src(best.candidate))]}
            except ForgeError as exc:
                data = {"profiles": [], "error": str(exc)}
                self.emit("note", f"profiling failed: {exc}")
            rundir.write_json(path, data)
        return [Profile.model_validate(p) for p in rundir.read_json(path)["profiles"]]

    # -- the end
    def finish(self, stop: str) -> RunOutcome:
        """Confirm the best (interleaved re-judgement), record the end, write the report."""
        from forgekernel.report import markdown as report

        self.emit("stop", stop)
        best, met, speedup = self.state.best, False, None
        if best is not None:
            confirm = self.confirm(best)
            met, speedup = confirm.met, confirm.verdict.speedup
        self.record(EndEvent(reason=stop, target_met=met, after_seq=self.state.last_seq,
                             agent=self.unrecorded_cost))
        report.write(self.rd, self.state)
        return RunOutcome(self.rd.root, stop, self.limits.target, met,
                          best.candidate if best else None, speedup, self.state.iterations)

    def confirm(self, best: Attempt) -> ConfirmEvent:
        """The best re-judged against the reference once (:class:`~forgekernel.run.decisions.Confirm`)."""
        done = [c for c in self.state.confirms if c.candidate == best.candidate]
        if done:  # one confirmation per best: a refuted one is not re-timed until it is replaced
            return done[-1]
        self.emit("confirm", f"confirming the best ({best.candidate}) against the reference")
        src = self._verified(best.candidate, "confirmation")
        v = self._judge(best.candidate, src, self.seams.confirm_judge)
        met = v.passed and v.speedup is not None and v.speedup >= self.limits.target
        self.emit("confirm", f"confirmed: {v.status.value}" + (f", {v.speedup:.3g}x" if v.speedup else "")
                  + ("" if met else f", below the {self.limits.target:g}x target"))
        return self.record(ConfirmEvent(candidate=best.candidate, after_seq=self.state.last_seq,
                                        verdict=v, target=self.limits.target, met=met))

    # -- what the agents see
    def history(self) -> tuple[AttemptNote, ...]:
        return views.history(self.state)

    def best_summary(self) -> dict[str, Any] | None:
        return views.best_summary(self.state)

    def reference_profiles(self) -> tuple[Profile, ...]:
        return views.reference_profiles(self.rd)

    def prescriptions(self, role: str) -> tuple[str, ...]:
        """The knowledge base's prescriptions for the agent in ``role`` (coder or architect)."""
        if role not in self._prescriptions:
            p = self.seams.prescriber
            self._prescriptions[role] = tuple(p(self.task, self.reference_profiles(), role)) if p else ()
        return self._prescriptions[role]

    def _architect_extra(self) -> dict[str, Any]:
        runner = self.seams.runner
        return views.architect_extra(self.rd, self.state, self.flags.gate, runner.name,
                                     getattr(runner, "timing_label", "device"), budget=self.limits)
