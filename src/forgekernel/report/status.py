"""`forge status`: where a run stands, read from its records without changing anything."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from forgekernel import curriculum as C
from forgekernel.report.markdown import best_verdict, headline, status_of, summary_line, timed
from forgekernel.run import ledger, lockfile, rundir
from forgekernel.run.state import Limits, replay


def running(rd: rundir.RunDir) -> bool:
    """True while a `forge run` holds the run dir's lock."""
    return lockfile.held(rd.lock)


def collect(rd: rundir.RunDir, last: int = 5) -> dict[str, Any]:
    """Everything `forge status` shows, as JSON-ready data."""
    cfg = rd.config
    limits = Limits.from_config(cfg, rd.target)
    events, torn = ledger.read(rd.ledger, rd.ledger_key())
    st = replay(events, limits.max_retries, str(rd.ledger))
    session = st.sessions[-1] if st.sessions else None
    verdict, source = best_verdict(st)
    ms, x, label = headline(verdict)
    sols = [w.sol_pct for w in timed(verdict) if w.sol_pct is not None]
    cur = st.curriculum
    m = C.current_milestone(cur) if cur else None
    nxt = C.next_row(cur) if cur else None
    gate = C.evaluate_gate(m, st.best.verdict if st.best else None) if m else None
    end = st.ends[-1] if st.ends and st.ends[-1].after_seq == st.last_seq else None
    state = "running" if running(rd) else ("stopped" if end else ("not started" if not events else "interrupted"))
    return {
        "run_dir": str(rd.root), "task": cfg.task or rd.task().name, "state": state,
        "stopped": end.reason if end else None, "target_met": end.target_met if end else None,
        "delivery": session.delivery if session else cfg.delivery,
        "agent": session.agent if session else cfg.agent or "builtin",
        "architect": session.architect if session else cfg.architect or cfg.agent or "builtin",
        "iterations": st.iterations, "pending": st.pending.seq if st.pending else None,
        "target": limits.target, "summary": summary_line(st),
        "best": None if st.best is None else {
            "candidate": st.best.candidate, "seq": st.best.seq, "median_ms": ms, "speedup": x,
            "timing": label, "sol_pct_min": min(sols) if sols else None, "verdict": source},
        "curriculum_version": cur.version if cur else None,
        "milestone": m.id if m else None, "row": nxt[1].id if nxt else None,
        "gate": [{"line": r.line, "state": r.state, "detail": r.detail} for r in gate.lines] if gate else [],
        "budget": {"iterations": [st.iterations, limits.iterations],
                   "minutes": [round(st.minutes(datetime.now(UTC) if state == "running" else None), 2),
                               limits.minutes],
                   "dollars": [round(st.dollars(), 4), limits.dollars]},
        "replans": st.replans, "torn_tail_bytes": torn,
        "last": [{"seq": q, "row": a.row, "status": status_of(a),
                  "speedup": a.verdict.speedup if a.verdict else None, "best": a.best,
                  "error": a.error.splitlines()[0][:160] if a.error else ""}
                 for q, a in sorted(st.attempts.items())[-last:]],
    }


def render(d: dict[str, Any]) -> list[str]:
    """Plain-text lines of :func:`collect`'s data."""
    b, u = d["best"], d["budget"]
    lines = [f"run       {d['run_dir']} ({d['state']}"
             + (f": {d['stopped']}" if d["stopped"] else "") + ")",
             f"task      {d['task']}; delivery {d['delivery']}; agent {d['agent']}; architect {d['architect']}",
             f"budget    {u['iterations'][0]}/{u['iterations'][1]} attempts, "
             f"{u['minutes'][0]:.1f}/{u['minutes'][1]:g} min, ${u['dollars'][0]:.2f}/${u['dollars'][1]:g}"
             + (f"; attempt #{d['pending']} awaits judging" if d["pending"] else ""),
             d["summary"]]
    if b is not None:
        sol = f", min %SOL {b['sol_pct_min']:.1f}" if b["sol_pct_min"] is not None else ""
        lines.append(f"          attempt #{b['seq']}, {b['verdict']}{sol}; target {d['target']:g}x"
                     + ("" if d["target_met"] is None else f" ({'met' if d['target_met'] else 'not met'})"))
    lines.append(_plan_line(d))
    for g in d["gate"]:
        lines.append(f"  gate    [{g['state']:^7}] {g['line']}" + (f" ({g['detail']})" if g["detail"] else ""))
    for a in d["last"]:
        x = f" {a['speedup']:.3g}x" if a["speedup"] is not None else ""
        lines.append(f"  #{a['seq']:<4} {a['row']:<8} {a['status']}{x}{' BEST' if a['best'] else ''}"
                     + (f"  {a['error']}" if a["error"] else ""))
    return lines


def _plan_line(d: dict[str, Any]) -> str:
    if d["curriculum_version"] is None:
        return "plan      not made yet: the architect plans when `forge run` starts"
    if d["row"]:
        where = f"now at {d['milestone']} row {d['row']}"
    elif d["milestone"]:
        where = f"now at {d['milestone']} (no open row left)"
    else:
        where = "every milestone closed"
    return f"plan      curriculum v{d['curriculum_version']}, {_replans(d['replans'])}; {where}"


def _replans(n: int) -> str:
    return "no re-plan" if n == 0 else f"{n} re-plan{'s' if n > 1 else ''}"
