"""Failures inside the worker, as data: a status, a one-line reason and details for feedback."""

from __future__ import annotations

import os
import traceback
from typing import Any

from forgekernel.records import Status

MESSAGE_CAP = 800
"""Characters of an exception message kept for the feedback."""
FRAMES_KEPT = 6


class Failure(Exception):
    """Ends (or marks) a judgement with ``status``; ``fatal`` stops everything at once."""

    def __init__(self, status: Status, reason: str, details: dict[str, Any] | None = None,
                 *, fatal: bool = False) -> None:
        super().__init__(reason)
        self.status, self.reason, self.details, self.fatal = status, reason, details or {}, fatal


def _trace(exc: BaseException, candidate_dir: str) -> str:
    """The candidate's own frames of the traceback (plus the innermost frame)."""
    frames = traceback.extract_tb(exc.__traceback__)
    keep = [f for f in frames if f.filename.startswith(candidate_dir)]
    if frames and (not keep or keep[-1] is not frames[-1]):
        keep.append(frames[-1])
    lines = []
    for f in keep[-FRAMES_KEPT:]:
        name = os.path.relpath(f.filename, candidate_dir) if f.filename.startswith(candidate_dir) \
            else os.path.basename(f.filename)
        lines.append(f"  {name}:{f.lineno} in {f.name}: {(f.line or '').strip()}")
    return "\n".join(lines)


def _kind(exc: BaseException) -> tuple[Status, str, bool]:
    """(status, short description, fatal) for an exception raised by candidate code."""
    name = type(exc).__name__
    text = str(exc)
    if isinstance(exc, SystemExit):
        return Status.RUNTIME_ERROR, f"called sys.exit({exc.code!r})", True
    if isinstance(exc, KeyboardInterrupt):
        return Status.RUNTIME_ERROR, "raised KeyboardInterrupt", True
    if "CompilationError" in name or type(exc).__module__.startswith("triton.compiler"):
        return Status.COMPILE_ERROR, f"the Triton compiler failed: {name}", False
    if "OutOfMemoryError" in name or "out of memory" in text:
        return Status.RUNTIME_ERROR, "ran out of memory", True
    if any(s in text for s in ("CUDA error", "illegal memory access", "device-side assert",
                               "CUBLAS_STATUS", "cudaError")):
        return Status.RUNTIME_ERROR, f"hit a CUDA error ({name})", True
    return Status.RUNTIME_ERROR, f"raised {name}", False


def describe(exc: BaseException, candidate_dir: str) -> dict[str, Any]:
    """An exception the candidate raised, as data (what the executor sends the verifier)."""
    status, what, fatal = _kind(exc)
    message = str(exc).strip()
    if len(message) > MESSAGE_CAP:
        message = message[:MESSAGE_CAP] + " ..."
    return {"type": type(exc).__name__, "message": message, "trace": _trace(exc, candidate_dir),
            "status": status.value, "what": what, "fatal": fatal}


def from_description(desc: dict[str, Any], *, phase: str, where: str, hidden: bool) -> Failure:
    """The Failure for an exception the executor described (untrusted text, capped)."""
    try:
        status = Status(str(desc.get("status")))
    except ValueError:
        status = Status.RUNTIME_ERROR
    if status not in (Status.RUNTIME_ERROR, Status.COMPILE_ERROR):
        status = Status.RUNTIME_ERROR
    name = str(desc.get("type", "Exception"))[:80]
    what = str(desc.get("what", f"raised {name}"))[:200]
    fatal = bool(desc.get("fatal"))
    if phase == "import" and status is Status.RUNTIME_ERROR and not fatal:
        status, what = Status.COMPILE_ERROR, f"fails to import ({name})"
    message = str(desc.get("message", ""))[:MESSAGE_CAP]
    details: dict[str, Any] = {
        "kind": "exception", "phase": phase, "workload": where, "hidden": hidden,
        "exception": {"type": name, "message": "(withheld: hidden workload)" if hidden else message,
                      "trace": "" if hidden else str(desc.get("trace", ""))[:4000]},
    }
    reason = f"{what} on {where}" if phase != "import" else f"kernel {what}"
    return Failure(status, reason, details, fatal=fatal)


def from_exception(exc: BaseException, *, phase: str, where: str, hidden: bool,
                   candidate_dir: str) -> Failure:
    """A Failure for an exception the candidate raised while importing or running."""
    status, what, fatal = _kind(exc)
    if phase == "import" and status is Status.RUNTIME_ERROR and not fatal:
        status, what = Status.COMPILE_ERROR, f"fails to import ({type(exc).__name__})"
    message = str(exc).strip()
    if len(message) > MESSAGE_CAP:
        message = message[:MESSAGE_CAP] + " ..."
    details: dict[str, Any] = {
        "kind": "exception", "phase": phase, "workload": where, "hidden": hidden,
        "exception": {"type": type(exc).__name__,
                      "message": "(withheld: hidden workload)" if hidden else message,
                      "trace": _trace(exc, candidate_dir)},
    }
    reason = f"{what} on {where}" if phase != "import" else f"kernel {what}"
    return Failure(status, reason, details, fatal=fatal)
