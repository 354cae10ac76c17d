"""The timing phase of a judgement (after correctness passed), measured by the verifier.

Per timed workload, reference / candidate / reference again, each on fresh inputs from
secret seeds. On a GPU the candidate's calls run as gated batches in its executor and the
verifier's clock times them (:mod:`forgekernel.judge.gated`); on the CPU interpreter the
verifier's clock times single calls (labelled cpu-interpret). The reference always runs
in the verifier, which never imported candidate code. The noise floor is the relative
difference between the two reference series. Outputs of timed calls are verified against
the oracle afterwards (docs/judge.md threat model A4, B10, B15); a time beyond the roofline
floor is rejected (A7).
"""

from __future__ import annotations

import secrets
import statistics
import time
from typing import Any

from forgekernel.judge import inputs as inp
from forgekernel.judge.timed import summarise_sides, verify_timed

_perf = time.perf_counter  # bound at import, before any candidate code exists

CPU_ROUNDS, CPU_WARMUP = 3, 1
TAIL_SLACK_MS = 0.02
"""Device work may outlive the end event by this much (plus half the call) beyond the
reference's own tail before it counts as work left running on another stream."""


def timed_slots(session: Any) -> list[Any]:
    """GPU: the visible non-smoke workloads (all visible if none); CPU: the visible ones."""
    vis = session.visible
    if session.cuda:
        return [s for s in vis if not s.wl.smoke] or vis
    return vis


def run(session: Any) -> dict[str, Any]:
    """Time every timed workload; returns {'timings': {label: fields}, 'noise_floor', ...}."""
    clock = session.clock
    timings, noise, host, graphs, flags = {}, [], {}, {}, []
    for slot in timed_slots(session):
        t = time_slot(session, slot, clock)
        timings[slot.label] = t["fields"]
        noise.append(t["noise"])
        host[slot.label] = t["host_ms"]
        flags.extend(t["flags"])
        if session.opts.graphs and session.cuda:
            graphs[slot.label] = graph_slot(session, slot, clock)
    speedups = [f["speedup"] for f in timings.values() if f["speedup"]]
    geo = statistics.geometric_mean(speedups) if speedups else None
    return {"timings": timings, "noise_floor": max(noise) if noise else None, "speedup": geo,
            "host_ms": host, "flags": flags, "cuda_graph": graphs}


def time_slot(session: Any, slot: Any, clock: Any) -> dict[str, Any]:
    """GPU: gated batches the verifier times (:mod:`forgekernel.judge.gated`); CPU: the
    verifier's wall clock around single calls (cpu-interpret)."""
    if session.cuda:
        from forgekernel.judge import gated

        return gated.time_slot(session, slot)
    return _time_cpu(session, slot)


def _time_cpu(session: Any, slot: Any) -> dict[str, Any]:
    from forgekernel.judge.session import key

    problem, wl = session.problem, slot.wl
    n = session.opts.reps or CPU_ROUNDS
    timeout = session.timeout_for(slot)
    ref_fn = problem.reference_callable(wl)

    def reference(args: list[Any]) -> float:
        if session.perf is not None:
            return session.perf.repeat(slot, key(slot), args, 1, timeout)
        start = _perf()
        ref_fn(*args)
        return _perf() - start

    check = {secrets.randbelow(n), n - 1}

    def candidate(args: list[Any], r: int) -> float:
        start = _perf()
        outs, _ = session.call(slot, args, None, reuse=True, observe=False)
        seconds = _perf() - start
        if r in check:  # a secret round and the last: the answer of a timed call
            verify_timed(session, slot, args, outs, r == n - 1)
        return seconds

    sides: dict[str, Any] = {"ref1": [], "cand": [], "ref2": []}
    for r in range(-CPU_WARMUP, n):
        for name in ("ref1", "cand", "ref2"):
            args = problem.make(wl, inp.secret_seed())
            seconds = candidate(args, r) if name == "cand" else reference(args)
            if r >= 0:
                sides[name].append(seconds * 1e3)
    series = {name: _Samples(ms, ms) for name, ms in sides.items()}
    return summarise_sides(session, slot, series, "cpu-interpret", 1)


class _Samples:
    """Per-call milliseconds of one side (device and host figures)."""

    def __init__(self, per_call_ms: list[float], host_ms: list[float]) -> None:
        self.per_call_ms, self.host_ms = per_call_ms, host_ms


def graph_slot(session: Any, slot: Any, clock: Any) -> dict[str, Any]:
    """CUDA-graph replay timing: not offered while the candidate runs in its own sandboxed
    process (a graph cannot be captured across processes)."""
    return {"error": "CUDA-graph replay of the candidate is not available: it runs in a separate, "
                     "sandboxed process"}
