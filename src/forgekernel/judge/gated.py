"""GPU timing the candidate cannot forge: gated batches measured by the verifier's clock.

Per timed workload, rounds of three batches (reference, candidate, reference), each K calls
on K input sets that fill a pool larger than the L2 where the workload allows:

1. the candidate's executor enqueues, on its stream, a gate kernel, the K calls on the pool
   (device memory of the executor's own, which the verifier maps through CUDA IPC to write
   into: :class:`forgekernel.judge.ipc.PeerPool`) and a signal kernel, and says so; its host
   time stays out of the measurement;
2. only then does the verifier write fresh values (from secret seeds) into the pool, so no
   answer can exist before the gate opens;
3. the verifier opens the gate and polls for the signal with its own clock: the batch's
   wall time over K is the per-call device time (a batch whose end the verifier may have
   seen late, having lost its core, is taken again: :class:`_Rounds`);
4. it asks for the outputs of one call it picks afterwards and of the last, and checks them
   against the float64 oracle on the values it wrote; work still running after the signal
   (another stream) is measured by a synchronisation round trip and rejected.

The reference runs the same gated batches in the verifier's own process, which never
imported candidate code.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from forgekernel.judge import gate, ipc, residency
from forgekernel.judge import inputs as inp
from forgekernel.judge.failure import Failure
from forgekernel.records import Status

BATCH_MS, ROUNDS, MAX_K, POOL_MIN_BYTES, POOL_MAX_BYTES = 5.0, 5, 256, 256 << 20, 8 << 30
"""Target device time of a batch, rounds per workload, most calls in a batch, the pool size
to reach (twice the H200's L2 and more), and the most a candidate's pool may hold."""
GATE_TIMEOUT_S = 60.0
TAIL_SLACK_MS = 0.5
"""How much longer than the reference's (median over the batches) the first synchronisation
after a candidate batch's signal may be, beyond a second one on the idle device, before it
counts as work left running on another stream (or half a call, if more). On the H200 the
first synchronisation after a batch costs 0.2-0.35 ms more than the second for correct
kernels too, so a smaller slack rejected them; work hidden below it changes a batch of at
least BATCH_MS by at most a tenth, and the verdict's profile shows the measured tails."""


@dataclass
class _Side:
    """One side's batch samples (ms per call)."""

    per_call_ms: list[float] = field(default_factory=list)
    host_ms: list[float] = field(default_factory=list)


def _input_bytes(args: list[Any]) -> int:
    import torch

    return sum(a.numel() * a.element_size() for a in args if isinstance(a, torch.Tensor))


def calls_per_batch(ref_ms: float, args: list[Any], out_bytes: int = 0) -> int:
    """K: enough calls for a batch of BATCH_MS and a pool of POOL_MIN_BYTES, at most MAX_K,
    and at most what keeps K input sets and K calls' outputs (``out_bytes`` each; a batch
    holds them all until it ends) within POOL_MAX_BYTES; never fewer than 2. A matmul over
    a short K (4 GB out of 16 MB in) took 15 calls and ran an 80 GB card out of memory."""
    by_time = int(BATCH_MS / max(ref_ms, 1e-3)) + 1
    by_pool = -(-POOL_MIN_BYTES // max(_input_bytes(args), 1))
    most = POOL_MAX_BYTES // max(_input_bytes(args) + out_bytes, 1)
    return max(2, min(MAX_K, most, max(by_time, by_pool)))


def candidate_calls(session: Any, slot: Any, ref_ms: float, args: list[Any]) -> int:
    """K of the candidate's batches: sized by the roofline floor (the fastest the candidate
    can be), not by the reference, so that a kernel several times faster than the reference
    still fills a batch of BATCH_MS (three calls of 0.19 ms moved the median by up to 4.7 %
    between two judgements: the gate's fixed latency over K); at most POOL_MAX_BYTES of pool."""
    from forgekernel.judge import audit
    from forgekernel.judge import correctness as cx

    floor = audit.roofline_floor(session.task, slot.wl, [(o.shape, cx.dtype_name(o)) for o in slot.outputs],
                                 session.device_name, session.ceilings)
    return calls_per_batch(min(ref_ms, floor.floor_ms) if floor else ref_ms, args,
                           sum(o.nbytes for o in slot.outputs))


class ReferenceGate:
    """The verifier's own gate, for the reference's batches."""

    def __init__(self) -> None:
        self.words = gate.HostWords()
        self.device = gate.DeviceGate(self.words)
        self.batch = 0

    def time(self, fn: Any, sets: list[list[Any]], refresh: Any) -> tuple[float, float, float, bool]:
        """(ms per call, host ms per call, ms of work after the signal, disturbed)."""
        import torch

        refresh()  # the reference is trusted: its values may be written before it is enqueued
        self.batch += 1
        start = time.perf_counter()
        self.device.wait(self.batch)
        for args in sets:
            fn(*args)
        self.device.signal(self.batch)
        host = (time.perf_counter() - start) * 1e3
        reading = gate.open_and_time(self.words, self.batch, GATE_TIMEOUT_S)
        tail = _synced_twice(torch.cuda.synchronize)
        if reading is None:
            raise RuntimeError("the reference's gated batch did not finish")
        if gate.expired(self.words, self.batch):
            raise RuntimeError("the reference waits on the device inside its call (a host "
                               "synchronisation), so its calls cannot be timed back to back")
        return reading.seconds * 1e3 / len(sets), host / len(sets), tail, reading.disturbed()


def _synced_twice(sync: Any) -> float:
    """Ms the first synchronisation took beyond a second one right after it (idle device)."""
    start = time.perf_counter()
    sync()
    first = time.perf_counter() - start
    start = time.perf_counter()
    sync()
    return max(0.0, (first - (time.perf_counter() - start)) * 1e3)


def _refresh(session: Any, wl: Any, views: list[list[Any]], seeds: list[int]) -> None:
    """Fresh values from ``seeds`` into the pool views, synchronised."""
    import torch

    with session.spent("refresh"):
        for j, seed in enumerate(seeds):
            session.problem.fill(wl, seed, views[j])
        torch.cuda.synchronize()


def time_slot(session: Any, slot: Any) -> dict[str, Any]:
    """The timing fields of one workload from gated batches (see the module docstring)."""
    from forgekernel.judge import timed

    problem, wl = session.problem, slot.wl
    example = problem.make(wl, inp.secret_seed())
    ref_fn = problem.reference_callable(wl)
    with session.spent("setup"):
        ref_est = _estimate_ms(ref_fn, example)
    k_ref = session.opts.reps or calls_per_batch(ref_est, example)
    k = session.opts.reps or candidate_calls(session, slot, ref_est, example)
    slices, nbytes = ipc.layout([a for a in example if hasattr(a, "numel")] * k)
    pool = session.cand.peer_pool(nbytes, slot.label)
    views, descs = _pool_sets(pool, slices, example, k)
    where = session.placement(slot, example)
    del example
    ref_sets = [problem.make(wl, inp.secret_seed()) for _ in range(k_ref)]
    session.cand.pools(slot, pool.describe(), descs)
    run = _Rounds(session, slot, (ref_fn, ref_sets), views, k)
    sides = run.sides()
    last_seeds = run.last_seeds
    ref_sets = run.ref_sets = []  # the reference's input sets: their memory for the checks below
    session.tails[slot.label] = {**_tail(slot, run.tails, run.ref_tails), "retaken": run.retaken,
                                 "disturbed_kept": run.kept}
    picks = sorted({secrets.randbelow(k), k - 1})
    outs = session.cand.collect(slot, picks, keep=where.keep)
    with session.spent("verify_timed"):
        for j, got in zip(picks, outs, strict=True):
            if where.release:  # the timed batches' blocks: the float64 oracle's now
                residency.release(session.torch)
            args = where.hold(problem.make(wl, last_seeds[j]))  # the oracle moves what it needs
            timed.verify_timed(session, slot, args, got, j == k - 1)
    fields = timed.summarise_sides(session, slot, sides, "device", k)
    if run.kept:
        fields["flags"].append(f"{slot.label}: {run.kept} timed batches read while this machine's CPUs were "
                               f"too busy for the verifier to see their end at once ({run.retaken} re-taken "
                               "before): its times are upper bounds; judge on a quieter machine")
    return fields


RETAKES = 3 * ROUNDS
"""Batches a workload may re-take after a disturbed reading (:class:`gate.Reading`)."""


class _Rounds:
    """The timed rounds of one workload: reference, candidate, reference again, a warm-up
    round first. A batch whose reading was disturbed (the verifier lost its core while the
    batch ended) is taken again, up to RETAKES times per workload; readings are upper bounds
    either way, so a re-take only removes the verifier's own delay."""

    def __init__(self, session: Any, slot: Any, reference: tuple[Any, list[list[Any]]],
                 views: list[list[Any]], k: int) -> None:
        self.session, self.slot, self.views, self.k = session, slot, views, k
        self.ref_fn, self.ref_sets = reference
        self.last_seeds: list[int] = []
        self.tails: list[tuple[float, float]] = []
        self.ref_tails: list[float] = []
        self.retaken = self.kept = 0

    def sides(self) -> dict[str, _Side]:
        sides = {"ref1": _Side(), "cand": _Side(), "ref2": _Side()}
        for r in range(-1, ROUNDS):
            for name, side in sides.items():
                take = self._candidate if name == "cand" else self._reference
                ms, host = self._steady(take) if r >= 0 else take()[:2]
                if r >= 0:
                    side.per_call_ms.append(ms)
                    side.host_ms.append(host)
        return sides

    def _steady(self, take: Any) -> tuple[float, float]:
        while True:
            ms, host, disturbed = take()
            if not disturbed:
                return ms, host
            if self.retaken >= RETAKES:
                self.kept += 1
                return ms, host
            self.retaken += 1

    def _candidate(self) -> tuple[float, float, bool]:
        session, slot, wl = self.session, self.slot, self.slot.wl
        self.last_seeds = seeds = [inp.secret_seed() for _ in range(self.k)]
        ms, host, tail, disturbed = session.cand.gated(slot, lambda: _refresh(session, wl, self.views, seeds),
                                                       self.k, session.timeout_for(slot))
        self.tails.append((tail, ms))
        return ms, host, disturbed

    def _reference(self) -> tuple[float, float, bool]:
        session, wl, sets = self.session, self.slot.wl, self.ref_sets
        problem = session.problem
        with session.spent("reference_batch"):
            ms, host, tail, disturbed = session.ref_gate.time(self.ref_fn, sets,
                                                             lambda: _refresh_local(problem, wl, sets))
        self.ref_tails.append(tail)
        return ms, host, disturbed


def _refresh_local(problem: Any, wl: Any, sets: list[list[Any]]) -> None:
    import torch

    for args in sets:
        problem.fill(wl, inp.secret_seed(), args)
    torch.cuda.synchronize()


def _pool_sets(pool: ipc.ExportedPool, slices: list[ipc.Slice], example: list[Any],
               k: int) -> tuple[list[list[Any]], list[list[dict[str, Any]]]]:
    """Per input set: the verifier's views into the pool and their descriptions."""
    import dataclasses

    import torch

    views, descs, at = [], [], 0
    for _ in range(k):
        row_v, row_d = [], []
        for a in example:
            if isinstance(a, torch.Tensor):
                s = slices[at]
                at += 1
                row_v.append(pool.view(s))
                row_d.append({"slice": dataclasses.asdict(s)})
            else:
                row_v.append(a)
                row_d.append({"value": a})
        views.append(row_v)
        descs.append(row_d)
    return views, descs


def _estimate_ms(fn: Any, args: list[Any]) -> float:
    import torch

    fn(*args)
    torch.cuda.synchronize()
    start = time.perf_counter()
    fn(*args)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) * 1e3


def _tail(slot: Any, tails: list[tuple[float, float]], ref_tails: list[float] = ()) -> dict[str, float]:
    """Reject work left running after the signal when the median batch shows it (beyond the
    reference's own): work on a stream the calls did not wait for shows after every batch, a
    host hiccup that lengthens one round trip after one (a single such round trip rejected a
    correct kernel on the H200). Returns the medians, for the verdict's profile."""
    import statistics

    cand = statistics.median(t for t, _ in tails)
    ref = statistics.median(ref_tails) if ref_tails else 0.0
    extra = cand - ref
    per_call = statistics.median(ms for _, ms in tails)
    if extra > max(0.5 * per_call, TAIL_SLACK_MS):
        raise Failure(Status.REJECTED, f"{slot.label}: device work continued {extra:.3f} ms (median "
                      f"of {len(tails)} batches) after the timed batch signalled its end (work on a "
                      "stream the calls did not wait for)",
                      {"kind": "side_stream", "workload": slot.label}, fatal=True)
    return {"candidate_ms": round(cand, 4), "reference_ms": round(ref, 4)}
