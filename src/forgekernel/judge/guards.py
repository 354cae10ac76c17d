"""Runtime guards of the worker (docs/judge.md threat model A1-A3, A5, B8, B9).

* :class:`Harness`: references to the callables of the modules and classes the judge
  relies on (timers, torch, tensors, the judge's own modules), taken before the candidate
  is imported; ``Harness.changes`` lists any that were replaced since.
* threads: Python threads started by candidate code that are still alive after a call.
* :func:`mutated_inputs`: inputs whose bits changed during a call.
* :func:`poison`: fills the allocator's free blocks (sized like the outputs) with a byte
  pattern, so output elements a candidate never writes show up (NaN or a huge value).
* :func:`filled_empties`: on the CPU, fresh tensors (``torch.empty``) filled with NaN (or the
  largest integer) for the call: freed memory the allocator hands out again cannot be
  poisoned reliably there (malloc's small-size bins), so uninitialised reads are made visible
  where they happen.
* :func:`silenced`: sends fds 1 and 2 to /dev/null (hidden workloads stay unprintable).
* :class:`PersistingL2`: resets the persisting-L2 lines between timed calls and notices a
  changed persisting-L2 limit or stream access-policy window (through the CUDA runtime).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import sys
import types
from collections.abc import Iterator
from typing import Any


def _tracked(value: Any) -> bool:
    return callable(value) or isinstance(value, (types.ModuleType, property, staticmethod, classmethod))


class Harness:
    """Identity snapshot of the callables in a set of modules and classes."""

    def __init__(self, targets: dict[str, Any]) -> None:
        self.targets = targets
        self.saved = {name: {k: v for k, v in vars(obj).items() if _tracked(v)}
                      for name, obj in targets.items()}
        self.changes = functools.partial(Harness._changes, self)  # this check as it was now

    def _changes(self) -> list[str]:
        """Names that were replaced or removed (and, on classes, added) since the snapshot."""
        out = []
        for name, obj in self.targets.items():
            now = vars(obj)
            before = self.saved[name]
            for key, value in before.items():
                if now.get(key, None) is not value and not torch_lazy_wrap(now.get(key, None), value):
                    out.append(f"{name}.{key}")
            if isinstance(obj, type):
                out.extend(f"{name}.{k}" for k, v in now.items() if k not in before and _tracked(v))
        return out


def torch_lazy_wrap(new: Any, old: Any) -> bool:
    """Whether ``new`` is torch's own wrapper around ``old`` that keeps Dynamo out of it
    (``torch._disable_dynamo``): importing ``torch._dynamo`` installs one on
    ``torch.manual_seed``, so a candidate that uses torch.compile replaces nothing. Checked
    by the wrapper's code object and the function its closure holds, not by its name."""
    code = getattr(new, "__code__", None)
    if code is None or getattr(new, "__wrapped__", None) is not old:
        return False
    import torch._compile

    if code is not torch._compile._disable_dynamo(_plain_function).__code__:
        return False
    cells = dict(zip(code.co_freevars, new.__closure__ or (), strict=False))
    return "fn" in cells and cells["fn"].cell_contents is old


def _plain_function() -> None:
    """A function to read the code object of torch's wrapper from (never called)."""


def harness_targets() -> dict[str, Any]:
    """The modules and classes whose callables the judge uses (import torch first)."""
    import builtins
    import hashlib
    import math
    import secrets
    import time

    import torch

    import forgekernel.delivery.channel as channel

    targets: dict[str, Any] = {
        "builtins": builtins, "time": time, "math": math, "secrets": secrets, "hashlib": hashlib,
        "torch": torch, "torch.Tensor": torch.Tensor, "torch.nn.functional": torch.nn.functional,
        "torch.cuda": torch.cuda, "torch.cuda.Event": torch.cuda.Event, "channel": channel,
        "channel.Envelope": channel.Envelope,
    }
    base = getattr(torch._C, "TensorBase", None)
    if base is not None:
        targets["torch._C.TensorBase"] = base
    for name, mod in list(sys.modules.items()):
        if name.startswith(("forgekernel.judge.", "forgekernel.profile.")) and mod is not None:
            targets[name] = mod
            for key, value in list(vars(mod).items()):  # their classes' methods too (a watcher's
                if isinstance(value, type) and value.__module__ == name:  # check swapped on its class)
                    targets[f"{name}.{key}"] = value
    return targets


# ------------------------------------------------------------------ threads


def thread_ids() -> set[int]:
    return set(sys._current_frames())


def candidate_threads(before: set[int], candidate_dir: str) -> list[str]:
    """New live threads whose stack runs code from the candidate's directory."""
    found = []
    for tid, frame in sys._current_frames().items():
        if tid in before:
            continue
        f = frame
        while f is not None:
            if f.f_code.co_filename.startswith(candidate_dir):
                found.append(f"{f.f_code.co_name} ({os.path.basename(f.f_code.co_filename)}:{f.f_lineno})")
                break
            f = f.f_back
    return found


