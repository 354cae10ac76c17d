"""Self-evolution: a chain of runs in which every generation's best becomes the next reference.

Generation 0 is an ordinary run (``rundir.create`` + ``engine.run``, as ``forge run``)
against the task's PyTorch reference. When a generation ends with an accepted best, that
kernel is sealed (:mod:`forgekernel.evolve.reference`) and generation k+1 is a new run whose
*performance* reference is that kernel; the *correctness* oracle is always the task's
reference in float64 (the judge's own rule). The next run starts from the previous one's
outcome (:mod:`forgekernel.evolve.carry`).

Stop rule, checked after each generation on its best's final confirmation verdict (the
best re-timed against its reference, interleaved, with the noise floor measured as the
reference against itself in the same judgement):

* nothing correct: the generation has no best (or the best failed its confirmation);
* unchanged: the best is the performance reference itself (the same files);
* noise floor: ``speedup - 1 <= noise_floor``, when the rule applies: always with
  ``noise_rule='on'``, never with ``'off'``, and with ``'auto'`` only for device timings;
  cpu-interpret timings time the Triton interpreter, not a GPU, so under 'auto' a CPU
  chain records them (labelled) but does not stop on them;
* the generation count (``--generations``), or the chain's time budget.

The chain dir (:mod:`forgekernel.evolve.chain`): ``evolve.toml``, ``task/``, ``gen_<k>/`` run
dirs, ``sealed/``, and ``lineage.json`` (:mod:`forgekernel.evolve.lineage`), which gains one
entry per finished generation and is the chain's commit point: a killed chain resumes with
the first generation it lacks (a half-finished run resumes through the engine).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from forgekernel.config import Settings
from forgekernel.evolve import carry as evolve_carry
from forgekernel.evolve import lineage as evolve_lineage
from forgekernel.evolve import reference as evolve_ref
from forgekernel.evolve.chain import (
    CPU_ITERATIONS,
    NOISE_RULES,
    Chain,
    ChainOptions,
    EvolveError,
    create,
    is_chain,
    locked,
    open_chain,
)
from forgekernel.protocols import Progress
from forgekernel.records import Verdict
from forgekernel.report import markdown as report
from forgekernel.run import engine, rundir
from forgekernel.run.parts import ProgressEvent
from forgekernel.run.state import RunState

__all__ = ["CPU_ITERATIONS", "NOISE_RULES", "Chain", "ChainOptions", "ChainOutcome", "Decision",
           "EvolveError", "Parts", "create", "decide", "evolve", "is_chain", "open_chain"]


@dataclass
class Parts:
    """The concrete pieces every generation runs with (picked by the CLI or a test)."""

    agents: Callable[[int], tuple[Any, Any]]
    """generation -> (coder, architect)."""
    judge: Callable[..., Verdict]
    """``judge(task, candidate_dir, runner, options=None)``: forgekernel.judge.judge or alike."""
    runner: Any
    settings: Settings
    hasher: Callable[[Path], str] = rundir.content_hash
    profiler: Any = None
    prescriber: Any = None
    check_command: Callable[[rundir.RunDir], tuple[str, ...]] | None = None
    profile_command: Callable[[rundir.RunDir], tuple[str, ...]] | None = None
    progress: Progress | None = None


@dataclass(frozen=True)
class Decision:
    """What a finished generation means for the chain."""

    counts: bool
    """The generation's best is the chain's new best."""
    stop_kind: str | None
    """None (go on), nothing_correct, confirmation_failed, unchanged, noise_floor, generations, budget."""
    stop_reason: str
    rule: str
    beats_noise: bool | None


@dataclass(frozen=True)
class ChainOutcome:
    """How ``forge evolve`` ended. ``exit_code`` is 0 when some generation sealed a best."""

    root: Path
    generations: int
    stop_kind: str
    stop_reason: str
    best: dict[str, Any] | None

    @property
    def exit_code(self) -> int:
        return 0 if self.best else 2


def evolve(chain_dir: str | Path, parts: Parts) -> ChainOutcome:
    """Run (or resume) the chain in ``chain_dir`` until its stop rule says stop."""
    chain = open_chain(chain_dir)
    opts = chain.options()
    with locked(chain.root / ".lock"):
        data = evolve_lineage.load(chain.root) or evolve_lineage.new(
            chain.root, chain.meta(), parts.hasher(chain.task_dir))
        _verify(chain, data, parts.hasher)
        while data["stop"] is None:
            k = len(data["generations"])
            spent = _budget_spent(chain, k, opts)
            if spent:
                data = evolve_lineage.stopped(data, "budget", spent, k - 1)
                break
            rd = _prepare(chain, k, data, parts, opts)
            _run(rd, k, parts)
            entry, decision = _close(chain, rd, k, data, parts, opts)
            data = evolve_lineage.append(data, entry, decision)
            evolve_lineage.write(chain.root, data)
            _say(parts, f"generation {k}: {data['generations'][-1]['summary']}")
        evolve_lineage.write(chain.root, data)
    stop = data["stop"]
    return ChainOutcome(chain.root, len(data["generations"]), stop["kind"], stop["reason"], data["best"])


def decide(generation: int, generations: int, rule: str, verdict: Verdict | None,
           unchanged: bool = False) -> Decision:
    """The stop rule (see the module docstring) for a generation's confirmed best.

    ``unchanged``: the best is the generation's performance reference itself (same hash).
    """
    if verdict is None:
        return Decision(False, "nothing_correct", f"stopped: generation {generation} found no correct kernel",
                        "-", None)
    if not verdict.passed:
        return Decision(False, "confirmation_failed", f"stopped: the best of generation {generation} failed its "
                        f"final confirmation ({verdict.status.value}: {verdict.reason[:160]})", "-", None)
    label = report.timing_label(verdict)
    applied = rule == "on" or (rule == "auto" and label != "cpu-interpret")
    x, noise = verdict.speedup, verdict.noise_floor or 0.0
    beats = None if x is None else (x - 1.0) > noise
    how = "applied" if applied else ("off" if rule == "off" else
                                      "not applied: cpu-interpret timings time the Triton interpreter, not a GPU")
    if unchanged:
        return Decision(False, "unchanged", f"stopped: generation {generation}'s best is its reference "
                        f"itself (the same files): no new kernel beat it", how, beats)
    if applied and not beats:
        what = ("has no timing to compare with its reference" if x is None else
                f"is {x:.4g}x its reference ({label}): a gain of {x - 1:+.2%}, not above the "
                f"noise floor {noise:.2%}")
        return Decision(False, "noise_floor", f"stopped on the noise floor: generation {generation}'s "
                        f"best {what}", how, beats)
    if generation + 1 >= generations:
        return Decision(True, "generations", f"stopped after {generations} generation(s) "
                        "(--generations)", how, beats)
    return Decision(True, None, "", how, beats)


# ---------------------------------------------------------------- steps


def _verify(chain: Chain, data: dict[str, Any], hasher: Callable[[Path], str]) -> None:
    """Every sealed kernel still hashes as recorded; each generation names its predecessor."""
    for e in data["generations"]:
        if e.get("best_hash"):
            evolve_ref.verify(chain.sealed(e["generation"]), e["best_hash"], hasher)
    for prev, e in zip(data["generations"], data["generations"][1:], strict=False):
        if e["reference_hash"] != prev["best_hash"]:
            raise EvolveError(f"{chain.root}: generation {e['generation']} names reference "
                              f"{e['reference_hash']}, not generation {prev['generation']}'s best "
                              f"{prev['best_hash']}")


def _budget_spent(chain: Chain, k: int, opts: ChainOptions) -> str:
    if opts.chain_minutes is None or k == 0 or chain.gen(k).exists():
        return ""
    used = _minutes_used(chain, k)
    if used >= opts.chain_minutes:
        return f"stopped: the chain's time budget is spent ({used:.1f} of {opts.chain_minutes:g} minutes)"
    return ""


def _minutes_used(chain: Chain, k: int) -> float:
    return sum(engine.load_state(rundir.open(chain.gen(i))).minutes() for i in range(k))


def _prepare(chain: Chain, k: int, data: dict[str, Any], parts: Parts, opts: ChainOptions) -> rundir.RunDir:
    """Generation k's run dir: made whole in a temp dir, then renamed into place."""
    final = chain.gen(k)
    if rundir.is_run_dir(final):
        return rundir.open(final)
    tmp = chain.root / f".gen_{k}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    settings = parts.settings.model_copy(update={"delivery": opts.delivery, "agent": opts.agent,
                                                 "architect": opts.architect, "model": opts.model or None})
    rundir.create(chain.task_dir, settings, tmp, gpu=getattr(parts.runner, "name", "cpu") != "cpu")
    rd = rundir.RunDir(tmp)
    cfg = rd.config.data()
    if opts.max_iterations is not None:
        cfg["budget"]["iterations"] = opts.max_iterations
    minutes = opts.max_minutes if opts.max_minutes is not None else rd.config.budget.minutes
    if opts.chain_minutes is not None:
        minutes = max(0.01, min(minutes, opts.chain_minutes - _minutes_used(chain, k)))
    cfg["budget"]["minutes"] = minutes
    cfg["evolve"] = {"chain": "..", "generation": k}
    rd = rundir.write_config(rd, cfg)
    if k > 0:
        prev = data["generations"][-1]
        evolve_ref.verify(chain.sealed(k - 1), prev["best_hash"], parts.hasher)
        evolve_ref.set_reference(tmp, chain.sealed(k - 1), prev["best_hash"], k - 1)
        rundir.write_json(tmp / evolve_ref.CARRY_FILE, _carried(chain, k - 1))
        first = rundir.RunDir(chain.gen(0)).reference
        if first.exists():  # the same task reference: its analysis is reused, not redone
            shutil.copy2(first, rd.reference)
    os.replace(tmp, final)
    _say(parts, f"generation {k}: created {final}" + (f" (performance reference: generation {k - 1}'s "
                                                     f"best {data['generations'][-1]['best_hash']})" if k else ""))
    return rundir.open(final)


