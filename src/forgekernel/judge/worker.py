"""The verifier: ``python -m forgekernel.judge.worker`` (run through a Runner).

It reads its job from the signed channel, calibrates the reference, and never imports
candidate code: the candidate runs in an executor process it starts in a sandbox
(:mod:`forgekernel.judge.remote`), which gets inputs and returns outputs. Oracle,
tolerances, comparisons, the reference's timing, the clock and the signing key stay here.
Its one answer goes back on the signed channel; nothing it prints is ever parsed.
"""

from __future__ import annotations

import platform
import sys
import time
from pathlib import Path
from typing import Any

from forgekernel.delivery.channel import Envelope, receive
from forgekernel.judge import accounting, audit, residency

STARTED = time.monotonic()
"""When this process started (its job's clock started just before)."""


def main() -> None:
    from forgekernel.judge.result import WorkerResult

    env = receive()
    reply = _profiled(judge_in_process, env)  # the record checks what goes back before it is signed
    env.reply(WorkerResult.model_validate(reply).model_dump(mode="json"))


def _profiled(fn: Any, env: Envelope) -> Any:
    """``fn(env)``; under FK_PROFILE_VERIFIER=PATH also a cProfile of it written to PATH (for
    benchmarks/verdict_time.py --profile: where the verifier's wall time goes)."""
    import os

    path = os.environ.get("FK_PROFILE_VERIFIER")
    if not path:
        return fn(env)
    import cProfile

    watcher = _ImportWatcher()
    sys.meta_path.insert(0, watcher)
    prof = cProfile.Profile()
    try:
        return prof.runcall(fn, env)
    finally:
        prof.dump_stats(path)
        sys.meta_path.remove(watcher)
        Path(path + ".imports.txt").write_text("".join(watcher.stacks) or "none of the watched modules was imported\n")


class _ImportWatcher:
    """A meta-path hook that finds nothing and notes the Python stack at the first import of
    a module known to cost seconds (a profile names the import, not who asked for it)."""

    WATCHED = ("torch._dynamo", "sympy", "torch._higher_order_ops", "torch.distributed", "torch._inductor")

    def __init__(self) -> None:
        self.stacks: list[str] = []
        self.seen: set[str] = set()

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if fullname in self.WATCHED and fullname not in self.seen:
            import traceback

            self.seen.add(fullname)
            frames = [f for f in traceback.extract_stack()[:-1] if not f.filename.startswith("<frozen")]
            self.stacks.append(f"--- import {fullname}\n" + "".join(traceback.format_list(frames)))


def _versions(torch: Any) -> dict[str, str]:
    out = {"python": platform.python_version(), "torch": torch.__version__}
    try:
        import triton

        out["triton"] = triton.__version__
    except ImportError:
        out["triton"] = "absent"
    if torch.version.cuda:
        out["cuda"] = str(torch.version.cuda)
    return out


def _early_executor(env: Envelope) -> Any:
    """The candidate's executor, started before this process imports torch so that both
    imports overlap (None when it cannot start here: the session starts it and says why)."""
    from forgekernel.judge.executor_client import ExecutorClient, ExecutorSpec

    options = env.payload.get("options") or {}
    cpu = env.delivery == "cpu"
    spec = ExecutorSpec(candidate_dir=Path(env.payload["kernel"]).parent, device="cpu" if cpu else "cuda",
                        interpret=cpu, sandbox=not options.get("unsafe_no_sandbox", False))
    try:
        return ExecutorClient(spec)
    except Exception:  # no sandbox, no GPU: the same failure comes back, named, from the session
        return None


def _prepare(env: Envelope, phases: dict[str, float], started: Any = None) -> Any:
    """Everything before the candidate's first call: the session, the executor started (it
    imports torch while the reference is calibrated here), calibration and clocks."""
    clock = accounting.Phases(phases)
    with clock("imports_s"):
        from forgekernel.judge import timing
        from forgekernel.judge.remote import DEADLINE_MARGIN_S
        from forgekernel.judge.session import Session

    session = Session(env.payload, env.delivery)
    session.phases = phases
    session.deadline = STARTED + float(session.opts.timeout_s or session.task.judge.timeout_s) - DEADLINE_MARGIN_S
    perf_kernel = env.payload.get("perf_kernel")
    with clock("spawn_s"):
        session.spawn(Path(env.payload["kernel"]), Path(perf_kernel) if perf_kernel else None, started)
    session.gate = _gate(env, session)
    session.gate("S")  # from here on the GPU is in use: correctness may share it, timing not
    with clock("calibrate_s"):
        session.calibrate()
    torch = session.torch
    with clock("harness_s"):
        if session.cuda:
            session.device_name = torch.cuda.get_device_name(0)
            l2 = torch.cuda.get_device_properties(0).L2_cache_size
            session.clock = timing.CudaClock(l2)
            from forgekernel.judge.gated import ReferenceGate

            session.ref_gate = ReferenceGate()
            if not audit.known_ceilings(session.device_name):  # a floor measured here instead
                from forgekernel.profile import roofline

                session.ceilings = roofline.measure_copy_ceilings(session.device_name)
        else:
            session.device_name = "cpu (Triton interpreter)"
            session.clock = timing.HostClock()
    return session


