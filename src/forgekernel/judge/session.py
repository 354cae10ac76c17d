"""One judgement inside the worker: calibration, the candidate, and the correctness trials.

Order (docs/judge.md threat model B8): the reference is calibrated before any candidate code is imported.
In every trial the candidate runs first, on fresh inputs from a secret seed, and the
float64 oracle is computed afterwards on a pristine copy: while the candidate runs, no
reference output for its inputs exists anywhere in the process. Freed blocks are filled
with a poison pattern before each call, and each trial runs the candidate twice (two
patterns, second time on a copy of the inputs at a new address).
"""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Any

from forgekernel.judge import accounting, audit, boundary, guards, ipc, residency, values, wire
from forgekernel.judge import correctness as cx
from forgekernel.judge import inputs as inp
from forgekernel.judge.failure import Failure
from forgekernel.judge.options import JudgeOptions
from forgekernel.judge.problem import Problem
from forgekernel.judge.slots import OutSpec, Slot
from forgekernel.records import Status, TaskSpec

REFERENCE_SHARE = 0.5
"""Share of the judge's timeout one calibration call of the reference may take."""
POISON_PATTERNS = (0xFF, 0x7F)
"""Byte fills of freed memory before the two runs: NaN in every float type, then a huge
finite value in bf16/fp32 (NaN in fp16)."""



class ReferenceHang(RuntimeError):
    """The reference did not return within its share of the judge's timeout."""


