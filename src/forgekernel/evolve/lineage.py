"""The chain's record: lineage.json (one entry per finished generation), lineage.md, lineage.png.

An entry holds the generation, its run dir, the hash of its performance reference (the
task snapshot's hash for generation 0, else the previous generation's best), its best's
hash, the best's speedup over that reference and the noise floor (both from the best's
final confirmation), the speedup over the task's own reference (measured by judging the
sealed kernel against it, and chained: the product of the per-generation speedups), and
what the stop rule decided. ``stop`` says why the chain ended; ``best`` is the chain's best
(the last generation whose best counted).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from forgekernel.run import rundir

CPU_NOTE = ("These timings are **cpu-interpret**: they time the Triton interpreter on a CPU, not a "
            "GPU, and say nothing about kernel speed. A CPU chain proves the mechanics: sealing, "
            "hashes, each generation timed against the previous best, carry-over, resume, and the "
            "stop rule's bookkeeping.")


def new(root: Path, meta: dict[str, Any], task_hash: str) -> dict[str, Any]:
    """An empty lineage for the chain at ``root`` (``meta``: evolve.toml)."""
    return {"task": meta["task"], "chain_dir": str(root), "created": meta.get("created", ""),
            "options": meta.get("options", {}), "original_reference_hash": task_hash,
            "generations": [], "stop": None, "best": None}


def load(root: Path) -> dict[str, Any] | None:
    path = Path(root) / "lineage.json"
    return json.loads(path.read_text()) if path.exists() else None


def _fmt(x: float | None, spec: str = ".4g", suffix: str = "") -> str:
    return "-" if x is None else f"{format(x, spec)}{suffix}"


def append(data: dict[str, Any], entry: dict[str, Any], decision: Any) -> dict[str, Any]:
    """``data`` with generation ``entry`` added and the stop rule's ``decision`` applied."""
    gens = list(data["generations"])
    prev = gens[-1] if gens else None
    x = entry.get("speedup")
    base = 1.0 if prev is None else prev.get("speedup_vs_original_chained")
    entry = {**entry, "speedup_vs_original_chained": None if x is None or base is None else base * x,
             "counts": decision.counts, "rule": decision.rule, "beats_noise": decision.beats_noise,
             "decision": "continue" if decision.stop_kind is None else "stop",
             "stop_reason": decision.stop_reason or None}
    gain = "" if x is None else (f", noise floor {_fmt(entry.get('noise_floor'), '.2%')}"
                                 f" ({'beats' if decision.beats_noise else 'within'} it)")
    entry["summary"] = (f"best {entry['best_hash']} at {_fmt(x, '.4g', 'x')} its reference "
                        f"({entry.get('timing')}){gain}; " if entry.get("best_hash") else "no best; ") \
        + ("next generation" if decision.stop_kind is None else decision.stop_reason)
    gens.append(entry)
    out = {**data, "generations": gens}
    if decision.stop_kind is not None:
        out = stopped(out, decision.stop_kind, decision.stop_reason, entry["generation"])
    return out


def stopped(data: dict[str, Any], kind: str, reason: str, generation: int) -> dict[str, Any]:
    """``data`` with the chain's stop and its best filled in."""
    counted = [e for e in data["generations"] if e.get("counts")]
    best = None
    if counted:
        e = counted[-1]
        best = {"generation": e["generation"], "hash": e["best_hash"], "sealed": e.get("sealed"),
                "speedup_vs_original": e.get("speedup_vs_original"),
                "speedup_vs_original_chained": e.get("speedup_vs_original_chained"),
                "timing": e.get("timing"), "rule": e.get("rule")}
    return {**data, "stop": {"kind": kind, "reason": reason, "generation": generation}, "best": best}


def best_line(data: dict[str, Any]) -> str:
    b = data.get("best")
    if not b:
        return "chain best: none -- no generation's best counted (nothing correct, or none beat the task's reference)"
    return (f"chain best: generation {b['generation']} ({b['hash']}) -- "
            f"{_fmt(b.get('speedup_vs_original'), '.4g', 'x')} the task's reference measured, "
            f"{_fmt(b.get('speedup_vs_original_chained'), '.4g', 'x')} chained ({b.get('timing')})"
            + ("" if b.get("rule") == "applied" else
               f"; the noise rule was not applied ({b.get('rule')})"))


