"""report.md from the run's records (ledger, run.toml, reference.json): records in, markdown out.

The summary line reads ``best: <hash> -- device median <ms> ms, <x>x the reference``, with
``device`` replaced by ``cpu-interpret`` when the timings came from the Triton interpreter.
With several workloads, ``<ms>`` is the geometric mean of the best's per-workload medians
and ``<x>`` the geometric mean of the speedups (the verdict's ``speedup``), which is the
ratio of the two geometric means, so the line stays self-consistent.
"""

from __future__ import annotations

import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from forgekernel import curriculum as C
from forgekernel.records import Attempt, AttemptOutcome, Verdict
from forgekernel.run import explain, rundir
from forgekernel.run.state import RunState, replay


def timed(verdict: Verdict | None) -> list:
    return [w for w in (verdict.workloads if verdict else ()) if not w.hidden and w.median_ms is not None]


def timing_label(verdict: Verdict | None) -> str:
    labels = {w.timing_label for w in timed(verdict) if w.timing_label}
    if not labels:
        return "cpu-interpret" if verdict is not None and verdict.delivery == "cpu" else "device"
    return "cpu-interpret" if "cpu-interpret" in labels else sorted(labels)[0]


def headline(verdict: Verdict | None) -> tuple[float | None, float | None, str]:
    """(geometric-mean median ms, speedup, timing label) of a verdict."""
    ws = timed(verdict)
    ms = statistics.geometric_mean([w.median_ms for w in ws]) if ws else None
    return ms, verdict.speedup if verdict else None, timing_label(verdict)


def best_verdict(state: RunState) -> tuple[Verdict | None, str]:
    """The best's verdict to show: its confirmation when there is one, else its search verdict."""
    best = state.best
    if best is None:
        return None, ""
    for c in reversed(state.confirms):
        if c.candidate == best.candidate:
            return c.verdict, "final confirmation (re-judged against the reference)"
    return best.verdict, f"search verdict of attempt #{best.seq}"


def summary_line(state: RunState) -> str:
    verdict, _ = best_verdict(state)
    if state.best is None or verdict is None:
        return "best: none -- no candidate passed the judge"
    ms, x, label = headline(verdict)
    if ms is None or x is None:
        return f"best: {state.best.candidate} -- {label} median n/a (no timings), n/a the reference"
    return f"best: {state.best.candidate} -- {label} median {ms:.4g} ms, {x:.3g}x the reference"


def status_of(a: Attempt) -> str:
    if a.verdict is not None:
        return a.verdict.status.value
    return "DUPLICATE" if a.outcome is AttemptOutcome.DUPLICATE else "ERROR"


def _fmt(v: float | None, spec: str = ".4g") -> str:
    return "-" if v is None else format(v, spec)


def workload_table(verdict: Verdict | None, floors: list[dict[str, Any]]) -> list[str]:
    rows = ["| workload | reference ms | best ms | speedup | %SOL | timing |", "|---|---|---|---|---|---|"]
    by_axes = {tuple(sorted(f["axes"].items())): f for f in floors}
    above = False
    for w in (verdict.workloads if verdict else ()):
        if w.hidden:
            continue
        sol = w.sol_pct
        floor = by_axes.get(tuple(sorted(w.axes.items())), {})
        if sol is None and w.median_ms and w.timing_label == "device" and floor.get("floor_ms"):
            sol = 100.0 * floor["floor_ms"] / w.median_ms
        label = " x ".join(f"{k}={v}" for k, v in w.axes.items())
        rows.append(f"| {label} | {_fmt(w.reference_ms)} | {_fmt(w.median_ms)} | {_fmt(w.speedup, '.3g')} "
                    f"| {_fmt(sol, '.1f')} | {w.timing_label or '-'} |")
        above = above or (sol is not None and sol > 100.0)
    if above:
        rows += ["", ABOVE_CEILING]
    return rows


ABOVE_CEILING = ("%SOL above 100: the device beat the certified ceiling the floor is computed from "
                 "(ceilings move from day to day with clocks and power, and a copy ceiling "
                 "understates read-heavy traffic); `forge kb probe` re-certifies them.")


