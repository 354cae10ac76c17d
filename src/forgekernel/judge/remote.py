"""The candidate as the verifier sees it: a sandboxed executor process, asked and checked.

:class:`CandidateProcess` turns each request to the executor into what the verifier works
with: outputs rebuilt from raw bytes after their description was checked against the
reference's (count, type, shape, dtype, device), the facts the executor observed about the
call, and a :class:`~forgekernel.judge.failure.Failure` for everything else (the candidate
raised, died, hung, flooded its output, broke the protocol, or left library functions,
threads or the stream changed).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from forgekernel.judge import residency, wire
from forgekernel.judge.executor_client import ExecutorClient, ExecutorGone, ExecutorSpec
from forgekernel.judge.failure import Failure, from_description
from forgekernel.records import Status

REQUEST_S = {"load": 600.0, "model": 120.0}
"""Deadlines of the requests that do not scale with a workload (import compiles nothing)."""


MIN_REQUEST_S = 0.5
"""The shortest wait for an executor's answer, however close the deadline."""
DEADLINE_MARGIN_S = 1.5
"""Time the verifier keeps before its job's deadline to stop the executor and answer."""


def within(deadline: float | None, timeout_s: float) -> float:
    """``timeout_s``, cut to what is left before the whole judgement's ``deadline``
    (time.monotonic()): a call that hangs is then stopped by the verifier, the verdict naming the
    workload and what the candidate printed, rather than the verifier being killed from outside
    with nothing to say."""
    if deadline is None:
        return timeout_s
    return min(timeout_s, max(MIN_REQUEST_S, deadline - time.monotonic()))