class Session:
    """The worker's state for one candidate."""

    def __init__(self, payload: dict[str, Any], delivery: str) -> None:
        import torch

        self.torch = torch
        self.task = TaskSpec.model_validate(payload["task"])
        self.opts = JudgeOptions.model_validate(payload["options"])
        self.candidate_dir = str(Path(payload["candidate_dir"]).resolve())
        self.own_kernels: list[str] = list(payload.get("own_kernels", []))
        self.reference_reads: dict[str, bool] = {}
        self.native = bool(payload.get("native"))  # CUDA C++ or CuTe DSL: seen by the profiler
        self.library_kernels = self.task.policy.library_kernels or self.opts.library_kernels
        """Any Triton launch counts as the candidate's (an installed library's kernels too)."""
        self.cuda = delivery != "cpu" and torch.cuda.is_available()
        self.device = "cuda" if self.cuda else "cpu"
        self.interpret = delivery == "cpu"
        self.trials = self.opts.trials or self.task.judge.trials
        self.problem = Problem(self.task, self.device)
        self.slots = self._slots()
        self.tolerances: list[cx.OutputTolerance] = []
        self.mutating: set[int] = set()
        self.input_dtypes: list[str] = []
        self.notes: list[str] = self.problem.notes  # the problem's notes (the oracle's precision) too
        self.nondeterministic = False
        self.ref_gate: Any = None
        self.ceilings: Any = None
        """Copy ceilings measured on a GPU forge has no table for (``audit.roofline_floor``)."""
        self.cand: Any = None
        """The candidate's executor (:class:`~forgekernel.judge.remote.CandidateProcess`)."""
        self.perf: Any = None
        """The sealed performance reference's executor (self-evolution), if any."""
        self.ref_ops: set[str] | None = None
        self.observed: list[dict[str, Any]] = []
        self.phases: dict[str, float] = {}
        self.deadline: float | None = None  # monotonic; the verifier answers by then (remote.within)
        self.spent = accounting.Spent()
        self.tails: dict[str, dict[str, float]] = {}  # per timed workload (GPU): gated._tail
        self.device_bytes: int | None = None
        """Device memory the copies are planned with (:mod:`~forgekernel.judge.residency`), once calibrated."""
        self.host_copies: list[str] = []
        """Workloads whose copies the verifier kept in host memory."""

    # ------------------------------------------------------------ workloads
    def _slots(self) -> list[Slot]:
        visible = [w for w in self.task.workloads if w.smoke or not self.opts.smoke_only]
        use_hidden = self.task.judge.hidden if self.opts.hidden is None else self.opts.hidden
        hidden = inp.hidden_workloads(self.task, visible, large=not self.opts.smoke_only) if use_hidden else []
        slots = [Slot(w, w.label() or "the workload") for w in visible]
        slots += [Slot(w, f"hidden workload {i + 1} of {len(hidden)}") for i, w in enumerate(hidden)]
        return slots

    @property
    def visible(self) -> list[Slot]:
        return [s for s in self.slots if not s.wl.hidden]

    # ------------------------------------------------------------ calibration
    def calibrate(self) -> None:
        """Reference vs oracle on every workload (before the candidate exists in-process)."""
        errors: dict[int, float] = {}
        dtypes: dict[int, str] = {}
        kept = []
        for slot in self.slots:
            try:
                specs, errs = self._calibrate_timed(slot)
                if not slot.wl.hidden:  # a second draw steadies the visible calibration
                    errs = [max(a, b) for a, b in zip(errs, self._calibrate_timed(slot)[1], strict=True)]
            except ReferenceHang:
                raise
            except Exception as exc:
                if slot.wl.hidden:
                    continue  # the reference itself rejects this shape: not a workload
                raise RuntimeError(f"the reference fails on {slot.label}: {type(exc).__name__}: {exc}") from exc
            slot.outputs = specs
            kept.append(slot)
            for k, (spec, err) in enumerate(zip(specs, errs, strict=True)):
                errors[k] = max(errors.get(k, 0.0), err)
                dtypes[k] = cx.dtype_name(spec)
        if not kept:  # nothing judged would pass every candidate
            raise RuntimeError("no workload to judge: " + ("the task has no smoke workload, and the CPU interpreter "
                               "judges smoke workloads only (task.toml says why); judge it on a GPU"
                               if self.opts.smoke_only else "the task lists none"))
        dropped = len(self.slots) - len(kept)
        if dropped:
            self.notes.append(f"{dropped} hidden workload(s) skipped: the reference rejects them")
        self.slots = kept
        self.tolerances = [cx.tolerance_for(dtypes[k], errors[k], self.task.judge, interpret=self.interpret)
                           for k in sorted(errors)]
        with self.spent("reference_ops"):  # while the executor still starts
            self.ref_ops = self._reference_ops(self.slots[0]) if self.slots else None
        residency.release(self.torch)  # calibration's blocks: the executor's to use now
        self.device_bytes = residency.free_bytes(self.torch, self.cuda, self.opts.device_memory_gib)

    def _reference_ops(self, slot: Slot) -> set[str]:
        """The compute ops the reference calls (what a candidate may not call eagerly)."""
        from forgekernel.judge import observe

        ref = self.problem.reference_callable(slot.wl)
        args = self.problem.make(slot.wl, inp.secret_seed())
        return observe.eager_ops(lambda: ref(*args))

    def _calibrate_timed(self, slot: Slot) -> tuple[list[OutSpec], list[float]]:
        """One calibration draw, under a deadline: a reference that never returns is the
        task's problem, reported as such, never the candidate's TIMEOUT."""
        from forgekernel.task import _deadline, _ImportDeadline

        limit = self.task.judge.timeout_s * REFERENCE_SHARE
        try:
            with _deadline(limit):
                return self._calibrate_one(slot)
        except _ImportDeadline:
            raise ReferenceHang(f"the reference did not return within {limit:g} s on {slot.label} "
                                "(before any candidate code was loaded)") from None

    def _calibrate_one(self, slot: Slot) -> tuple[list[OutSpec], list[float]]:
        torch = self.torch
        args = self.problem.make(slot.wl, inp.secret_seed())
        pristine = inp.clone_args(args)
        refs = self.problem.reference(slot.wl, args)
        self.mutating.update(guards.mutated_inputs(args, pristine))
        self.input_dtypes = [cx.dtype_name(a) if isinstance(a, torch.Tensor) else "" for a in args]
        oracle = self.problem.oracle(slot.wl, pristine)
        if not all(type(r) is torch.Tensor for r in refs):
            raise TypeError("the reference must return tensors")
        specs = [OutSpec(tuple(r.shape), r.dtype, r.device, r.numel() * r.element_size()) for r in refs]
        slot.staged_bytes = ipc.layout([a for a in args if isinstance(a, torch.Tensor)] + list(refs))[1]
        return specs, [values.reference_error(r, o) for r, o in zip(refs, oracle, strict=True)]

    # ------------------------------------------------------------ candidate
    def spawn(self, kernel: Path, perf_kernel: Path | None, started: Any = None) -> None:
        """Start the candidate's executor (sandboxed; ``started``: one the worker already
        started for it), and the performance reference's; they import torch while the
        reference is calibrated here."""
        from forgekernel.judge.remote import CandidateProcess

        self.cand = CandidateProcess(self, kernel, started=started)
        if perf_kernel is not None:
            self.perf = CandidateProcess(self, perf_kernel, role="performance reference")

    def load(self) -> None:
        """Import the candidate in its executor; for KernelBench, build its ModelNew at every
        workload. Candidate code is never imported here."""
        self._load(self.cand)
        if self.perf is not None:
            self._load(self.perf)

    def launch_summary(self) -> dict[str, Any]:
        """What the first observed calls launched, for the verdict's profile."""
        names: list[str] = []
        for obs in self.observed:
            names += [str(n) for n in obs.get("launches") or []]
        kernels = [{"name": n, "count": names.count(n) // max(len(self.observed), 1),
                    "own": n in self.own_kernels} for n in dict.fromkeys(names)]
        eager = {str(o) for obs in self.observed for o in obs.get("eager") or []}
        left = audit.library_left(self.task.policy.library_ops, self.ref_ops or set())
        return {"kernels": kernels, "launches": len(names) // max(len(self.observed), 1),
                "eager_ops": sorted(eager), "library_ops": sorted(eager & left)}

    def _load(self, proc: Any) -> None:
        proc.load(self.problem.kernelbench)
        if not self.problem.kernelbench:
            return
        for slot in self.slots:
            init = wire.plain_values(self.problem.module_at(slot.wl).get_init_inputs())
            proc.model(key(slot), init, self.problem.init_seed,
                       self.task.judge.module_mode == "train", slot.label, slot.wl.hidden,
                       self.problem.constants(slot.wl))

    def close(self) -> None:
        for proc in (self.cand, self.perf):
            if proc is not None:
                proc.close()

    def timeout_for(self, slot: Slot) -> float:
        return float(self.opts.timeout_s or self.task.judge.timeout_s)

    def call(self, slot: Slot, args: list[Any], pattern: int | None, return_inputs: bool = False,
             reuse: bool = False, observe: bool = True,
             where: residency.Residency | None = None) -> tuple[tuple[Any, ...], list[Any] | None]:
        """One candidate call in its executor: poison there, run, outputs back, what ran checked
        (``observe`` False: a timed call, which is checked by its answer only); the outputs
        and inputs after kept where ``where`` says."""
        where = where or residency.Residency()
        if where.release:
            residency.release(self.torch)
        outs, observed, after = self.cand.call(slot, key(slot), args, pattern=pattern,
                                               timeout_s=self.timeout_for(slot),
                                               return_inputs=return_inputs, reuse=reuse,
                                               observe=observe, keep=where.keep)
        if observe:
            self.check_observed(slot, observed)
        return outs, after

    def check_observed(self, slot: Slot, observed: dict[str, Any]) -> None:
        """The audit rules on what the executor saw the call do."""
        if self.ref_ops is None:
            self.ref_ops = self._reference_ops(slot)
        rules = functools.partial(audit.observed_violation, observed, forbid=self.task.policy.forbid,
                                  own=None if self.library_kernels else self.own_kernels, ref_ops=self.ref_ops,
                                  interpret=self.interpret, empty=audit.all_empty(slot.outputs),
                                  library=self.task.policy.library_ops)
        why = rules()
        if why is not None and why[0] == "inputs_not_read" and not self._reference_reads(slot):
            why = rules(inputs_matter=False)
        if len(self.observed) < 4:
            self.observed.append({k: observed.get(k) for k in ("launches", "eager")})
        if why is not None:
            kind, reason = why
            raise Failure(Status.REJECTED, f"{reason} (on {slot.label})" if not slot.wl.hidden else reason,
                          {"kind": "audit", "audit": kind}, fatal=True)

    def _reference_reads(self, slot: Slot) -> bool:
        """Whether the reference's answer at ``slot`` depends on the input values (two fresh
        draws): an exclusive cumsum over a dimension of 1 is zeros, and reading nothing is right."""
        if slot.label not in self.reference_reads:
            a, b = (self.problem.reference(slot.wl, self.problem.make(slot.wl, inp.secret_seed()))
                    for _ in range(2))
            self.reference_reads[slot.label] = not all(map(cx.exactly_equal, a, b))
        return self.reference_reads[slot.label]

    # ------------------------------------------------------------ correctness
    def correctness(self) -> None:
        """Pass 0 over every workload (all of it, even after a failure), then the other trials;
        a workload whose copies the verifier keeps in host memory (several GB a call: three
        trials of KernelBench's 6.4 GB ELU took 166 s on an H100) gets pass 0 only, its two
        runs on fresh inputs, with the smaller workloads' trials as they are."""
        first: Failure | None = None
        for t in range(self.trials):
            for i, slot in enumerate(self.slots):
                if slot.passed is False or (t > 0 and slot.label in self.host_copies):
                    continue
                start = time.perf_counter()
                try:
                    self.trial(slot)
                    slot.passed = True
                except Failure as failure:
                    slot.passed = False
                    if failure.fatal or failure.status is Status.REJECTED:
                        raise
                    first = first or failure
                finally:
                    if t == 0 and i == 0:  # the candidate's compilation lands here
                        self.phases["first_trial_s"] = round(time.perf_counter() - start, 3)
            if first is not None:
                raise first
        if self.host_copies and self.trials > 1:
            self.notes.append(f"one trial of {self.trials} (two runs) where the copies were kept in host "
                              f"memory: {', '.join(self.host_copies)}")
        self.sensitivity()

    def trial(self, slot: Slot) -> None:
        """Two runs on fresh inputs, then the oracle; the verifier's copies (pristine inputs,
        outputs, inputs after) where :meth:`placement` puts them, the first inputs dropped
        once staged (the second run is staged from the pristine copy)."""
        with self.spent("inputs"):
            args = self.problem.make(slot.wl, inp.secret_seed())
            where = self.placement(slot, args)
            pristine = where.keep_all(args)
        out1, after = self.call(slot, args, POISON_PATTERNS[0], return_inputs=True, where=where)
        after = args if after is None else after
        del args
        self.mutation(slot, after, pristine)
        out2, _ = self.call(slot, pristine, POISON_PATTERNS[1], where=where)
        if where.release:  # the second call's blocks: the float64 oracle's now
            residency.release(self.torch)
        with self.spent("oracle"):
            oracle, up = self.problem.oracle_with_inputs(slot.wl, pristine)
        with self.spent("compare"):
            self._checks(slot, list(out1), out2, oracle, after, up, pristine)

    def placement(self, slot: Slot, args: list[Any]) -> residency.Residency:
        """Where this workload's copies live (:mod:`forgekernel.judge.residency`)."""
        io = residency.io_bytes(args, sum(o.nbytes for o in slot.outputs))
        where = residency.plan(io, self.device_bytes)
        if where.host and slot.label not in self.host_copies:
            self.host_copies.append(slot.label)
        return where

    def _checks(self, slot: Slot, kept: list[Any], out2: Any, oracle: Any, after: list[Any],
                up: list[Any], pristine: list[Any]) -> None:
        for k, (out, ref) in enumerate(zip(kept, oracle, strict=True)):
            self.values(slot, k, out, ref, args=pristine)
        for k, (a, b) in enumerate(zip(kept, out2, strict=True)):
            self.repeatable(slot, k, a, b, oracle[k])
        for j in self.mutating:
            self.values(slot, len(kept) + j, after[j], up[j], tol=self._input_tol(j))
        ref_print = (0, 0) if values.negligible(oracle[0]) else values.fingerprint(oracle[0])  # noise: no signal
        slot.prints.append((values.fingerprint(kept[0], device=oracle[0].device), ref_print))

    def matches_reference(self, slot: Slot, args: list[Any], k: int, out: Any, ref64: Any) -> bool:
        """The second opinion where the float64 oracle was missed (:func:`boundary.second_opinion`)."""
        with self.spent("second_opinion"):
            return boundary.second_opinion(self.problem, slot.wl, args, k, out, ref64, self.tolerances[k],
                                           self.device, self.notes)

    def _input_tol(self, j: int) -> cx.OutputTolerance:
        dtype = self.input_dtypes[j]
        return cx.tolerance_for(dtype, 0.0, self.task.judge, interpret=self.interpret)

    def mutation(self, slot: Slot, args: list[Any], pristine: list[Any]) -> None:
        changed = [j for j in guards.mutated_inputs(args, pristine) if j not in self.mutating]
        if changed:
            self.fail(slot, Status.REJECTED, cx.Check(False, "mutation", f"modified input {changed[0]} "
                      "in place (inputs are read-only; the reference does not modify them)"))

    def values(self, slot: Slot, k: int, out: Any, ref: Any, tol: cx.OutputTolerance | None = None,
               args: list[Any] | None = None) -> None:
        """``args``: the call's inputs, for the second opinion (:meth:`matches_reference`)."""
        check = values.compare(out, ref, tol or self.tolerances[k])
        if not check.ok and args is not None and self.matches_reference(slot, args, k, out, ref):
            return
        slot.record(k, check)
        if not check.ok:
            self.fail(slot, Status.WRONG_VALUES, check, output=k)

    def repeatable(self, slot: Slot, k: int, first: Any, second: Any, ref: Any) -> None:
        same, where = values.bitwise_equal(first, second)
        if same:
            return
        check = values.compare(second, ref, self.tolerances[k])
        if check.ok:
            self.nondeterministic = True  # both runs within tolerance: nondeterministic, not wrong
            return
        slot.record(k, check)
        check.kind = "repeat"
        check.message = ("a second run on the same input values gave different bits and "
                         f"{check.message}: uninitialised reads, a race, or call-count-dependent behaviour")
        self.fail(slot, Status.WRONG_VALUES, check, output=k)

    def sensitivity(self) -> None:
        for slot in self.slots:
            if len(slot.prints) < 2:
                continue
            cand = {p[0] for p in slot.prints}
            ref = {p[1] for p in slot.prints}
            if len(cand) == 1 and len(ref) > 1:
                self.fail(slot, Status.REJECTED, cx.Check(False, "sensitivity", "the output did not "
                          "change when the input values changed (a cached or constant answer)"))

    def fail(self, slot: Slot, status: Status, check: cx.Check, output: int = 0) -> None:
        details: dict[str, Any] = {"kind": check.kind, "phase": "correctness", "workload": slot.label,
                                   "hidden": slot.wl.hidden}
        if not slot.wl.hidden:
            details.update(output=output, message=check.message, where=check.where,
                           expected=check.expected, got=check.got, max_abs=check.max_abs,
                           max_rel=check.max_rel, tol=check.tol)
        reason = f"{check.message} on {slot.label}" if not slot.wl.hidden else \
            f"{cx.HIDDEN_WHAT.get(check.kind, 'wrong result')} on {slot.label}"
        raise Failure(status, reason, details)


def key(slot: Slot) -> str:
    """The executor's name for a workload (its ModelNew is built per workload)."""
    from forgekernel.judge.remote import key_of

    return key_of(slot)