def _carried(chain: Chain, k: int) -> dict[str, Any]:
    state = engine.load_state(rundir.open(chain.gen(k)))
    verdict, _ = report.best_verdict(state)
    return evolve_carry.build(state, k, verdict, report.timing_label(verdict))


def _finished(state: RunState) -> bool:
    return bool(state.ends) and state.ends[-1].after_seq == state.last_seq and state.pending is None


def _run(rd: rundir.RunDir, k: int, parts: Parts) -> None:
    state = engine.load_state(rd)
    if _finished(state):
        if not rd.report.exists():
            report.write(rd, state)
        return
    coder, architect = parts.agents(k)
    architect, judge = evolve_ref.for_run_dir(rd, architect, parts.judge, parts.hasher)
    say = parts.progress or (lambda ev: None)
    engine.run(rd.root, coder, architect, judge, parts.runner, parts.settings,
               progress=lambda ev: say(ProgressEvent(ev.kind, f"gen {k}: {ev.message}", ev.data)),
               profiler=parts.profiler, prescriber=parts.prescriber, hasher=parts.hasher,
               check_command=parts.check_command(rd) if parts.check_command else (),
               profile_command=parts.profile_command(rd) if parts.profile_command else ())


def _close(chain: Chain, rd: rundir.RunDir, k: int, data: dict[str, Any], parts: Parts,
           opts: ChainOptions) -> tuple[dict[str, Any], Decision]:
    """Seal generation k's best, measure it against the task's reference, apply the stop rule."""
    state = engine.load_state(rd)
    best = state.best
    verdict, source = report.best_verdict(state)
    prev = data["generations"][-1] if k else None
    entry: dict[str, Any] = {
        "generation": k, "run_dir": rd.root.name,
        "reference": "task" if k == 0 else f"generation {k - 1} best",
        "reference_hash": data["original_reference_hash"] if prev is None else prev["best_hash"],
        "attempts": state.iterations, "run_stop": state.ends[-1].reason if state.ends else "",
        "best_hash": None, "timing": report.timing_label(verdict) if verdict else None}
    if best is not None:
        evolve_ref.seal(rd.candidate_src(best.candidate), chain.sealed(k), best.candidate, parts.hasher)
        started = state.started.get(best.seq)
        entry.update(best_hash=best.candidate, best_row=best.row, sealed=f"sealed/gen_{k}",
                     best_summary=started.summary if started else "", verdict_source=source,
                     status=verdict.status.value if verdict else None,
                     speedup=verdict.speedup if verdict else None,
                     noise_floor=verdict.noise_floor if verdict else None)
    unchanged = best is not None and best.candidate == entry["reference_hash"]
    if best is not None and not unchanged:  # an unchanged best is not measured again
        entry["speedup_vs_original"] = (verdict.speedup if verdict and k == 0 else
                                        _original(chain, rd, k, best.candidate, parts) if opts.measure_original else None)
    decision = decide(k, opts.generations, opts.noise_rule, verdict if best is not None else None, unchanged)
    return entry, decision


def _original(chain: Chain, rd: rundir.RunDir, k: int, digest: str, parts: Parts) -> float | None:
    """Generation k's sealed best judged against the task's own reference (cached)."""
    path = chain.root / "sealed" / f"gen_{k}.original.json"
    if path.exists():
        return Verdict.model_validate(rundir.read_json(path)).speedup
    _say(parts, f"generation {k}: timing the sealed best against the task's reference")
    with tempfile.TemporaryDirectory(prefix="forge-sealed-") as tmp:
        copy = Path(tmp) / "kernel"
        evolve_ref.verify(chain.sealed(k), digest, parts.hasher)
        rundir.copy_files(chain.sealed(k), copy)
        evolve_ref.verify(copy, digest, parts.hasher)
        verdict = parts.judge(rd.task(), copy, parts.runner)
    rundir.write_json(path, verdict.model_dump(mode="json"))
    return verdict.speedup


def _say(parts: Parts, message: str) -> None:
    if parts.progress is not None:
        parts.progress(ProgressEvent("evolve", message))