class CandidateProcess:
    """One executor holding one candidate (or a sealed performance reference)."""

    def __init__(self, session: Any, kernel: Path, role: str = "candidate",
                 started: ExecutorClient | None = None) -> None:
        self.session, self.kernel, self.role = session, kernel, role
        spec = ExecutorSpec(candidate_dir=kernel.parent, device=session.device,
                            interpret=session.interpret, sandbox=not session.opts.unsafe_no_sandbox)
        if started is not None and started.spec != spec:  # started for another device
            started.close()
            started = None
        self.ex = started or ExecutorClient(spec)
        self.calls = self.batch = 0
        self.boot: dict[str, Any] = {}
        """The executor's own account of its start (data from an untrusted process: shown, never used)."""
        self.owned: list[Any] = []
        """Device pools the executor may have mapped: freed only after it is gone."""
        self.peers: list[Any] = []
        """Pools the executor allocated and this process mapped: unmapped before it goes."""
        self.staging: Any = None
        """The pool the correctness calls' inputs and outputs pass through on a GPU."""

    @property
    def sandbox(self) -> str:
        return self.ex.sandbox_note

    def close(self) -> None:
        for pool in self.peers:  # unmapped before the executor frees them
            pool.free()
        self.peers = []
        self.ex.close()
        for pool in self.owned:
            pool.free()
        self.owned = []

    def pool(self, nbytes: int) -> Any:
        """A device pool of ``nbytes`` this executor may map (CUDA IPC), freed at close."""
        from forgekernel.judge import ipc

        pool = ipc.ExportedPool(nbytes)
        self.owned.append(pool)
        return pool

    def peer_pool(self, nbytes: int, where: str) -> Any:
        """A device pool of ``nbytes`` the executor allocates in its own process (what the
        candidate reads in timed batches), mapped here to write its inputs into."""
        from forgekernel.judge import ipc

        reply = self._ask({"op": "own_pool", "nbytes": int(nbytes)}, 120.0, phase="timing", where=where)
        pool = ipc.PeerPool(reply["pool"], nbytes)
        self.peers.append(pool)
        return pool

    # -- requests
    def _ask(self, message: dict[str, Any], timeout_s: float, *, phase: str, where: str,
             hidden: bool = False) -> dict[str, Any]:
        try:
            with self.session.spent(f"{self.role}:{message.get('op')}"):
                reply = self.ex.ask(message, within(self.session.deadline, timeout_s))
        except ExecutorGone as gone:
            raise self._gone(gone, phase, where, hidden) from None
        if "raised" in reply:
            raise from_description(reply["raised"], phase=phase, where=where, hidden=hidden)
        if "protocol" in reply:
            raise Failure(Status.REJECTED, f"the executor refused a request ({reply['protocol']})",
                          {"kind": "channel"}, fatal=True)
        self._integrity(reply, where)
        return reply

    def _gone(self, gone: ExecutorGone, phase: str, where: str, hidden: bool) -> Failure:
        tail = "" if hidden else self.ex.tail()
        if gone.kind == "timeout":
            return Failure(Status.TIMEOUT, f"no answer on {where} within the deadline: the "
                           "candidate's process was killed", {"kind": "timeout", "tail": tail}, fatal=True)
        if gone.kind == "protocol":
            return Failure(Status.REJECTED, f"the candidate's process broke the judge's channel on {where}",
                           {"kind": "channel", "tail": tail}, fatal=True)
        kind = "flood" if gone.kind == "flood" else "exit"
        return Failure(Status.RUNTIME_ERROR, f"{gone} ({phase} on {where})",
                       {"kind": kind, "tail": tail, "phase": phase}, fatal=True)

    @staticmethod
    def _integrity(reply: dict[str, Any], where: str) -> None:
        if reply.get("attempts"):
            what = [str(a) for a in reply["attempts"]][:3]
            raise Failure(Status.REJECTED, f"during {where} the kernel " + "; ".join(what)
                          + " (kernels run without credentials, network or files outside their "
                          "scratch directory)", {"kind": "escape", "attempts": what}, fatal=True)
        if reply.get("timers"):
            raise Failure(Status.REJECTED, f"installed {', '.join(map(str, reply['timers'][:3]))} "
                          f"during {where} (timers and signal handlers can slow what is timed)",
                          {"kind": "tamper"}, fatal=True)
        if reply.get("tampered"):
            names = [str(n) for n in reply["tampered"]][:5]
            raise Failure(Status.REJECTED, f"replaced library, timer or judge functions during {where}: "
                          + ", ".join(names), {"kind": "tamper", "names": names}, fatal=True)
        if reply.get("threads"):
            raise Failure(Status.REJECTED, f"left a thread running after {where}: {reply['threads'][0]}",
                          {"kind": "thread"}, fatal=True)
        if reply.get("stream"):
            raise Failure(Status.REJECTED, f"changed the current CUDA stream during {where}",
                          {"kind": "stream"}, fatal=True)
        if reply.get("l2_persisting"):
            raise Failure(Status.REJECTED, f"changed the persisting-L2 set-aside ({reply['l2_persisting']} "
                          f"bytes) during {where} (cache settings that outlive a call change what the "
                          "next one is timed at)", {"kind": "cache"}, fatal=True)

    def load(self, kernelbench: bool) -> None:
        """Import the candidate; for KernelBench, build ModelNew at every workload."""
        entry = "ModelNew" if kernelbench else "run"
        reply = self._ask({"op": "load", "kernel": str(self.kernel), "entry": entry,
                           "own": list(self.session.own_kernels),
                           "any_kernel": self.session.library_kernels,
                           "library_ops": list(self.session.task.policy.library_ops),
                           "native": self.session.native},
                          REQUEST_S["load"], phase="import", where="import")
        self.boot = reply.get("boot") if isinstance(reply.get("boot"), dict) else {}
        if "missing" in reply:
            raise Failure(Status.COMPILE_ERROR, str(reply["missing"])[:200],
                          {"kind": "entry", "phase": "import"})

    def model(self, key: str, init: list[Any], seed: int, train: bool, where: str, hidden: bool,
              constants: dict[str, int] | None = None) -> None:
        """Build ModelNew at a workload; ``constants``: the workload's module constants, for a
        copied ``__init__`` that reads one the candidate does not define (``batch_size``)."""
        self._ask({"op": "model", "key": key, "init": init, "seed": seed, "train": train,
                   "constants": constants or {}},
                  REQUEST_S["model"], phase="init", where=f"ModelNew(*get_init_inputs()) at {where}",
                  hidden=hidden)

    def call(self, slot: Any, key: str, args: list[Any], *, pattern: int | None, timeout_s: float,
             return_inputs: bool = False, reuse: bool = False, observe: bool = True,
             keep: Any = None) -> tuple[tuple[Any, ...], dict[str, Any], list[Any] | None]:
        """Run the candidate once on ``args``: (outputs, observed facts, its inputs after).
        ``reuse``: in the buffers of the last reused call on this workload, refilled. On a
        GPU, inputs and outputs pass through a device pool of the verifier's (no copy to the
        host); elsewhere, through raw-byte files in the scratch dir. ``keep`` copies what
        comes back out of the pool (default: a device clone; a residency may keep it on the host)."""
        keep = keep or _clone
        self.calls += 1
        prefix = f"c{self.calls}_"
        message = {"op": "call", "key": key, "poison": pattern,
                   "poison_sizes": [o.nbytes for o in slot.outputs], "prefix": prefix + "out",
                   "return_inputs": return_inputs, "reuse": reuse, "observe": observe}
        with self.session.spent("stage"):
            staged = self._stage(slot, args) if self.session.device == "cuda" else None
        if staged is None:
            message["inputs"] = self._put(args, prefix + "in")
        else:
            message.update(staged.message)
        reply = self._ask(message, timeout_s, phase="run", where=slot.label, hidden=slot.wl.hidden)
        self._took(reply.get("took"))
        outs = self._outputs(reply.get("outputs"), slot, staged, keep)
        after = None
        if return_inputs and staged is not None:
            after = [keep(v) if v is not None else a for v, a in zip(staged.inputs, args, strict=True)]
        elif return_inputs:
            after = [wire.get(d, self.ex.scratch, self.session.device, max_bytes=_bytes(a))
                     if "tensor" in d else a for d, a in zip(reply["inputs"], args, strict=True)]
        self._clean(prefix)
        return outs, reply.get("observed") or {}, after

    def _took(self, took: Any) -> None:
        """The executor's own account of a call's steps, summed as ``executor:<step>`` in
        ``profile.spent`` (data on where time goes; nothing is judged by it)."""
        if not isinstance(took, dict):
            return
        for name, seconds in list(took.items())[:8]:
            if isinstance(name, str) and isinstance(seconds, (int, float)) and 0 <= seconds < 1e4:
                self.session.spent.add(f"executor:{name[:16]}", float(seconds))

    def _stage(self, slot: Any, args: list[Any]) -> _Staged:
        """The call's inputs copied into the staging pool, and the slices its outputs go to."""
        import dataclasses

        import torch

        from forgekernel.judge import ipc

        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        outs = [torch.empty(o.shape, dtype=o.dtype, device="meta") for o in slot.outputs]
        slices, nbytes = ipc.layout(tensors + outs)
        if self.staging is None or self.staging.nbytes < nbytes:
            self.staging = self.pool(residency.staging_bytes(nbytes, self.session.slots))
        pool, it = self.staging, iter(slices)
        inputs, descs = [], []
        for a in args:
            if isinstance(a, torch.Tensor):
                s = next(it)
                view = pool.view(s)
                view.copy_(a)
                inputs.append(view)
                descs.append({"slice": dataclasses.asdict(s)})
            else:
                inputs.append(None)
                descs.append(wire.describe(a))
        out_slices = list(it)
        for s in out_slices:  # nothing of an earlier call is left where this one's outputs go
            pool.view(s).reshape(-1).view(torch.uint8).fill_(0xFF)
        torch.cuda.synchronize()
        message = {"inputs": descs, "pool": pool.describe(),
                   "outputs_to": [dataclasses.asdict(s) for s in out_slices]}
        return _Staged(message, inputs, [pool.view(s) for s in out_slices])

    def _collect_slices(self, slot: Any, n: int) -> tuple[Any, list[list[dict[str, Any]]], list[list[Any]]]:
        """A pool for ``n`` calls' outputs, cleared to 0xFF: the staging pool where it is large
        enough (a pool's device memory is freed only with the executor, so a new one per timed
        workload adds up), else one of its own; (the pool, per call the slices' descriptions
        and the verifier's views of them)."""
        import dataclasses

        import torch

        from forgekernel.judge import ipc

        outs = [torch.empty(o.shape, dtype=o.dtype, device="meta") for o in slot.outputs]
        slices, nbytes = ipc.layout(outs * n)
        pool = self.staging if self.staging is not None and self.staging.nbytes >= nbytes else self.pool(nbytes)
        for s in slices:
            pool.view(s).reshape(-1).view(torch.uint8).fill_(0xFF)
        torch.cuda.synchronize()
        per = len(outs)
        groups = [slices[i * per:(i + 1) * per] for i in range(n)]
        return pool, [[dataclasses.asdict(s) for s in g] for g in groups], [[pool.view(s) for s in g] for g in groups]

    def repeat(self, slot: Any, key: str, args: list[Any], n: int, timeout_s: float) -> float:
        """Seconds the verifier's clock measured for ``n`` calls on ``args`` (CPU timing)."""
        self.calls += 1
        prefix = f"r{self.calls}_"
        message = {"op": "repeat", "key": key, "n": n,
                   "inputs": self._put(args, prefix + "in")}
        start = time.perf_counter()
        self._ask(message, timeout_s, phase="timing", where=slot.label)
        wall = time.perf_counter() - start
        self._clean(prefix)
        return wall

    # -- GPU timing (forgekernel.judge.gated)
    def pools(self, slot: Any, pool: dict[str, Any], sets: list[list[dict[str, Any]]]) -> None:
        """Hand the executor the verifier's input pool for ``slot`` (CUDA IPC)."""
        self._ask({"op": "pools", "key": key_of(slot), "pool": pool, "sets": sets}, 120.0,
                  phase="timing", where=slot.label)

    def gated(self, slot: Any, refresh: Any, k: int, timeout_s: float) -> tuple[float, float, float, bool]:
        """One gated batch of ``k`` calls: (ms per call, host ms per call, ms of device work
        left after the signal, whether this process's own delay may have lengthened the
        reading), all by the verifier's clock."""
        from forgekernel.judge import gate

        words = self.ex.words
        self.batch += 1
        reply = self._ask({"op": "batch", "key": key_of(slot), "batch": self.batch}, timeout_s,
                          phase="timing", where=slot.label)
        refresh()  # the values the calls read exist only now, after they were enqueued
        reading = gate.open_and_time(words, self.batch, timeout_s)
        if reading is None:
            self.ex.kill()
            raise Failure(Status.TIMEOUT, f"a timed batch on {slot.label} did not finish within "
                          f"{timeout_s:.0f} s", {"kind": "timeout"}, fatal=True)
        if gate.expired(words, self.batch):
            self.ex.kill()
            raise Failure(Status.RUNTIME_ERROR, f"a timed batch on {slot.label} waited on the device "
                          f"for more than {gate.LIMIT_S:.0f} s before it was let run: the call "
                          "synchronises with the GPU (.item(), .cpu(), torch.cuda.synchronize(), a "
                          "blocking copy); forge times calls back to back, so they must not wait",
                          {"kind": "host_sync"}, fatal=True)
        synced = self._round_trip(sync=True, where=slot.label)  # waits for work left running
        idle = self._round_trip(sync=True, where=slot.label)  # the same on the idle device
        return (reading.seconds * 1e3 / k, float(reply.get("host_ms", 0.0)) / k,
                max(0.0, (synced - idle) * 1e3), reading.disturbed())

    def trim(self) -> None:
        """The executor gives its cached device memory back (the verifier waits for the GPU
        next; other jobs may need it meanwhile)."""
        self._ask({"op": "ping", "sync": True, "trim": True}, 60.0, phase="timing", where="the wait for the GPU")

    def _round_trip(self, *, sync: bool, where: str) -> float:
        start = time.perf_counter()
        self._ask({"op": "ping", "sync": sync}, 60.0, phase="timing", where=where)
        return time.perf_counter() - start

    def collect(self, slot: Any, picks: list[int], keep: Any = None) -> list[tuple[Any, ...]]:
        """The outputs of calls ``picks`` of the last batch, checked and rebuilt (copied by
        ``keep``, as in :meth:`call`)."""
        self.calls += 1
        prefix = f"b{self.calls}_"
        message: dict[str, Any] = {"op": "collect", "picks": picks, "prefix": prefix}
        views: list[list[Any]] = []
        if self.session.device == "cuda":
            pool, slices, views = self._collect_slices(slot, len(picks))
            message.update(pool=pool.describe(), outputs_to=slices)
        reply = self._ask(message, 120.0, phase="timing", where=slot.label)
        outs = [self._outputs(d, slot, _Staged({}, [], views[n]) if views else None, keep)
                for n, d in enumerate(reply.get("outputs", [])[:len(picks)])]
        if len(outs) != len(picks):
            raise Failure(Status.REJECTED, "the executor returned other outputs than asked for",
                          {"kind": "channel"}, fatal=True)
        self._clean(prefix)
        return outs

    def _put(self, args: list[Any], prefix: str) -> list[dict[str, Any]]:
        try:  # the scratch dir is the executor's: what it leaves at these names is refused
            return wire.put_all(args, self.ex.scratch, prefix)
        except wire.WireError as exc:  # not an OSError of the verifier's own (a full disk)
            raise Failure(Status.REJECTED, f"the inputs could not be handed over: {exc}",
                          {"kind": "channel"}, fatal=True) from None

    def _clean(self, prefix: str) -> None:
        for path in self.ex.scratch.glob(prefix + "*"):
            path.unlink(missing_ok=True)

    def _outputs(self, descs: Any, slot: Any, staged: _Staged | None = None, keep: Any = None) -> tuple[Any, ...]:
        """The outputs, rebuilt after their descriptions passed the structure checks (from
        the verifier's own views of the staging pool when the executor copied them there)."""
        from forgekernel.judge import correctness as cx

        if not isinstance(descs, list):
            raise Failure(Status.REJECTED, "the executor answered without outputs", {"kind": "channel"},
                          fatal=True)
        check = cx.check_described(descs, tuple(slot.outputs), self.session.device)
        if not check.ok:
            self.session.fail(slot, cx.STATUS_OF[check.kind], check)
        if staged is not None:
            if not all(d.get("pooled") for d in descs):
                raise Failure(Status.REJECTED, "the executor did not place its outputs where asked",
                              {"kind": "channel"}, fatal=True)
            return tuple((keep or _clone)(v) for v in staged.outputs)
        try:
            return tuple(wire.get(d, self.ex.scratch, self.session.device, max_bytes=o.nbytes)
                         for d, o in zip(descs, slot.outputs, strict=True))
        except (wire.WireError, OSError) as exc:
            raise Failure(Status.REJECTED, f"the candidate's outputs could not be read back: {exc}",
                          {"kind": "channel"}, fatal=True) from None


@dataclass
class _Staged:
    """A GPU call's staging: the message fields, the verifier's input and output views."""

    message: dict[str, Any]
    inputs: list[Any]
    outputs: list[Any]


def _clone(t: Any) -> Any:
    return t.clone()


def key_of(slot: Any) -> str:
    """The executor's name for a workload (its ModelNew is built per workload)."""
    return ",".join(f"{k}={v}" for k, v in sorted(slot.wl.axes.items()))


def _bytes(value: Any) -> int | None:
    import torch

    return value.numel() * value.element_size() if isinstance(value, torch.Tensor) else None
