"""The report's PNG plots (matplotlib, Agg canvas; no pyplot global state)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from forgekernel.records import Verdict
from forgekernel.run.state import RunState


def _figure(w: float = 7.0, h: float = 4.0):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(w, h), dpi=100)
    FigureCanvasAgg(fig)
    return fig


def speedup_plot(path: Path, state: RunState, target: float) -> bool:
    """Speedup of every passed attempt, the best so far, the target line."""
    pts = [(q, a.verdict.speedup) for q, a in sorted(state.attempts.items())
           if a.verdict is not None and a.verdict.speedup is not None]
    if not pts:
        return False
    labels = {w.timing_label for a in state.attempts.values() if a.verdict
              for w in a.verdict.workloads if w.timing_label}
    fig = _figure()
    ax = fig.add_subplot()
    ax.set_yscale("log")  # speedups are ratios; interpreter runs sit far below 1
    ax.plot([p[0] for p in pts], [p[1] for p in pts], "o", label="passed attempt")
    best, steps = None, []
    for q, a in sorted(state.attempts.items()):
        if a.best and a.verdict and a.verdict.speedup is not None:
            best = a.verdict.speedup
        steps.append((q, best))
    ax.step([s[0] for s in steps], [s[1] for s in steps], where="post", label="best so far")
    failed = sorted(q for q, a in state.attempts.items() if not a.accepted)
    floor = min(min(p[1] for p in pts), target) / 2
    if failed:
        ax.plot(failed, [floor] * len(failed), "x", color="tab:red", label="not passed")
    ax.axhline(target, linestyle="--", color="gray", label=f"target {target:g}x")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel("attempt")
    ax.set_ylabel("speedup vs reference" + (" (cpu-interpret)" if "cpu-interpret" in labels else ""))
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    return True


def _points(verdict: Verdict, floors: list[dict[str, Any]]) -> list[tuple[str, dict, Any]]:
    by_axes = {tuple(sorted(f["axes"].items())): f for f in floors if f.get("floor_ms")}
    out = []
    for w in verdict.workloads:
        f = by_axes.get(tuple(sorted(w.axes.items())))
        if not w.hidden and f is not None and w.median_ms and w.timing_label == "device":
            out.append((" x ".join(f"{k}={v}" for k, v in w.axes.items()), f, w))
    return out


def roofline_plot(path: Path, verdict: Verdict | None, floors: list[dict[str, Any]]) -> bool:
    """Each workload on the roofline: achieved TFLOP/s over arithmetic intensity when the
    task has a flop count, else the fraction of the floor reached (%SOL) per workload.

    Only device timings are plotted: an interpreter's time says nothing about a GPU roofline.
    """
    pts = _points(verdict, floors) if verdict is not None else []
    if not pts:
        return False
    fig = _figure(max(6.0, 1.3 * len(pts)), 4.0)
    ax = fig.add_subplot()
    if all(f.get("flops") and f.get("peak_tflops") for _, f, _ in pts):
        for label, f, w in pts:
            ai = f["flops"] / f["bytes"]
            ax.loglog([ai], [f["flops"] / w.median_ms / 1e9], "o", label=f"best {label}")
            if w.reference_ms:
                ax.loglog([ai], [f["flops"] / w.reference_ms / 1e9], "s", mfc="none", label=f"reference {label}")
            ridge = [ai / 8, ai * 8]
            ax.loglog(ridge, [min(f["peak_tflops"], f["bandwidth_tbs"] * x) for x in ridge], "k-", lw=0.8)
        ax.set_xlabel("arithmetic intensity (flop / minimal byte)")
        ax.set_ylabel("TFLOP/s (device median)")
    else:
        xs = list(range(len(pts)))
        ref = [100 * f["floor_ms"] / w.reference_ms if w.reference_ms else 0 for _, f, w in pts]
        ax.bar([x - 0.2 for x in xs], ref, width=0.4, label="reference")
        ax.bar([x + 0.2 for x in xs], [100 * f["floor_ms"] / w.median_ms for _, f, w in pts],
               width=0.4, label="best")
        ax.axhline(100, linestyle="--", color="gray", label="roofline floor")
        ax.set_xticks(xs, [p[0] for p in pts], rotation=20, fontsize=7)
        ax.set_ylabel("% of speed of light (floor / median)")
        ax.set_title("each workload against its roofline floor (device timings)", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    return True


def write_plots(out: Path, state: RunState, verdict: Verdict | None, floors: list[dict[str, Any]],
                target: float) -> dict[str, Path]:
    """Write the plots that have data; returns name -> path."""
    out.mkdir(parents=True, exist_ok=True)
    done = {}
    if speedup_plot(out / "speedup.png", state, target):
        done["speedup over attempts"] = out / "speedup.png"
    if roofline_plot(out / "roofline.png", verdict, floors):
        done["workloads on the roofline"] = out / "roofline.png"
    return done