def markdown(data: dict[str, Any]) -> str:
    gens = data["generations"]
    stop = data.get("stop")
    lines = [f"# Self-evolution lineage: {data['task']}", "",
             stop["reason"] if stop else "running: no stop yet", "", best_line(data), ""]
    if any(e.get("timing") == "cpu-interpret" for e in gens):
        lines += [CPU_NOTE, ""]
    lines += ["| gen | run dir | reference | best | x its reference | noise floor | gain > noise | "
              "x task reference (measured) | x task reference (chained) | timing | decision |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for e in gens:
        beats = {True: "yes", False: "no", None: "-"}[e.get("beats_noise")]
        ref = e["reference"] if e["generation"] == 0 else f"gen {e['generation'] - 1}"
        lines.append(f"| {e['generation']} | {e['run_dir']} | {ref} `{e['reference_hash']}` | "
                     f"`{e.get('best_hash') or '-'}` | {_fmt(e.get('speedup'), '.4g', 'x')} | "
                     f"{_fmt(e.get('noise_floor'), '.2%')} | {beats} | "
                     f"{_fmt(e.get('speedup_vs_original'), '.4g', 'x')} | "
                     f"{_fmt(e.get('speedup_vs_original_chained'), '.4g', 'x')} | {e.get('timing') or '-'} | "
                     f"{e.get('stop_reason') or e['decision']} |")
    rule = data.get("options", {}).get("noise_rule", "auto")
    lines += ["", "![cumulative speedup](lineage.png)", "",
              "- Correctness is always checked against the task's PyTorch reference in float64; "
              "only the timing reference changes from generation to generation.",
              "- *x its reference* and *noise floor* come from the best's final confirmation: the best "
              "re-timed against its reference, interleaved, with the noise floor the reference timed "
              "against itself in the same judgement on the same device.",
              f"- Noise rule `{rule}`: " + _rules(gens) + "."]
    return "\n".join(lines) + "\n"


def _rules(gens: list[dict[str, Any]]) -> str:
    rules = [e.get("rule") for e in gens]
    if rules and len(set(rules)) == 1:
        return f"{rules[0]} (every generation)"
    return "; ".join(f"gen {e['generation']}: {e.get('rule')}" for e in gens)


def plot(path: Path, data: dict[str, Any]) -> bool:
    """Cumulative speedup over the task's reference per generation (PNG, Agg canvas)."""
    gens = [e for e in data["generations"] if e.get("best_hash")]
    if not gens:
        return False
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.0, 4.0), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for key, style, label in (("speedup_vs_original_chained", "-o", "chained (product of generations)"),
                              ("speedup_vs_original", "s", "measured against the task's reference")):
        pts = [(e["generation"], e[key]) for e in gens if e.get(key)]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=label)
    steps, top = [], None
    for e in gens:  # the chain's best so far: the last generation whose best counted
        if e.get("counts"):
            top = e.get("speedup_vs_original") or e.get("speedup_vs_original_chained")
        steps.append((e["generation"], top))
    if any(s[1] for s in steps):
        ax.step([s[0] for s in steps], [s[1] for s in steps], where="post", color="tab:green",
                alpha=0.6, label="chain best so far")
    values = [e[k] for e in gens for k in ("speedup_vs_original", "speedup_vs_original_chained") if e.get(k)]
    if values and max(*values, 1.0) / min(*values, 1.0) > 20:  # the 1.0 line is drawn too
        ax.set_yscale("log")
    ax.axhline(1.0, linestyle="--", color="gray", label="task reference")
    cpu = any(e.get("timing") == "cpu-interpret" for e in gens)
    ax.set_xlabel("generation")
    ax.set_xticks([e["generation"] for e in gens])
    ax.set_ylabel("speedup over the task's reference" + (" (cpu-interpret)" if cpu else ""))
    ax.set_title(f"{data['task']}: self-evolution" + (" -- cpu-interpret timings" if cpu else ""))
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    return True


def write(root: Path, data: dict[str, Any]) -> None:
    """lineage.json (atomically), then lineage.md and lineage.png."""
    root = Path(root)
    rundir.write_json(root / "lineage.json", data)
    rundir.atomic_write(root / "lineage.md", markdown(data))
    plot(root / "lineage.png", data)
