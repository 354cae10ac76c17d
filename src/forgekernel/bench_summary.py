"""A bench's summary from its results: KernelBench's metrics, a table and a plot.

Metrics over every problem of the bench (a problem that failed to convert or run counts
as not correct): the correct rate; ``fast_p``, the share of problems that are correct AND
faster than the baseline by more than ``p`` (fast_0 = correct, fast_1 = faster than the
baseline); and the geometric mean speedup over the correct problems. Baselines: eager
PyTorch (the judge's reference timing) and, where the bench timed it, torch.compile.
Timings from the CPU interpreter say nothing about speed: their speed metrics are null and
every place that shows them says ``cpu-interpret``.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any


def metrics(rows: list[dict[str, Any]], total: int) -> dict[str, Any]:
    """Correct rate, fast_0/fast_1 and geometric means, against eager and torch.compile."""
    correct = [r for r in rows if r.get("correct")]
    timed = [r for r in correct if r.get("timing") == "device" and r.get("speedup")]
    out: dict[str, Any] = {"problems": total, "finished": len(rows), "correct": len(correct),
                           "correct_rate": len(correct) / total if total else None,
                           "fast_0": len(correct) / total if total else None}
    speed_known = bool(timed) or not correct
    for base, key in (("eager", "speedup"), ("compile", "speedup_compile")):
        vals = [r[key] for r in timed if isinstance(r.get(key), (int, float)) and r[key] > 0]
        out[f"fast_1_{base}"] = (sum(v > 1.0 for v in vals) / total) if total and speed_known and vals else None
        out[f"geomean_{base}"] = statistics.geometric_mean(vals) if vals else None
        out[f"timed_{base}"] = len(vals)
    out["timing"] = "device" if timed else ("cpu-interpret" if correct else "none")
    return out


def write(root: Path, problems: list[Any], settings: Any, done: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """summary.json, summary.md and summary.png from the bench dir's problems, settings and
    results so far (:func:`forgekernel.bench.summary` reads them)."""
    rows = [done[p.slug] for p in problems if p.slug in done]
    summary = {"bench": str(root), "settings": vars(settings), "metrics": metrics(rows, len(problems)),
               "failures": [{"slug": r["slug"], "stage": r.get("stage", "judge"),
                             "why": r.get("error") or _logged(root, r) or _why_not(r)}
                            for r in rows if not r.get("correct")],
               "results": rows, "gpu_lock": gpu_lock(root / "gpu_lock.jsonl")}
    (root / "summary.json").write_text(json.dumps(summary, indent=2))
    (root / "summary.md").write_text(markdown(summary))
    _plot(rows, root / "summary.png")
    return summary


WORKERS = {"forgekernel.judge.worker": "judge", "forgekernel.compare.worker": "compare",
           "forgekernel.profile.worker": "profile"}


def gpu_lock(path: Path) -> list[dict[str, Any]]:
    """Per kind of GPU job, from the lock log: jobs, seconds waiting for the GPU and holding it
    (empty without a log; a torn line is skipped)."""
    kinds: dict[str, dict[str, Any]] = {}
    try:
        text = path.read_text()
    except OSError:
        return []
    for line in text.splitlines():
        try:
            rec = json.loads(line)
            kind = WORKERS.get(rec["module"], rec["module"])
            row = kinds.setdefault(kind, {"kind": kind, "jobs": 0, "wait_s": 0.0, "held_s": 0.0,
                                          "exclusive_s": 0.0})
            row["jobs"] += 1
            row["wait_s"] = round(row["wait_s"] + float(rec["wait_s"]), 3)
            row["held_s"] = round(row["held_s"] + float(rec["held_s"]), 3)
            row["exclusive_s"] = round(row["exclusive_s"] + float(rec.get("exclusive_s", 0.0)), 3)
        except (ValueError, KeyError, TypeError):
            continue
    return sorted(kinds.values(), key=lambda r: -r["held_s"])


def _logged(root: Path, row: dict[str, Any]) -> str:
    """The last `forge: error` line of a problem's run log, for a run that judged nothing
    (results recorded before the runner kept that line)."""
    if row.get("statuses"):
        return ""
    log = root / "problems" / str(row.get("slug", "")) / "run.log"
    try:
        lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.startswith("forge: error")]
    except OSError:
        return ""
    return lines[-1].removeprefix("forge: error: ")[:300] if lines else ""


def _why_not(row: dict[str, Any]) -> str:
    statuses = row.get("statuses") or {}
    if not statuses:
        return "no attempt was judged"
    return "no candidate passed: " + ", ".join(f"{k} x{v}" for k, v in sorted(statuses.items()))


def _fmt(value: Any, pct: bool = False) -> str:
    if value is None:
        return "-"
    return f"{100 * value:.1f}%" if pct else f"{value:.3g}"


def markdown(summary: dict[str, Any]) -> str:
    m = summary["metrics"]
    label = " (cpu-interpret: speed not meaningful)" if m["timing"] == "cpu-interpret" else ""
    lines = [f"# forge bench: {m['correct']} of {m['problems']} correct{label}", "",
             "| metric | value |", "|---|---|",
             f"| correct rate (fast_0) | {_fmt(m['correct_rate'], True)} |",
             f"| fast_1 vs eager | {_fmt(m['fast_1_eager'], True)} |",
             f"| fast_1 vs torch.compile | {_fmt(m['fast_1_compile'], True)} |",
             f"| geomean speedup vs eager ({m['timed_eager']} timed) | {_fmt(m['geomean_eager'])} |",
             f"| geomean speedup vs torch.compile ({m['timed_compile']} timed) | "
             f"{_fmt(m['geomean_compile'])} |", "",
             "| problem | correct | attempts | speedup vs eager | vs torch.compile | timing | note |",
             "|---|---|---|---|---|---|---|"]
    for r in summary["results"]:
        note = ((r.get("error") or "") if not r.get("correct") else r.get("compile_note", "")) or r.get("restarted", "")
        note = note[:80].replace("|", "/")
        lines.append(f"| {r['slug']} | {'yes' if r.get('correct') else 'no'} | {r.get('attempts', '-')} | "
                     f"{_fmt(r.get('speedup'))} | {_fmt(r.get('speedup_compile'))} | "
                     f"{r.get('timing') or '-'} | {note} |")
    if summary.get("gpu_lock"):
        lines += ["", "## The GPU's time (lock log: `gpu_lock.jsonl`)", "",
                  "| job | jobs | waiting for the GPU (s) | holding it (s) | of which alone (s) |",
                  "|---|---|---|---|---|"]
        lines += [f"| {r['kind']} | {r['jobs']} | {r['wait_s']:.1f} | {r['held_s']:.1f} | "
                  f"{r.get('exclusive_s', 0.0):.1f} |" for r in summary["gpu_lock"]]
    if summary["failures"]:
        lines += ["", "## Not correct", ""]
        lines += [f"- {f['slug']} ({f['stage']}): {f['why']}" for f in summary["failures"]]
    return "\n".join(lines) + "\n"


def _plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    timed = [r for r in rows if r.get("correct") and r.get("timing") == "device" and r.get("speedup")]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.28 * len(rows)), 3.6))
    if timed:
        names = [r["slug"][:24] for r in timed]
        ax.bar(range(len(timed)), [r["speedup"] for r in timed], label="vs eager")
        comp = [r.get("speedup_compile") or 0 for r in timed]
        ax.scatter(range(len(timed)), comp, color="black", s=10, zorder=3, label="vs torch.compile")
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_yscale("log")
        ax.set_xticks(range(len(timed)), names, rotation=90, fontsize=6)
        ax.set_ylabel("speedup (device time)")
        ax.legend(fontsize=7)
    else:
        ok = sum(1 for r in rows if r.get("correct"))
        ax.bar(["correct", "not correct"], [ok, len(rows) - ok], color=["tab:green", "tab:red"])
        ax.set_title("cpu-interpret: correctness only" if rows else "no results yet", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
