"""The words a GPU gate is made of (:mod:`forgekernel.judge.gate`): a page of host memory
shared by file descriptor between the verifier and the process that runs calls. Apart from
the gate's kernels, so that the verifier creates the page (and starts its executor) without
importing Triton first."""

from __future__ import annotations

import mmap
import os
import struct

GATE_OFFSET, DONE_OFFSET, EXPIRED_OFFSET, SIZE = 0, 128, 256, 4096
"""Byte offsets of the gate, done and expired words (separate cache lines), the mapping size."""


class HostWords:
    """The shared mapping: created by the verifier (``HostWords()``) or opened from its fd."""

    def __init__(self, fd: int | None = None) -> None:
        if fd is None:
            fd = os.memfd_create("forge-gate", 0)
            os.ftruncate(fd, SIZE)
        self.fd = fd
        self.map = mmap.mmap(fd, SIZE, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        self.address = _address(self.map)

    def read(self, offset: int) -> int:
        return struct.unpack_from("<i", self.map, offset)[0]

    def write(self, offset: int, value: int) -> None:
        struct.pack_into("<i", self.map, offset, value)

    def close(self) -> None:
        self.map.close()


def _address(buffer: mmap.mmap) -> int:
    import ctypes

    return ctypes.addressof(ctypes.c_char.from_buffer(buffer))
