"""Runners that start a fresh worker process on this machine.

Each job gets a new process in its own session (process group), its payload on stdin and
a private pipe for the answer. A hard timeout, an output flood or the end of the job kills
the whole group, so nothing a candidate spawns outlives its judgement.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from forgekernel.config import worker_env
from forgekernel.delivery.base import Job, JobResult
from forgekernel.delivery.channel import verify_frames
from forgekernel.delivery.gpu_gate import DeviceLock, Gate

_TAIL = 16 * 1024


class _Drain(threading.Thread):
    """Reads a pipe to EOF, keeping only a tail and counting bytes."""

    def __init__(self, stream, counter: list[int], cap: int, on_flood) -> None:
        super().__init__(daemon=True)
        self.stream, self.counter, self.cap, self.on_flood = stream, counter, cap, on_flood
        self.tail = bytearray()

    def run(self) -> None:
        while chunk := self.stream.read1(65536) if hasattr(self.stream, "read1") else b"":
            self.counter[0] += len(chunk)
            self.tail += chunk
            del self.tail[:-_TAIL]
            if self.counter[0] > self.cap:
                self.on_flood()
        with contextlib.suppress(OSError):
            self.stream.close()


class _Collect(threading.Thread):
    """Reads the result pipe to EOF (bounded)."""

    def __init__(self, fd: int, cap: int) -> None:
        super().__init__(daemon=True)
        self.fd, self.cap, self.data, self.overflow = fd, cap, bytearray(), False

    def run(self) -> None:
        while chunk := os.read(self.fd, 65536):
            if len(self.data) + len(chunk) > self.cap:
                self.overflow = True
                continue
            self.data += chunk
        os.close(self.fd)


class SubprocessRunner:
    """Base for runners that spawn ``python -m <module>`` locally."""

    name = "local"
    timing_label = "device"

    def __init__(self, python: str | None = None) -> None:
        self.python = python or sys.executable

    # -- hooks
    def extra_env(self) -> dict[str, str]:
        return {}

    @contextlib.contextmanager
    def device_lock(self):
        yield

    def on_spawn(self, pid: int) -> None:
        """Hook: the worker started; ``pid`` is also its process group id (default: nothing)."""

    def describe(self) -> dict[str, Any]:
        return {"delivery": self.name, "timing": self.timing_label, "python": self.python}

    def gate_lock(self) -> DeviceLock | None:
        """What a gated job's requests take (None: granted at once, as on the CPU)."""
        return None

    share_bytes: int | None = None
    """A gated job's shared requests up to this footprint share the GPU (None: never)."""

    # -- the job
    def run(self, job: Job) -> JobResult:
        if job.gated:
            return self._run(job)
        with self.device_lock():
            return self._run(job)

    def _run(self, job: Job) -> JobResult:
        key = secrets.token_hex(32)
        rfd, wfd = os.pipe()
        envelope = {"key": key, "fd": wfd, "delivery": self.name, "timing_label": self.timing_label,
                    "payload": job.payload}
        gate_fds, kept = _gate_pipes(job.gated)
        if gate_fds:
            envelope["gate"] = list(kept)
            envelope["share"] = self.share_bytes is not None  # the worker sizes its footprint
        env = worker_env(self.extra_env())
        env.update(job.env)
        env["PYTHONUNBUFFERED"] = "1"
        env.setdefault("PYTHONFAULTHANDLER", "1")
        start = time.monotonic()
        with _scratch(job) as scratch:
            try:
                how, launch = self._command(job, env, scratch)
            except RuntimeError as exc:
                for fd in (rfd, wfd, *gate_fds):
                    os.close(fd)
                return JobResult(channel_error=str(exc))
            with tempfile.TemporaryFile() as stdin_file, _interrupts_held():
                stdin_file.write(json.dumps(envelope).encode())
                stdin_file.seek(0)
                proc = subprocess.Popen(
                    **how, stdin=stdin_file, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                    pass_fds=(wfd, *kept), start_new_session=True, preexec_fn=_die_with_parent,
                )
                for fd in (wfd, *kept):
                    os.close(fd)
                self.on_spawn(proc.pid)
            gate = None
            if gate_fds:
                gate = Gate(self.gate_lock(), self.share_bytes, gate_fds[0], gate_fds[3])
                gate.start()
            return self._wait(job, proc, launch, rfd, key, start, gate)

    def _command(self, job: Job, env: dict[str, str], scratch: Path | None) -> tuple[dict[str, Any], Any]:
        """Popen's args, env and cwd for the worker, and the sandbox launch (or None)."""
        if not job.sandboxed:
            return {"args": [self.python, "-m", job.module], "env": env, "cwd": job.cwd or None}, None
        from forgekernel import sandbox

        mech = sandbox.detect()
        if mech is None:
            raise RuntimeError(f"no sandbox for candidate code on this machine: {sandbox.probe().reason}")
        seen = (*sandbox.python_paths(), *_named_paths(job.payload))
        spec = sandbox.SandboxSpec(scratch=scratch, readonly=seen, env=sandbox.filter_env(env),
                                   gpu=self.name != "cpu", cwd=scratch)
        launch = sandbox.command(mech, spec, sandbox.python_argv(job.module, python=self.python))
        how = launch.popen_kwargs()
        how["cwd"] = str(scratch)
        return how, launch

    def _wait(self, job: Job, proc: subprocess.Popen, launch: Any, rfd: int, key: str,
              start: float, gate: Gate | None = None) -> JobResult:
        flooded = threading.Event()

        def flood() -> None:
            flooded.set()
            _kill_group(proc.pid)

        counter = [0]
        drains = [_Drain(proc.stdout, counter, job.output_cap_bytes, flood),
                  _Drain(proc.stderr, counter, job.output_cap_bytes, flood)]
        collect = _Collect(rfd, cap=job.output_cap_bytes)
        for t in (*drains, collect):
            t.start()
        timed_out = not _answered_or_ended(proc, collect, start + job.timeout_s, gate)
        # Kill the group in every case: a candidate's background children die with it (and a
        # worker that has sent its one answer has nothing left to do: its teardown, a CUDA
        # context's among it, is not waited for).
        _kill_group(proc.pid)
        if launch is not None:
            from forgekernel.sandbox import kill_tree

            kill_tree(proc)
        proc.wait()
        if gate is not None:
            gate.close()
        for t in (*drains, collect):
            t.join(timeout=10)
        wall = time.monotonic() - start
        result, channel_error = None, ""
        if not timed_out and not flooded.is_set():
            if collect.overflow:
                channel_error = "result larger than the output cap"
            else:
                result, channel_error = verify_frames(bytes(collect.data), key)
        rc = proc.returncode
        code, sig = launch.status(rc) if launch is not None else (rc if rc >= 0 else None,
                                                                  -rc if rc < 0 else None)
        return JobResult(
            result=result, exit_code=code, signal=sig, timed_out=timed_out,
            flooded=flooded.is_set(), channel_error=channel_error if result is None or channel_error else "",
            stdout_tail=drains[0].tail.decode(errors="replace"),
            stderr_tail=drains[1].tail.decode(errors="replace"), wall_s=wall,
            gpu_wait_s=gate.waited_s if gate else 0.0, gpu_held_s=gate.held_s if gate else 0.0,
            gpu_modes=gate.modes if gate else "", gpu_x_s=gate.x_s if gate else 0.0,
        )


