"""``judge(task, candidate, runner) -> Verdict``: the parent side of a judgement.

1. stage the candidate into a judge-owned temporary directory and hash it;
2. check its sources statically (syntax -> COMPILE_ERROR, policy -> REJECTED);
3. run ``python -m forgekernel.judge.worker`` through the runner in a fresh process (cwd an
   empty judge-owned directory, so nothing of the candidate shadows the judge's imports);
4. turn what came back (a signed result, or a timeout, a signal, an exit, a flood, a
   tampered channel) into a :class:`~forgekernel.records.Verdict` with feedback.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from forgekernel import __version__
from forgekernel import candidate as cand
from forgekernel.delivery.base import Job, JobResult
from forgekernel.errors import ForgeError
from forgekernel.judge import feedback, policy
from forgekernel.judge.options import JudgeOptions
from forgekernel.judge.result import WorkerResult
from forgekernel.protocols import Runner
from forgekernel.records import Status, TaskSpec, Verdict

WORKER = "forgekernel.judge.worker"
JUDGE_NAME = f"forgekernel {__version__}"
OUTPUT_CAP = 4 * 1024 * 1024
"""Bytes of worker stdout+stderr before the output counts as a flood."""


class JudgeError(ForgeError, RuntimeError):
    """The judge could not judge (broken task reference, worker failed before the candidate)."""


def judge(task: TaskSpec, candidate: str | Path, runner: Runner,
          options: JudgeOptions | None = None) -> Verdict:
    """Judge the candidate at ``candidate`` (a kernel.py or a dir holding one) for ``task``."""
    start = time.monotonic()
    opts = options or JudgeOptions()
    if getattr(runner, "timing_label", "") == "cpu-interpret" and not opts.smoke_only:
        opts = opts.model_copy(update={"smoke_only": True})
    with tempfile.TemporaryDirectory(prefix="forge-judge-") as tmp:
        root = Path(tmp)
        staged = cand.stage(candidate, root / "candidate")
        digest = cand.source_hash(staged)
        perf_dir = cand.stage(opts.perf_reference, root / "perf") if opts.perf_reference else None
        base = {"candidate": digest, "judge": JUDGE_NAME, "delivery": runner.name}
        early, checked = _static(task, staged, base, opts.static,
                                 task.policy.library_kernels or opts.library_kernels)
        language = _language_of(staged)
        if early is None:
            early, compiled = _native(task, staged, base, language,
                                      getattr(runner, "timing_label", "") == "cpu-interpret")
            checked.own_kernels = sorted({*checked.own_kernels, *compiled})
        if early is not None:
            return _finish(early, start)
        payload = {"task": task.model_dump(mode="json"), "options": opts.model_dump(mode="json"),
                   "candidate_dir": str(staged), "kernel": str(staged / cand.KERNEL_FILE),
                   "perf_kernel": str(perf_dir / cand.KERNEL_FILE) if perf_dir else None,
                   "own_kernels": checked.own_kernels,
                   "native": language != "triton"}
        (root / "cwd").mkdir()
        job = Job(module=WORKER, payload=payload, cwd=str(root / "cwd"), gated=True,
                  timeout_s=opts.timeout_s or task.judge.timeout_s, output_cap_bytes=OUTPUT_CAP,
                  env={"PYTHONSAFEPATH": "1", "PYTHONDONTWRITEBYTECODE": "1"})
        result = runner.run(job)
    return _finish(_from_job(result, base, job.timeout_s), start)


def _static(task: TaskSpec, staged: Path, base: dict[str, Any], scan: bool = True,
            library: bool = False) -> tuple[Verdict | None, policy.PolicyResult]:
    """Syntax and policy problems, found before anything runs (``scan`` False: syntax only;
    ``library``: a candidate may rely on installed libraries' kernels alone)."""
    checked = policy.check_sources(staged, task.policy.forbid)
    if not scan:
        checked.violations = []
    return _static_verdict(checked, base, library), checked


def _static_verdict(checked: policy.PolicyResult, base: dict[str, Any],
                    library: bool = False) -> Verdict | None:
    if checked.syntax_error:
        return _verdict(Status.COMPILE_ERROR, f"syntax error: {checked.syntax_error}", base,
                        {"kind": "syntax", "phase": "static", "message": checked.syntax_error})
    if checked.violations:
        return _verdict(Status.REJECTED, f"source policy: {checked.violations[0]}", base,
                        {"kind": "policy", "phase": "static", "violations": checked.violations[:8]})
    if not checked.own_kernels and not library:
        return _verdict(Status.REJECTED, "the candidate defines no kernel of its own (no @triton.jit "
                        "function and no CUDA __global__ function)", base,
                        {"kind": "no_kernel", "phase": "static"})
    return None


LANGUAGE_NAMES = {"cuda": "CUDA C++", "cute-dsl": "CuTe DSL"}


def _language_of(staged: Path) -> str:
    from forgekernel.native import sources

    return sources.language_of(staged)


def _native(task: TaskSpec, staged: Path, base: dict[str, Any], language: str,
            cpu: bool) -> tuple[Verdict | None, list[str]]:
    """CUDA sources compiled for sm_90a before anything runs (an error is a COMPILE_ERROR
    naming the candidate's line); on the CPU interpreter a CUDA or CuTe DSL candidate is
    compiled (CuTe DSL: by its own ``cute.compile``, in the sandbox) and refused to run, with
    what the compile found. Also the names of the ``__global__`` functions the compiler
    produced (the launch audit's own kernels, whatever macros or templates spelled them)."""
    from forgekernel.judge.audit import base_name
    from forgekernel.native import cute, nvcc, sources
    builds: list[nvcc.CudaBuild] = []
    try:
        builds = [nvcc.compile_cuda(src) for src in sources.cuda_sources(staged)]
        if cpu and language == "cute-dsl":
            builds.append(cute.compile_cute(Path(task.root), staged / cand.KERNEL_FILE))
    except nvcc.NativeError as exc:
        if not cpu:  # the executor's own build (on the GPU host) reports compile errors
            return None, []
        return _verdict(Status.REJECTED, f"not run on the CPU interpreter, and not compiled: {exc}",
                        base, {"kind": "needs_gpu", "phase": "static", "language": language}), []
    bad = next((b for b in builds if not b.ok), None)
    if bad is not None:
        return _verdict(Status.COMPILE_ERROR, f"{bad.tool.split(' (')[0] or 'nvcc'} ({bad.target}): "
                        f"{bad.first_error()}", base,
                        {"kind": "compile", "phase": "static", "errors": list(bad.errors),
                         "target": bad.target, "tool": bad.tool, "language": language}), []
    names = sorted({base_name(k.name) for b in builds for k in b.kernels})
    if not cpu or language == "triton":
        return None, names
    compiled = "; ".join(b.summary() for b in builds)
    what = f"compiled for sm_90a: {compiled}" if compiled else "not compiled here"
    return _verdict(Status.REJECTED, f"not run: {LANGUAGE_NAMES[language]} candidates need a GPU and "
                    f"this judge is the CPU interpreter (cpu-interpret); {what}", base,
                    {"kind": "needs_gpu", "phase": "static", "language": language,
                     "static": [b.to_json() for b in builds]}), names


def _verdict(status: Status, reason: str, base: dict[str, Any], details: dict[str, Any],
             **fields: Any) -> Verdict:
    text = feedback.compose(status, reason, details, fields.get("workloads", ()))
    return Verdict(status=status, reason=reason, feedback=text, **base, **fields)


def _from_job(res: JobResult, base: dict[str, Any], timeout_s: float) -> Verdict:
    if res.ok:
        try:
            got = WorkerResult.model_validate(res.result or {})
        except ValidationError as exc:
            raise JudgeError(f"the verifier's result does not parse: {exc.errors()[0]['msg']}") from None
        if got.judge_error is not None or got.status is None:
            raise JudgeError(f"the judge gave no verdict: {got.judge_error or 'no status'}")
        return _from_result(got, got.status, base)
    tail = _tail(res)
    if res.timed_out:
        return _verdict(Status.TIMEOUT, f"no verdict within {timeout_s:.0f} s: the worker was killed",
                        base, {"kind": "timeout", "timeout_s": timeout_s, "tail": tail})
    if res.channel_error and not res.flooded:
        return _verdict(Status.REJECTED, f"the judge's result channel was tampered with: {res.channel_error}",
                        base, {"kind": "channel", "tail": tail})
    kind = "flood" if res.flooded else "signal" if res.signal is not None else "exit"
    return _verdict(Status.RUNTIME_ERROR, f"the worker died: {res.describe_failure()}", base,
                    {"kind": kind, "signal": res.signal, "exit_code": res.exit_code, "tail": tail})


def _tail(res: JobResult) -> str:
    """The end of what the worker printed (candidate output of hidden workloads is silenced)."""
    text = (res.stderr_tail or res.stdout_tail or "").strip()
    return text[-1500:]


def _from_result(got: WorkerResult, status: Status, base: dict[str, Any]) -> Verdict:
    fields: dict[str, Any] = {"device": got.device, "versions": got.versions,
                              "workloads": got.workloads, "profile": got.profile}
    if status is Status.PASSED:
        fields.update(noise_floor=got.noise_floor, speedup=got.speedup)
    return _verdict(status, got.reason, base, dict(got.details), **fields)


def _finish(verdict: Verdict, start: float) -> Verdict:
    return verdict.model_copy(update={"wall_s": round(time.monotonic() - start, 3)})