FOOTPRINT_FACTOR = 8
"""Device bytes the verifier and its executor keep per byte of the largest workload's inputs
and parameters: pristine inputs, the candidate's copies, float64 upcasts, outputs, oracle."""


def _gate(env: Envelope, session: Any) -> Any:
    """``gate(mode)``: ask the runner for the GPU (:meth:`Envelope.device`) and move this
    judgement's deadline on by the time waited (recorded as the phase ``gpu_wait_s``)."""
    # sized only for a runner that may share the GPU between jobs: on torch 2.11 the meta run
    # that sizes the outputs imports torch._dynamo (2.5 s of a verdict on an H100)
    footprint = FOOTPRINT_FACTOR * session.problem.footprint([s.wl for s in session.slots]) \
        if env.delivery != "cpu" and env.may_share else 0

    def gate(mode: str) -> None:
        waited = env.device(mode, footprint)
        session.shared_gpu = env.shared
        if session.deadline is not None:
            session.deadline += waited
        session.phases["gpu_wait_s"] = round(session.phases.get("gpu_wait_s", 0.0) + waited, 3)

    return gate


RESPAWN_BYTES = 1 << 30
"""Pools (bytes) above which a judgement that shared the GPU restarts its executors before it
waits to time alone (:func:`_trim`)."""


def _trim(session: Any) -> bool:
    """Before waiting for the GPU alone: give back the device memory the correctness trials
    left cached, here and in the executors, so a job timed meanwhile has it. When other jobs
    ran beside this one and the executors' pools hold more than RESPAWN_BYTES (staging pools
    sized by the largest workload, which an executor may map, so freed only once it is gone),
    or they hold over an eighth of the device's memory (the timing pools need it), the
    executors are started afresh: True, the candidate to be loaded again."""
    if not session.cuda:
        return False
    import gc

    gc.collect()
    session.torch.cuda.synchronize()
    session.torch.cuda.empty_cache()  # the pools are the driver's, not this cache's
    procs = [p for p in (session.cand, session.perf) if p is not None]
    pools = _pool_bytes(session)
    planned = getattr(session, "device_bytes", None)
    big = planned is not None and pools * residency.DEVICE_COPIES > planned
    if pools > RESPAWN_BYTES and (getattr(session, "shared_gpu", False) or big):
        kernel, perf = session.cand.kernel, session.perf.kernel if session.perf is not None else None
        session.close()  # the executors gone, their pools freed
        session.cand = session.perf = None
        session.spawn(kernel, perf)
        return True
    for proc in procs:
        proc.trim()
    return False


def judge_in_process(env: Envelope) -> dict[str, Any]:
    """The whole judgement in this (fresh) process; returns the result dict."""
    start = time.perf_counter()
    started = _early_executor(env)
    import torch

    base: dict[str, Any] = {"versions": _versions(torch), "device": ""}
    phases: dict[str, float] = {"torch_s": round(time.perf_counter() - start, 3)}
    start = time.perf_counter()
    session = None
    try:
        session = _prepare(env, phases, started)
    except Exception as exc:  # the task or the judge is broken: no verdict on the candidate
        if session is not None:
            session.close()
        elif started is not None:
            started.close()
        return {**base, "judge_error": f"{type(exc).__name__}: {exc}"}
    phases["prepare_s"] = round(time.perf_counter() - start, 3)
    session.phases = phases
    base["device"] = session.device_name
    return _judge(session, env.payload, base)