def _answered_or_ended(proc: subprocess.Popen, collect: _Collect, deadline: float,
                       gate: Gate | None = None) -> bool:
    """Wait until the worker's answer is complete (its result pipe closed, which it does
    right after its one frame) or the worker ended; False when ``deadline`` passed first
    (moved on by the time a gated worker waited for the GPU)."""

    def left() -> float:
        return deadline + (gate.paused_s() if gate is not None else 0.0) - time.monotonic()

    while collect.is_alive() and left() > 0:
        collect.join(timeout=min(left(), 0.5) if gate is not None else left())
    if collect.is_alive():
        return False
    if collect.data:
        return True
    while left() > 0:  # the pipe closed without an answer: its exit status says why
        try:
            proc.wait(timeout=min(left(), 0.5) if gate is not None else left())
            return True
        except subprocess.TimeoutExpired:
            continue
    return proc.poll() is not None


def _gate_pipes(gated: bool) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """A gated job's pipes: (requests_r, requests_w, grants_r, grants_w) and the two ends
    the worker keeps (requests_w, grants_r); nothing for a job that is not gated."""
    if not gated:
        return (), ()
    req_r, req_w = os.pipe()
    grant_r, grant_w = os.pipe()
    return (req_r, req_w, grant_r, grant_w), (req_w, grant_r)


