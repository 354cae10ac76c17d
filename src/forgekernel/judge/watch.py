"""What the candidate tries to reach outside its call, seen inside the executor.

Installed before the candidate is imported and never removable from Python (an audit hook
cannot be taken back): attempts to open a network connection, to write a file outside the
executor's scratch directory (and its private /tmp), and to read a credential-like
environment variable are recorded. The sandbox already makes each of them fail (no network,
a read-only file system, an environment without credentials); recording the attempt turns
a kernel that swallows the failure into a clear REJECTED verdict.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator, MutableMapping
from typing import Any

CREDENTIAL = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|SESSION)|"
                        r"^(AWS|ANTHROPIC|OPENAI|GOOGLE|AZURE|HF|HUGGING|GITHUB|GH|SSH)_", re.I)
_NETWORK_SYMBOLS = frozenset({"socket", "connect", "bind", "sendto", "sendmsg", "getaddrinfo"})
"""C functions a kernel has no use for; looked up through ctypes, they bypass socket's own
audit events."""
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


class Attempts:
    """The attempts seen so far (kept in the executor, reported with every answer)."""

    def __init__(self, allowed_dirs: tuple[str, ...]) -> None:
        self.allowed = tuple(os.path.realpath(d) for d in allowed_dirs)
        self.seen: list[str] = []

    def note(self, what: str) -> None:
        if what not in self.seen and len(self.seen) < 20:
            self.seen.append(what)

    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        if event in ("socket.connect", "socket.sendto", "socket.bind"):
            self.note(f"opened a network connection ({event}, {str(args[1:2])[:80]})")
        elif event == "ctypes.dlsym" and len(args) >= 2 and str(args[1]) in _NETWORK_SYMBOLS:
            self.note(f"looked up the C library's {args[1]} through ctypes (a network connection)")
        elif event == "open" and len(args) >= 3 and _writes(args[1], args[2]):
            path = args[0]
            if isinstance(path, (str, bytes)) and not self._inside(os.fsdecode(path)):
                self.note(f"wrote outside its scratch directory ({os.fsdecode(path)[:120]})")

    def _inside(self, path: str) -> bool:
        real = os.path.realpath(path)
        return real == os.devnull or any(real == d or real.startswith(d + os.sep) for d in self.allowed)


def _writes(mode: Any, flags: Any) -> bool:
    if isinstance(mode, str) and any(c in mode for c in "wax+"):
        return True
    return isinstance(flags, int) and bool(flags & _WRITE_FLAGS)


class _Environ(MutableMapping):
    """os.environ, noting every read of a credential-like name."""

    def __init__(self, inner: Any, attempts: Attempts) -> None:
        self._inner, self._attempts = inner, attempts

    def _check(self, key: Any) -> None:
        if isinstance(key, str) and CREDENTIAL.search(key):
            self._attempts.note(f"read the credential-like environment variable {key}")

    def __getitem__(self, key: Any) -> Any:
        self._check(key)
        return self._inner[key]

    def get(self, key: Any, default: Any = None) -> Any:
        self._check(key)
        return self._inner.get(key, default)

    def __setitem__(self, key: Any, value: Any) -> None:
        self._inner[key] = value

    def __delitem__(self, key: Any) -> None:
        del self._inner[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._inner)

    def __len__(self) -> int:
        return len(self._inner)

    def copy(self) -> dict[str, str]:
        return dict(self._inner)


def install(scratch: str) -> Attempts:
    """Start recording (once per executor, before the candidate is imported)."""
    attempts = Attempts((scratch, "/tmp", "/dev/shm"))
    sys.addaudithook(attempts.hook)
    os.environ = _Environ(os.environ, attempts)  # noqa: B003 - a watch, not a cleanup: os.getenv reads this name
    return attempts