def _judge(session: Any, payload: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    from forgekernel.judge import perf
    from forgekernel.judge.failure import Failure
    from forgekernel.records import Status

    status, reason, details, timed = Status.PASSED, "", {}, None
    clock = accounting.Phases(session.phases)
    try:
        with clock("import_s"):
            session.load()
        with clock("correctness_s"):
            session.correctness()
        if session.opts.timing:
            fresh = _trim(session)
            session.gate("X")
            if fresh:
                with clock("reload_s"):
                    session.load()
            with clock("timing_s"):
                timed = perf.run(session)
    except Failure as failure:
        if _judges_memory(session, failure):
            return {**base, "judge_error": out_of_memory(session, RuntimeError(failure.reason),
                                                         "the candidate's executor, the verifier holding most of it")}
        status, reason, details = failure.status, failure.reason, failure.details
    except Exception as exc:  # the verifier itself failed after the candidate was loaded
        if type(exc).__name__ == "OutOfMemoryError":  # the judge's limit, not the candidate's fault
            return {**base, "judge_error": out_of_memory(session, exc)}
        status = Status.RUNTIME_ERROR
        reason = f"the judgement failed after the candidate was loaded: {type(exc).__name__}: {exc}"
        details = {"kind": "judge", "phase": "unknown"}
    finally:
        with clock("close_s"):  # the executor's exit and the pools' release
            session.close()
    return _result(session, status, reason, details, timed, base)


def _pool_bytes(session: Any) -> int:
    """Device bytes of the pools the verifier lent its executors (freed only with them)."""
    return sum(pool.nbytes for p in (session.cand, session.perf) if p is not None for pool in p.owned)


def _judges_memory(session: Any, failure: Any) -> bool:
    """Whether a candidate that ran out of device memory did so while this verifier held over
    half of the device (its cache and the pools it lent): the judge's limit, no verdict on
    the candidate, which would otherwise be told to allocate less."""
    if not session.cuda or "out of memory" not in failure.reason:
        return False
    torch = session.torch
    pools = _pool_bytes(session)
    held = torch.cuda.memory_reserved() + pools
    return 2 * held > torch.cuda.get_device_properties(0).total_memory


def out_of_memory(session: Any, exc: Exception, who: str = "the verifier") -> str:
    """One line: the verifier's copies at the task's largest workload do not fit the device."""
    import math

    biggest = max(session.slots, key=lambda s: math.prod(v for v in s.wl.axes.values() if isinstance(v, int)),
                  default=None)
    where = f" (largest workload: {biggest.label})" if biggest is not None else ""
    first = str(exc).split(".")[0][:160]
    return (f"device memory ran out in {who}{where}{_oom_site(session, exc)}: {first}. The verifier keeps pristine "
            "inputs, a float64 oracle and timing pools beside the candidate's buffers; plan it with "
            "less (forge judge --device-memory GIB keeps its copies in host memory) or judge this "
            "task at smaller workloads on this device")


def _oom_site(session: Any, exc: BaseException) -> str:
    """Where the verifier was (its innermost judge frame) and what held the device then."""
    import traceback
    from pathlib import Path

    package = Path(__file__).resolve().parents[1]
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename).resolve().is_relative_to(package)]
    at = f"{Path(frames[-1].filename).stem}.{frames[-1].name}:{frames[-1].lineno}" if frames else "unknown"
    if not session.cuda:
        return f" [at {at}]"
    torch, gib = session.torch, 1 << 30
    pools = _pool_bytes(session)
    free, total = torch.cuda.mem_get_info()
    return (f" [at {at}; verifier {torch.cuda.memory_allocated() / gib:.1f} GiB allocated, "
            f"{torch.cuda.memory_reserved() / gib:.1f} reserved; executors' pools {pools / gib:.1f} GiB; "
            f"device {free / gib:.1f} of {total / gib:.1f} GiB free]")


def _result(session: Any, status: Any, reason: str, details: dict[str, Any],
            timed: dict[str, Any] | None, base: dict[str, Any]) -> dict[str, Any]:
    from forgekernel.records import Status

    workloads = []
    for slot in session.slots:
        w = slot.result()
        if timed and status is Status.PASSED and slot.label in timed["timings"]:
            w = w.model_copy(update=timed["timings"][slot.label])
        workloads.append(w.model_dump(mode="json"))
    profile = {
        "trials": session.trials, "hidden_workloads": sum(1 for s in session.slots if s.wl.hidden),
        "tolerances": [{"output": k, "tol": t.tol, "ref_err": t.ref_err, "source": t.source}
                       for k, t in enumerate(session.tolerances)],
        "nondeterministic": session.nondeterministic, "notes": session.notes,
        "host_copies": session.host_copies,
        "own_kernels": session.own_kernels, "phases": session.phases,
        "spent": session.spent.as_dict(), "tails": session.tails,
        "executor_boot": session.cand.boot if session.cand is not None else {},
        "kernel_cache_files": session.cand.ex.cache_restored if session.cand is not None else 0,
        "library_kernels": session.library_kernels,
        "sandbox": session.cand.sandbox if session.cand is not None else "",
        "measured_copy_tbs": session.ceilings.bandwidth_by_mib if session.ceilings is not None else None,
        **session.launch_summary(),
    }
    if "profile" in details:
        profile.update(details.pop("profile"))
    out = {**base, "status": str(status), "reason": reason, "details": details, "workloads": workloads,
           "profile": profile, "noise_floor": None, "speedup": None}
    if timed and status is Status.PASSED:
        out["noise_floor"], out["speedup"] = timed["noise_floor"], timed["speedup"]
        profile.update(host_ms=timed["host_ms"], flags=timed["flags"], timing_label=session.clock.label)
        if timed["cuda_graph"]:
            profile["cuda_graph"] = timed["cuda_graph"]
    return out


if __name__ == "__main__":
    main()
    sys.exit(0)
