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
    """Reads the caller's stdin to its end; then ends the job and this process.

    The caller closes stdin only after this process has ended, so an early end of input
    means nobody is waiting for the answer (a dropped connection, a caller that gave up).
    A worker that runs is killed with its group; a job still waiting for the GPU lock is
    dropped; one between the lock and its spawn is killed as soon as it has a pid.
    """

    def __init__(self, fd: int) -> None:
        super().__init__(daemon=True)
        self.fd, self.lock = fd, threading.Lock()
        self.pid: int | None = None
        self.spawning, self.gone = False, False
        self.jobdir: Path | None = None

    def run(self) -> None:
        while os.read(self.fd, 65536):
            pass
        with self.lock:
            self.gone = True
            if self.pid is not None or not self.spawning:
                self._end()

    def before_spawn(self) -> None:
        with self.lock:
            if self.gone:
                self._end()
            self.spawning = True

    def spawned(self, pid: int) -> None:
        with self.lock:
            self.pid = pid
            if self.gone:
                self._end()

    def finished(self) -> None:
        with self.lock:
            self.pid, self.spawning, self.jobdir = None, False, None

    def _end(self) -> None:
        """Called with the lock held: kill the worker group, drop the job dir, exit."""
        if self.pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
        if self.jobdir is not None:
            shutil.rmtree(self.jobdir, ignore_errors=True)
        os._exit(EXIT_ABORTED)


def local_runner(device: str, gpu: int | None, name: str, hangup: _Hangup | None = None):
    """This host's runner for ``device`` (``cpu`` or ``gpu``); on a GPU it reports ``name``.

    With ``hangup``, the runner tells it when a worker is about to start (the GPU lock is
    held) and its pid once started, so a hang-up can end that worker.
    """
    from forgekernel.delivery.local import CpuRunner, LocalGpuRunner

    base = CpuRunner if device == "cpu" else LocalGpuRunner

    class Delegated(base):
        @contextlib.contextmanager
        def device_lock(self):
            with super().device_lock():
                if hangup is not None:
                    hangup.before_spawn()
                yield

        def on_spawn(self, pid: int) -> None:
            if hangup is not None:
                hangup.spawned(pid)

    runner = Delegated() if device == "cpu" else Delegated(gpu=gpu)
    # Under the interpreter the worker is told 'cpu', as on the cpu delivery: workers key
    # interpreter behaviour (tolerances, device) on it. On a GPU it is told where it runs.
    runner.name = "cpu" if device == "cpu" else name
    return runner


def read_request(fd: int) -> tuple[dict[str, Any], bytes]:
    """Read the request line and then exactly its ``inputs_len`` bytes of inputs from ``fd``.

    Raw reads, no buffered reader: the hang-up watcher keeps reading the same fd.
    """
    data = bytearray()
    while b"\n" not in data:
        chunk = os.read(fd, 65536)
        if not chunk:
            raise EOFError("the caller's input ended before the request line")
        data += chunk
    line, rest = bytes(data).split(b"\n", 1)
    request = json.loads(line)
    need = int(request["inputs_len"])
    inputs = bytearray(rest)
    while len(inputs) < need:
        chunk = os.read(fd, min(need - len(inputs), 1 << 20))
        if not chunk:
            raise EOFError("the caller's input ended inside the job inputs")
        inputs += chunk
    return request, bytes(inputs[:need])


def _prune(jobs: Path) -> None:
    now = time.time()
    for path in jobs.glob("job-*"):
        with contextlib.suppress(OSError):
            if now - path.stat().st_mtime > _STALE_JOB_S:
                shutil.rmtree(path, ignore_errors=True)


def run_request(request: dict[str, Any], inputs: bytes, hangup: _Hangup) -> dict[str, Any]:
    """Run the requested job in a fresh job dir (removed afterwards)."""
    from forgekernel.delivery.base import Job
    from forgekernel.delivery.shipping import unpack_inputs

    jobs = Path(request["workdir"]) / "jobs"
    jobs.mkdir(parents=True, exist_ok=True)
    _prune(jobs)
    jobdir = Path(tempfile.mkdtemp(prefix="job-", dir=jobs))
    hangup.jobdir = jobdir
    try:
        spec = dict(request["job"])
        spec["payload"] = unpack_inputs(spec["payload"], inputs, jobdir)
        spec["cwd"] = str(jobdir / "cwd")  # empty: nothing there shadows the worker's imports
        (jobdir / "cwd").mkdir()
        runner = local_runner(request["device"], request.get("gpu"), "ssh", hangup)
        result = runner.run(Job(**spec))
    finally:
        hangup.finished()
        shutil.rmtree(jobdir, ignore_errors=True)
    return result.model_dump()


def main() -> int:
    import forgekernel
    from forgekernel.delivery.channel import encode_frame

    request, inputs = read_request(0)
    with contextlib.suppress(OSError):
        os.utime(Path(forgekernel.__file__).resolve().parents[1])  # bundle in use: not stale
    hangup = _Hangup(0)
    hangup.start()
    result = run_request(request, inputs, hangup)
    body = {"job": result, "judge": forgekernel.__file__, "host": socket.gethostname()}
    try:
        sys.stdout.buffer.write(DELIMITER + encode_frame(body, request["key"]))
        sys.stdout.buffer.flush()
    except BrokenPipeError:
        return EXIT_ABORTED
    return 0


if __name__ == "__main__":
    sys.exit(main())
