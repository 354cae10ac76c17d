"""The run dir opened for writing by one `forge run`: its ledger, the state folded from it,
and the files derived from that state. Every change goes through :meth:`RunRecord.commit`:
append the event to the ledger (durable first), apply it to the :class:`RunState`, refresh
the derived files it touches. A resumed run rebuilds the state from the same events and
refreshes every derived file the same way (:meth:`RunRecord.reopen`, :meth:`refresh`)."""

from __future__ import annotations

from forgekernel import curriculum as C
from forgekernel.records import Attempt, Verdict
from forgekernel.run import rundir
from forgekernel.run.ledger import ConfirmEvent, Event, GateEvent, Ledger, PlanEvent, RowEvent
from forgekernel.run.state import RunState, replay

CHANGE_THE_PLAN = (PlanEvent, RowEvent, GateEvent, Attempt)
"""Events after which ``curriculum.toml`` (the plan with live statuses) is rewritten."""


class RunRecord:
    """One writer's view of a run dir: ``rd`` (paths), ``ledger`` and ``state``."""

    def __init__(self, rd: rundir.RunDir, max_retries: int) -> None:
        self.rd, self.max_retries = rd, max_retries
        self.ledger = Ledger(rd.ledger, rd.ledger_key())
        self.state = RunState(max_retries=max_retries)

    def reopen(self) -> int:
        """Cut a torn last line, rebuild the state from the ledger, drop half-copied
        candidates; returns the bytes cut. The derived files are refreshed by the caller
        once the best's stored files are verified (:meth:`refresh`)."""
        torn = self.ledger.repair()
        self.state = replay(self.ledger.events(), self.max_retries, str(self.rd.ledger))
        rundir.clean_partial(self.rd)
        return torn

    def commit(self, event: Event) -> Event:
        """Append ``event`` to the ledger, apply it to the state, refresh what it derives."""
        self.ledger.append(event)
        self.state.apply(event)
        self.refresh(event)
        return event

    def refresh(self, event: Event | None = None) -> None:
        """The files derived from the state that ``event`` changes (all of them when None):
        ``curriculum.v<N>.toml`` as planned, ``curriculum.toml`` with live statuses, and
        ``best/`` (the best's files, with its passing confirmation's verdict if it has one)."""
        st, rd = self.state, self.rd
        if isinstance(event, PlanEvent):
            text = C.dumps(C.from_dict(event.curriculum))
            rundir.atomic_write(rd.curriculum_version(event.version), text)
        if st.curriculum is not None and (event is None or isinstance(event, CHANGE_THE_PLAN)):
            rundir.atomic_write(rd.curriculum, C.dumps(st.curriculum))
        best = st.best
        if best is None:
            return
        new_best = isinstance(event, Attempt) and event.best
        confirmed = (isinstance(event, ConfirmEvent) and event.candidate == best.candidate
                     and event.verdict.passed)
        if event is None or new_best or confirmed:
            rundir.install_best(rd, best.candidate, self.best_verdict())

    def best_verdict(self) -> Verdict | None:
        """The verdict ``best/`` carries: the best's passing confirmation, else its own."""
        best = self.state.best
        if best is None:
            return None
        passed = [c.verdict for c in self.state.confirms
                  if c.candidate == best.candidate and c.verdict.passed]
        return passed[-1] if passed else best.verdict