def milestone_lines(state: RunState) -> list[str]:
    timeline: list[tuple[str, str]] = []
    for p in state.plans:
        closing = (" -- it only closes what was exhausted, so it is not counted as a re-plan"
                   if p.version in state.closing_only else "")
        timeline.append((p.time, f"- after attempt #{p.after_seq}: curriculum v{p.version} ({p.reason})"
                         + (f" -- {p.notes}" if p.notes and p.notes != p.reason else "") + closing))
    for g in state.gates:
        timeline.append((g.time, f"- after attempt #{g.after_seq}: gate {g.milestone} passed with "
                         f"{g.candidate}: " + "; ".join(f"{x['line']} {x['state']}" for x in g.lines)))
    for r in state.rows:
        timeline.append((r.time, f"- after attempt #{r.after_seq}: row {r.row} closed ({r.status}): {r.reason}"))
    out = [text for _, text in sorted(timeline, key=lambda t: t[0])]
    cur = state.curriculum
    if cur is None:
        return out + ["", "No curriculum was made."]
    verdict = state.best.verdict if state.best else None
    out += ["", f"Curriculum v{cur.version} at the end:", ""]
    for m in cur.milestones:
        out.append(f"- **{m.id}** {m.title} ({explain.milestone_label(state, m)}): "
                   + ", ".join(f"{r.id} {r.status}" for r in m.rows))
        for line in C.evaluate_gate(m, verdict).lines:
            out.append(f"  - gate `{line.line}`: {line.state}" + (f" ({line.detail})" if line.detail else ""))
    return out


KEPT = ("A correct candidate is accepted (committed in the workspace, tag c<seq>); it becomes the "
        "new best only when its speedup beats the best's by more than the noise floor: the "
        "verdict's own (the spread of the reference timed against itself), else run.toml's "
        "[engine] noise_floor ({noise:.0%}).")


