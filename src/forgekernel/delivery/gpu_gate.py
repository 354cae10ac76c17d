"""When a GPU job holds the device: its worker asks, the runner grants.

A job that is not gated holds the GPU's lock exclusively from its spawn to its end. A gated
job (:attr:`~forgekernel.delivery.base.Job.gated`) starts without it: its worker imports
torch and its own modules first, then asks before its first GPU work, with one line on a
private pipe: ``S <bytes>`` for work that may share the GPU with other jobs (correctness
checks, compilation: nothing is timed) or ``X`` for work that must have it alone (timing).
The runner takes an ``flock`` on the GPU's lock file, shared or exclusive, and answers
``!``; the job's timeout does not run while it waits. A shared request is granted shared
only when the runner shares the GPU (``share_bytes``) and the worker's estimate of its
footprint fits under it; otherwise it is exclusive.

A turnstile file keeps a waiting exclusive request from starving behind a stream of shared
ones: every request passes it, and an exclusive request holds it until it is granted.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from pathlib import Path

_POLL_S = 0.02


class Stopped(Exception):
    """The job ended while its request waited."""


def _flock(fd: int, flags: int, stop: threading.Event | None) -> None:
    if stop is None:
        fcntl.flock(fd, flags)
        return
    while True:
        try:
            fcntl.flock(fd, flags | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if stop.wait(_POLL_S):
                raise Stopped from None


class DeviceLock:
    """One GPU's lock, held shared (``S``) or exclusive (``X``) through one open file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.turnstile = path.with_name(path.name + ".turnstile")
        self.fd: int | None = None
        self.mode = ""

    def acquire(self, mode: str, stop: threading.Event | None = None) -> None:
        """Hold the lock in ``mode``, converting a held one (blocks; :class:`Stopped` when
        ``stop`` is set first, the lock then not held)."""
        if mode == self.mode:
            return
        if self.fd is None:
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        if self.mode:  # a conversion lets go first: a holder waiting in line while it holds
            fcntl.flock(self.fd, fcntl.LOCK_UN)  # would deadlock with the one at the turnstile
            self.mode = ""
        gate = os.open(self.turnstile, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            _flock(gate, fcntl.LOCK_EX, stop)
            _flock(self.fd, fcntl.LOCK_SH if mode == "S" else fcntl.LOCK_EX, stop)
            self.mode = mode
        finally:
            os.close(gate)

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
        self.fd, self.mode = None, ""

    @contextlib.contextmanager
    def held(self, mode: str = "X"):
        self.acquire(mode)
        try:
            yield
        finally:
            self.release()


class Gate(threading.Thread):
    """The runner's side of one gated job: reads requests, takes the lock, grants."""

    def __init__(self, lock: DeviceLock | None, share_bytes: int | None, requests: int, grants: int) -> None:
        super().__init__(daemon=True)
        self.lock, self.share_bytes = lock, share_bytes
        self.requests, self.grants = requests, grants
        self.stop = threading.Event()
        self.waited_s, self.held_s, self.x_s, self.modes = 0.0, 0.0, 0.0, ""
        self._x_since: float | None = None
        self._waiting_since: float | None = None
        self._held_since: float | None = None
        self._mu = threading.Lock()

    def mode_for(self, line: bytes) -> str:
        """``X`` unless the line asks ``S <bytes>`` and those bytes fit the shared budget."""
        parts = line.decode(errors="replace").split()
        if len(parts) == 2 and parts[0] == "S" and self.share_bytes is not None:
            with contextlib.suppress(ValueError):
                if 0 <= int(parts[1]) <= self.share_bytes:
                    return "S"
        return "X"

    def run(self) -> None:
        buf = b""
        try:
            while chunk := os.read(self.requests, 256):
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    self._grant(self.mode_for(line))
        except (Stopped, OSError):
            pass

    def _grant(self, mode: str) -> None:
        with self._mu:
            self._waiting_since = time.monotonic()
        if self.lock is not None:
            self.lock.acquire(mode, self.stop)
        with self._mu:
            now = time.monotonic()
            self.waited_s += now - self._waiting_since
            self._waiting_since = None
            if self._held_since is None:
                self._held_since = now
            if mode == "X" and self._x_since is None:
                self._x_since = now
        self.modes += mode
        os.write(self.grants, f"{mode}\n".encode())  # what was granted: a shared request may get X

    def paused_s(self) -> float:
        """Seconds the job has spent waiting for the device so far (its timeout excludes them)."""
        with self._mu:
            extra = time.monotonic() - self._waiting_since if self._waiting_since is not None else 0.0
            return self.waited_s + extra

    def close(self) -> None:
        """The job ended: stop a waiting request, let the lock go, close the pipes."""
        self.stop.set()
        self.join(timeout=5)
        with self._mu:
            now = time.monotonic()
            if self._held_since is not None:
                self.held_s = now - self._held_since
            if self._x_since is not None:
                self.x_s = now - self._x_since
        if self.lock is not None:
            self.lock.release()
        for fd in (self.requests, self.grants):
            with contextlib.suppress(OSError):
                os.close(fd)


def ask(requests: int, grants: int, mode: str, footprint: int = 0) -> tuple[float, str]:
    """The worker's side: ask for the device in ``mode`` and wait for it; the seconds waited
    and the mode granted (``X`` for a shared request the runner does not share).
    Raises SystemExit when the runner is gone."""
    start = time.monotonic()
    line = f"S {int(footprint)}\n" if mode == "S" else "X\n"
    os.write(requests, line.encode())
    got = b""
    while not got.endswith(b"\n"):
        chunk = os.read(grants, 16)
        if not chunk:
            raise SystemExit("the runner went away before granting the device")
        got += chunk
    return time.monotonic() - start, got.decode(errors="replace").strip()
