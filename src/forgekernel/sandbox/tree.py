"""Ending a sandboxed command and everything it started."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time

from forgekernel.sandbox._boot import descendants


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return True
    return stat[stat.rfind(b")") + 2:].startswith(b"Z")


def kill_tree(proc: subprocess.Popen | int, wait_s: float = 2.0) -> None:
    """SIGKILL a sandbox launcher and every process below it, then wait (up to ``wait_s``)
    until they are gone. Does not reap ``proc`` itself (call ``proc.wait()``).

    Descendants die first, the launcher last: the launcher is a child subreaper, so a
    process that double-forked and called ``setsid()`` is still below it while it lives,
    and new forks made during the killing are found by the next round. With a PID
    namespace, killing the namespace's init ends the rest as well. A ``Popen`` already
    reaped is left alone (its launcher cleaned up before exiting; its pid may be reused).
    """
    if isinstance(proc, subprocess.Popen):
        if proc.returncode is not None:
            return
        pid = proc.pid
    else:
        pid = proc
    killed: set[int] = set()
    for _ in range(100):
        pids = descendants(pid)
        if not pids:
            break
        killed.update(pids)
        for child in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(child, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + wait_s
    while killed and time.monotonic() < deadline:
        killed = {p for p in killed if not _gone(p)}
        if killed:
            time.sleep(0.01)
