"""A GPU-side gate, opened by another process: device time the verifier measures itself.

The process that runs calls (the executor, or the verifier for the reference) enqueues a
*gate* kernel that spins on a word of host memory, then K calls, then a *signal* kernel
that writes the batch number into a second word. While the gate is closed the host has
all the time it needs to enqueue the calls (its Python and launch latency stay out of the
measurement); the verifier then opens the gate and polls for the signal with its own
clock. The batch's wall time is device time of K back-to-back calls plus a few
microseconds of PCIe latency, observed by a process that never ran the calls, on inputs
it wrote after they were enqueued.

The words live in a memfd mapping shared by file descriptor; each process registers it
with the CUDA runtime as mapped host memory, so kernels read and write it directly.
Nothing here runs on the CPU interpreter.

A spinning kernel and lazy loading do not mix: the first launch of a kernel may load its
module, and loading may wait for the device to go idle, which it never does while the gate
spins. So a gate's own kernels are launched once before any gate closes, the executor runs
a batch's calls once ungated before its first gated batch, and the gate gives up by itself
after ``limit_s`` (it then writes the batch number into the *expired* word): a call that
waits on the device (a host synchronisation inside the timed call) costs that long and
fails, instead of hanging the judge.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import triton
import triton.language as tl

from forgekernel.judge.hostwords import DONE_OFFSET, EXPIRED_OFFSET, GATE_OFFSET, SIZE, HostWords

LIMIT_S = 30.0
"""How long a closed gate spins before it gives up (the batch then counts as expired)."""
_REGISTER_MAPPED_PORTABLE = 0x02 | 0x01


@dataclass(frozen=True)
class _Word:
    """A pointer Triton accepts (it needs ``data_ptr()`` and ``dtype``)."""

    address: int
    dtype: Any

    def data_ptr(self) -> int:
        return self.address


class DeviceGate:
    """Enqueues the gate and the signal on the current stream of this process's GPU."""

    def __init__(self, words: HostWords, limit_s: float = LIMIT_S) -> None:
        import torch

        self.words, self.limit_ns = words, int(limit_s * 1e9)
        rc = torch.cuda.cudart().cudaHostRegister(words.address, SIZE, _REGISTER_MAPPED_PORTABLE)
        if int(rc) != 0:
            raise RuntimeError(f"cudaHostRegister of the gate words failed ({rc})")
        self.gate = _Word(words.address + GATE_OFFSET, torch.int32)
        self.done = _Word(words.address + DONE_OFFSET, torch.int32)
        self.expired = _Word(words.address + EXPIRED_OFFSET, torch.int32)
        # load both kernels now: a first launch behind a closed gate could wait for it forever
        _gate_wait[(1,)](self.gate, self.expired, words.read(GATE_OFFSET), self.limit_ns)
        _gate_signal[(1,)](self.done, words.read(DONE_OFFSET))
        torch.cuda.synchronize()

    def wait(self, batch: int) -> None:
        """Enqueue: spin until the gate word equals ``batch`` (or the limit passes)."""
        _gate_wait[(1,)](self.gate, self.expired, batch, self.limit_ns)

    def signal(self, batch: int) -> None:
        """Enqueue: write ``batch`` into the done word (system scope, after the calls)."""
        _gate_signal[(1,)](self.done, batch)


@triton.jit
def _now():
    return tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64,
                                     is_pure=False, pack=1)


@triton.jit(do_not_specialize=["expect", "limit_ns"])  # one compiled kernel for every batch
def _gate_wait(flag, expired, expect, limit_ns):
    start = _now()
    value = tl.load(flag, volatile=True)
    late = False
    while (value != expect) & (not late):
        value = tl.load(flag, volatile=True)
        late = (_now() - start) > limit_ns
    if value != expect:
        tl.atomic_xchg(expired, expect, sem="release", scope="sys")


@triton.jit(do_not_specialize=["value"])
def _gate_signal(done, value):
    tl.atomic_xchg(done, value, sem="release", scope="sys")


def expired(words: HostWords, batch: int) -> bool:
    """Whether the gate of ``batch`` gave up before it was opened."""
    return words.read(EXPIRED_OFFSET) == batch


@dataclass(frozen=True)
class Reading:
    """A batch as this process's clock saw it."""

    seconds: float
    """From just before the gate opened to the poll that saw the signal: never shorter than
    the batch (an upper bound the process running the calls cannot shorten)."""
    slack: float
    """How much of it may be this process's own delay rather than the batch: the time the
    opening write took plus the time from just before the last poll that missed the signal
    to just after the one that saw it. Microseconds while the process keeps its core; a
    scheduler's time slice when the core was taken away at the wrong moment (a loaded
    machine)."""

    def disturbed(self) -> bool:
        """Whether the slack is large enough to move the figure (see DISTURBED_*)."""
        return self.slack > max(DISTURBED_MIN_S, DISTURBED_FRAC * self.seconds)


YIELD_AFTER_S = 1.0
"""Polls spin for this long before each yields its core: a yield on a busy machine gives the
core away for a time slice (milliseconds), which a batch of a few milliseconds cannot absorb."""
DISTURBED_MIN_S, DISTURBED_FRAC = 20e-6, 0.002
"""A reading whose slack exceeds both 20 us and 0.2 % of its seconds is disturbed."""


def open_and_time(words: HostWords, batch: int, timeout_s: float) -> Reading | None:
    """Open the gate for ``batch`` and read its batch until the signal (None: timed out)."""
    start = time.perf_counter()
    words.write(GATE_OFFSET, batch)
    opened = last = time.perf_counter()
    deadline = start + timeout_s
    while True:
        now = time.perf_counter()  # taken before the read: a stall after a miss widens the gap
        if words.read(DONE_OFFSET) == batch:
            break
        last = now
        if now > deadline:
            return None
        if now - start > YIELD_AFTER_S:
            time.sleep(0)  # very long batches: give the core back between polls
    seen = time.perf_counter()
    return Reading(seconds=seen - start, slack=(opened - start) + (seen - last))