@contextlib.contextmanager
def _scratch(job: Job) -> Iterator[Path | None]:
    """A sandboxed job's writable directory: its ``cwd``, else a private temporary one."""
    if not job.sandboxed or job.cwd:
        yield Path(job.cwd) if job.cwd else None
        return
    with tempfile.TemporaryDirectory(prefix="forge-job-") as tmp:
        yield Path(tmp)


def _named_paths(payload: Any) -> list[Path]:
    """Existing absolute paths named anywhere in ``payload`` (a file: its directory)."""
    found: list[Path] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v)
        elif isinstance(value, str) and value.startswith("/") and "\n" not in value and len(value) < 4096:
            path = Path(value)
            with contextlib.suppress(OSError):
                if path.is_file():
                    found.append(path.parent)
                elif path.is_dir():
                    found.append(path)

    walk(payload)
    return found


_HELD = {signal.SIGINT, signal.SIGTERM}


@contextlib.contextmanager
def _interrupts_held() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM back while the main thread forks a worker.

    A signal that lands during the fork would raise KeyboardInterrupt inside the at-fork
    hooks (logging registers one), where Python ignores exceptions: the Ctrl-C was lost and
    the run went on. Held, it is delivered when the block ends, once the child is known.
    """
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers run in the main thread only
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _die_with_parent() -> None:
    """In the child: get SIGKILL when the parent dies (Linux), so a killed `forge` leaves no
    worker timing on the GPU behind it; and take signals again (the parent held them)."""
    import ctypes

    signal.pthread_sigmask(signal.SIG_UNBLOCK, _HELD)

    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


class CpuRunner(SubprocessRunner):
    """Fresh local process under the Triton interpreter; no GPU, correctness only."""

    name = "cpu"
    timing_label = "cpu-interpret"

    def extra_env(self) -> dict[str, str]:
        return {"TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""}


class LocalGpuRunner(SubprocessRunner):
    """Fresh local process on this machine's GPU, holding a per-device lock while it runs."""

    name = "local"
    timing_label = "device"

    def __init__(self, gpu: int | None = None, python: str | None = None, *,
                 share_gb: float | None = None, lock_dir: Path | None = None,
                 lock_log: str | Path | None = None) -> None:
        super().__init__(python)
        self.gpu = gpu
        self.lock_log = Path(lock_log) if lock_log else None
        self.share_bytes = int(share_gb * 2**30) if share_gb else None
        self.lock_path = (lock_dir or Path(tempfile.gettempdir())) / \
            f"forgekernel-gpu{gpu if gpu is not None else 'all'}.lock"

    def extra_env(self) -> dict[str, str]:
        env = {"TRITON_INTERPRET": "0"}
        if self.gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = str(self.gpu)
        return env

    @contextlib.contextmanager
    def device_lock(self):
        with DeviceLock(self.lock_path).held("X"):
            yield

    def run(self, job: Job) -> JobResult:
        started, t0 = time.time(), time.monotonic()
        if job.gated:
            res = self._run(job)
            self._log(job, started, res.gpu_modes, res.gpu_wait_s, res.gpu_held_s, res.gpu_x_s)
            return res
        with self.device_lock():
            waited = time.monotonic() - t0
            res = self._run(job)
        self._log(job, started, "whole", waited, res.wall_s, res.wall_s)
        return res

    def _log(self, job: Job, started: float, modes: str, wait_s: float, held_s: float, x_s: float) -> None:
        """One line of the lock log (FK_GPU_LOCK_LOG), written whole with one append."""
        if self.lock_log is None:
            return
        line = json.dumps({"start": round(started, 3), "end": round(time.time(), 3), "module": job.module,
                           "modes": modes, "wait_s": round(wait_s, 3), "held_s": round(held_s, 3),
                           "exclusive_s": round(x_s, 3)})
        with contextlib.suppress(OSError):
            fd = os.open(self.lock_log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, (line + "\n").encode())
            finally:
                os.close(fd)

    def gate_lock(self) -> DeviceLock:
        return DeviceLock(self.lock_path)

    def describe(self) -> dict[str, Any]:
        shared = round(self.share_bytes / 2**30, 2) if self.share_bytes else None
        return {**super().describe(), "gpu": self.gpu, "share_gb": shared}
