"""The one-writer lock files of a run dir and an evolve chain: an ``flock`` that dies with its
process (even on SIGKILL), taken by the writer and probed by readers."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator
from pathlib import Path


@contextlib.contextmanager
def exclusive(path: Path, busy: Exception,
              unopenable: Callable[[OSError], Exception] | None = None) -> Iterator[None]:
    """Hold ``path`` exclusively while the block runs; raise ``busy`` when another process
    holds it, and ``unopenable(exc)`` (when given) when the file cannot be opened."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        if unopenable is None:
            raise
        raise unopenable(exc) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise busy from None
        yield
    finally:
        os.close(fd)


def held(path: Path) -> bool:
    """True while some process holds ``path`` (read-only: a missing file is not held)."""
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
