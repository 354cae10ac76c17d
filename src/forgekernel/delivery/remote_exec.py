"""The far end of the ssh delivery: run one job on this host and send its result back.

The ssh runner starts ``python -m forgekernel.delivery.remote_exec`` with the judge bundle
on ``PYTHONPATH``. On stdin it sends one JSON request line, then the job's input tar, and
then keeps stdin open for as long as it waits: end of input means the connection or the
caller is gone, and the worker's process group is killed at once.

The job runs through the same runners as a local one (fresh process group, hard timeout,
output cap, the signed result pipe, and on a GPU the per-device flock of this host), so
every guarantee of the local delivery holds here. The launcher checks the pipe's frame and
forwards the whole :class:`JobResult` as one frame signed with the caller's key, after
:data:`DELIMITER`, on stdout. The worker never sees that key (it arrives on the launcher's
stdin), and the worker's own stdout and stderr go to the launcher's pipes, not to ssh.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

DELIMITER = b"\n--forgekernel-result-frame--\n"
"""Precedes the launcher's signed frame on its stdout."""

EXIT_ABORTED = 4
"""The caller went away before the job ended; nothing is sent back."""

_STALE_JOB_S = 24 * 3600


class _Hangup(threading.Thread):
    """Reads the caller's stdin to its end, then kills the worker's process group."""

    def __init__(self, stream) -> None:
        super().__init__(daemon=True)
        self.stream, self.lock, self.pid, self.gone = stream, threading.Lock(), None, threading.Event()

    def run(self) -> None:
        while self.stream.read1(65536):
            pass
        self.gone.set()
        self._kill()

    def spawned(self, pid: int | None) -> None:
        with self.lock:
            self.pid = pid
        if self.gone.is_set():
            self._kill()

    def _kill(self) -> None:
        with self.lock:
            if self.pid is not None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.pid, signal.SIGKILL)


def local_runner(device: str, gpu: int | None, name: str, on_spawn=None):
    """This host's runner for ``device`` (``cpu`` or ``gpu``), reporting itself as ``name``."""
    from forgekernel.delivery.local import CpuRunner, LocalGpuRunner

    base = CpuRunner if device == "cpu" else LocalGpuRunner

    class Delegated(base):
        def on_spawn(self, pid: int) -> None:
            if on_spawn is not None:
                on_spawn(pid)

    runner = Delegated() if device == "cpu" else Delegated(gpu=gpu)
    runner.name = name
    return runner


def _read_exact(stream, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = stream.read(left)
        if not chunk:
            raise EOFError("the caller's input ended early")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _prune(jobs: Path) -> None:
    now = time.time()
    for path in jobs.glob("job-*"):
        with contextlib.suppress(OSError):
            if now - path.stat().st_mtime > _STALE_JOB_S:
                shutil.rmtree(path, ignore_errors=True)


def run_request(request: dict[str, Any], inputs: bytes, hangup: _Hangup) -> dict[str, Any] | None:
    """Run the requested job in a fresh job dir (removed afterwards); None if aborted."""
    from forgekernel.delivery.base import Job
    from forgekernel.delivery.shipping import unpack_inputs

    jobs = Path(request["workdir"]) / "jobs"
    jobs.mkdir(parents=True, exist_ok=True)
    _prune(jobs)
    jobdir = Path(tempfile.mkdtemp(prefix="job-", dir=jobs))
    try:
        spec = dict(request["job"])
        spec["payload"] = unpack_inputs(spec["payload"], inputs, jobdir)
        spec["cwd"] = str(jobdir)
        runner = local_runner(request["device"], request.get("gpu"), "ssh", hangup.spawned)
        result = runner.run(Job(**spec))
    finally:
        hangup.spawned(None)
        shutil.rmtree(jobdir, ignore_errors=True)
    return None if hangup.gone.is_set() else result.model_dump()


def main() -> int:
    import forgekernel
    from forgekernel.delivery.channel import encode_frame

    stdin = sys.stdin.buffer
    request = json.loads(stdin.readline())
    inputs = _read_exact(stdin, int(request["inputs_len"]))
    with contextlib.suppress(OSError):
        os.utime(Path(forgekernel.__file__).resolve().parents[1])  # bundle in use: not stale
    hangup = _Hangup(stdin)
    hangup.start()
    result = run_request(request, inputs, hangup)
    if result is None:
        return EXIT_ABORTED
    body = {"job": result, "judge": forgekernel.__file__, "host": socket.gethostname()}
    try:
        sys.stdout.buffer.write(DELIMITER + encode_frame(body, request["key"]))
        sys.stdout.buffer.flush()
    except BrokenPipeError:
        return EXIT_ABORTED
    return 0


if __name__ == "__main__":
    sys.exit(main())