def native_threads() -> int | None:
    """OS threads of this process (informational: libraries start their own)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Threads:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


# ------------------------------------------------------------------ memory


def mutated_inputs(args: list[Any], pristine: list[Any]) -> list[int]:
    """Indices of tensor inputs whose bits differ from their pristine copies."""
    import torch

    from forgekernel.judge.values import bitwise_equal

    return [i for i, (a, p) in enumerate(zip(args, pristine, strict=True))
            if isinstance(a, torch.Tensor) and not bitwise_equal(a, p)[0]]


def poison(sizes: list[int], device: str, pattern: int) -> None:
    """Fill freed blocks of the given byte sizes with ``pattern`` and release them again."""
    import torch

    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    blocks = [torch.full((max(int(n), 1),), pattern, dtype=torch.uint8, device=device) for n in sizes]
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    del blocks


@contextlib.contextmanager
def filled_empties(active: bool = True) -> Iterator[None]:
    """PyTorch's deterministic mode (warnings only) with ``fill_uninitialized_memory`` for the
    block, then the previous settings again."""
    if not active:
        yield
        return
    import torch
    import torch.utils.deterministic as det

    was = (torch.are_deterministic_algorithms_enabled(),
           torch.is_deterministic_algorithms_warn_only_enabled(), det.fill_uninitialized_memory)
    torch.use_deterministic_algorithms(True, warn_only=True)
    det.fill_uninitialized_memory = True
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(was[0], warn_only=was[1])
        det.fill_uninitialized_memory = was[2]


@contextlib.contextmanager
def silenced(active: bool = True) -> Iterator[None]:
    """Redirect fds 1 and 2 to /dev/null for the block (when ``active``)."""
    if not active:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        os.dup2(null, 2)
        yield
    finally:
        with contextlib.suppress(ValueError, OSError):
            sys.stdout.flush()
            sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, null):
            os.close(fd)


# ------------------------------------------------------------------ persisting L2

_LIMIT_PERSISTING_L2 = 0x06
_STREAM_ATTR_ACCESS_POLICY_WINDOW = 1


class PersistingL2:
    """Persisting-L2 state through the CUDA runtime.

    Every failed runtime call is followed by ``cudaGetLastError`` so that no error state is
    left behind for the next library call to trip over.
    """

    def __init__(self) -> None:
        self.lib = _cudart()
        self.window_ok = True
        self.baseline = self.limit()

    @property
    def available(self) -> bool:
        return self.lib is not None

    def _ok(self, rc: int) -> bool:
        if rc != 0:
            self.lib.cudaGetLastError()
        return rc == 0

    def limit(self) -> int | None:
        if self.lib is None:
            return None
        value = ctypes.c_size_t(0)
        if not self._ok(self.lib.cudaDeviceGetLimit(ctypes.byref(value), _LIMIT_PERSISTING_L2)):
            return None
        return int(value.value)

    def window_bytes(self, stream_handle: int) -> int | None:
        """Bytes of the stream's L2 access-policy window (None when it cannot be read)."""
        if self.lib is None or not self.window_ok:
            return None
        buf = (ctypes.c_char * 256)()  # a cudaLaunchAttributeValue union fits with room to spare
        rc = self.lib.cudaStreamGetAttribute(ctypes.c_void_p(stream_handle),
                                             _STREAM_ATTR_ACCESS_POLICY_WINDOW, buf)
        if not self._ok(rc):
            self.window_ok = False  # not readable on this stream: stop asking
            return None
        return int(ctypes.c_size_t.from_buffer(buf, 8).value)

    def reset(self) -> None:
        if self.lib is not None:
            self._ok(self.lib.cudaCtxResetPersistingL2Cache())

    def tampered(self, stream_handle: int) -> str | None:
        """Why the persisting-L2 state looks changed by the candidate, or None."""
        now = self.limit()
        if now is not None and now != self.baseline:
            return f"the persisting-L2 limit was changed ({self.baseline} -> {now} bytes)"
        window = self.window_bytes(stream_handle)
        if window:
            return f"an L2 access-policy window of {window} bytes was set on the stream"
        return None


def _cudart() -> Any:
    """The CUDA runtime library: the one already mapped into this process, else one found on
    disk (all runtimes act on the device's primary context); None when there is none."""
    import ctypes.util
    import glob

    paths: list[str] = []
    try:
        with open("/proc/self/maps") as fh:
            paths += sorted({line.split()[-1] for line in fh if "libcudart.so" in line})
    except OSError:
        pass
    for site in sys.path:
        paths += sorted(glob.glob(os.path.join(site, "nvidia", "*", "lib", "libcudart.so*")))
    paths += sorted(glob.glob("/usr/local/cuda/lib64/libcudart.so*"))
    found = ctypes.util.find_library("cudart")
    paths += [found] if found else []
    for path in paths:
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


def timers() -> list[str]:
    """Interval timers and Python signal handlers the candidate installed."""
    import signal

    found = [name for name, which in (("ITIMER_REAL", signal.ITIMER_REAL),
                                      ("ITIMER_VIRTUAL", signal.ITIMER_VIRTUAL),
                                      ("ITIMER_PROF", signal.ITIMER_PROF))
             if signal.getitimer(which) != (0.0, 0.0)]
    for sig in (signal.SIGALRM, signal.SIGVTALRM, signal.SIGPROF, signal.SIGUSR1, signal.SIGUSR2):
        if callable(signal.getsignal(sig)):
            found.append(f"handler for {signal.Signals(sig).name}")
    return found