def attempt_lines(state: RunState, default_noise: float = 0.02) -> list[str]:
    counts = Counter(status_of(a) for a in state.attempts.values())
    out = ["By status: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())), ""]
    walls = sorted(a.verdict.wall_s for a in state.attempts.values() if a.verdict and a.verdict.wall_s)
    if walls:
        out += [f"Judge time per verdict: median {statistics.median(walls):.1f} s, "
                f"range {walls[0]:.1f}-{walls[-1]:.1f} s over {len(walls)} verdict(s).", ""]
    kept = explain.decisions(state, default_noise)
    out += [KEPT.format(noise=default_noise), "",
            "| # | row | status | speedup | noise floor | kept as | candidate | summary / error |",
            "|---|---|---|---|---|---|---|---|"]
    for q, a in sorted(state.attempts.items()):
        started = state.started.get(q)
        text = (a.error or (started.summary if started else "")).splitlines()
        note = (text[0] if text else "")[:120].replace("|", "/")
        noise = a.verdict.noise_floor if a.verdict else None
        d = kept.get(q)
        out.append(f"| {q} | {a.row} | {status_of(a)} | {_fmt(a.verdict.speedup if a.verdict else None, '.3g')} "
                   f"| {_fmt(noise, '.1%')} | {d.text if d else ''} | {a.candidate or '-'} | {note} |")
    return out


def render(rd: rundir.RunDir, state: RunState, plots: dict[str, str]) -> str:
    cfg, target = rd.config, rd.target
    end = state.ends[-1] if state.ends else None
    verdict, source = best_verdict(state)
    ref = rundir.read_json(rd.reference) if rd.reference.exists() else {}
    session = state.sessions[-1] if state.sessions else None
    met = bool(end and end.target_met)
    lines = [f"# forge run: {cfg.task or rd.task().name}", "", summary_line(state), ""]
    if verdict is not None:
        lines.append(f"Verdict shown: {source} by {verdict.judge or 'an unnamed judge'}; "
                     f"{len(timed(verdict))} timed workload(s), timings labelled `{timing_label(verdict)}`.")
        held = (verdict.profile or {}).get("sandbox")
        if held:
            lines.append(f"Candidate code ran in: {held}.")
        if libs := (verdict.profile or {}).get("library_ops"):
            lines.append("Library parts: " + ", ".join(f"aten.{op}" for op in libs) + " ran in PyTorch's "
                         "library (cuDNN, cuBLAS), not in the kernel's own code, as the task's [policy] "
                         "library_ops allows.")
    lines += ["", f"**Target: {target:g}x the reference -- {'met' if met else 'NOT met'}** "
              f"(exit code {0 if met else 2}). Stopped: {end.reason if end else 'not finished'}.", "",
              *[f"Next: {line}." for line in next_steps(rd, state)], "",
              *_bound_lines(ref, target),
              f"- run dir: `{rd.root}`",
              f"- delivery: {session.delivery if session else cfg.delivery}; agent: "
              f"{session.agent if session else cfg.agent}; architect: "
              f"{session.architect if session else cfg.architect}",
              f"- attempts: {state.iterations}; re-plans: {_replans(state)}; wall minutes: "
              f"{state.minutes():.1f}; agent dollars: {state.dollars():.2f}{_unpriced(state)}", "",
              "## Workloads", "", *workload_table(verdict, ref.get("floors", [])), "",
              "## Milestones", "", *milestone_lines(state), "", "## Attempts", "",
              *attempt_lines(state, cfg.engine.noise_floor),
              "", "## Plots", ""]
    lines += [f"![{name}]({path})" if path else name for name, path in plots.items()] \
        or ["No plot (nothing was timed)."]
    lines += ["", "## Files", "", "- `best/kernel.py`, `best/verdict.json`" if state.best else
              "- no best kernel", "- `ledger.jsonl` (every attempt), `curriculum.v*.toml` (every plan)", ""]
    return "\n".join(lines)


def next_steps(rd: rundir.RunDir, state: RunState) -> list[str]:
    """What to do next, one line per way the run ended (see forgekernel.run.explain)."""
    verdict, _ = best_verdict(state)
    session = state.sessions[-1] if state.sessions else None
    cpu = timing_label(verdict) == "cpu-interpret" if verdict is not None else bool(
        session and session.delivery == "cpu")
    return explain.next_steps(state, rd.root, rd.task_dir, rd.best_kernel, cpu)


def _replans(state: RunState) -> str:
    closing = len(state.closing_only)
    return f"{state.replans}" + (f" (and {closing} that only closed exhausted work, not counted)"
                                 if closing else "")


def _bound_lines(ref: dict[str, Any], target: float) -> list[str]:
    from forgekernel.run.analysis import bound_note, speedup_bound

    note = bound_note(speedup_bound(ref), target)
    return [f"{note[0].upper()}{note[1:]}.", ""] if note else []


def write(rd: rundir.RunDir, state: RunState | None = None) -> Path:
    """Rebuild report.md (and the plots) from the run's records."""
    from forgekernel.report.plots import write_plots
    from forgekernel.run import ledger

    if state is None:
        state = replay(ledger.read(rd.ledger, rd.ledger_key())[0], rd.config.engine.max_retries, str(rd.ledger))
    verdict, _ = best_verdict(state)
    ref = rundir.read_json(rd.reference) if rd.reference.exists() else {}
    target = rd.target
    try:
        plots = {k: f"plots/{Path(v).name}" for k, v in
                 write_plots(rd.plots, state, verdict, ref.get("floors", []), target).items()}
    except ImportError as exc:  # matplotlib missing (a bare GPU host): say so, keep the report
        plots = {f"no plot: matplotlib is not available ({exc})": ""}
    rundir.atomic_write(rd.report, render(rd, state, plots))
    return rd.report


def _unpriced(state: RunState) -> str:
    """A note naming the models whose tokens were counted but not priced (cost $0)."""
    from forgekernel.prices import unpriced

    costs = [a.agent for a in state.attempts.values()] + [p.agent for p in state.plans]
    models = {c.model for c in costs if c.agent != "claude-code" and c.input_tokens + c.output_tokens}
    names = unpriced(models)
    return f" (no price known for {', '.join(names)}: their tokens are counted, not priced)" if names else ""
