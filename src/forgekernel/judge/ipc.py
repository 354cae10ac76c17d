"""Device memory one process owns and another uses in place (CUDA IPC, driver API).

The verifier allocates a pool (one device buffer) and exports its IPC handle; the executor
opens it and sees the same memory as tensors at agreed offsets, without a copy. Values the
verifier writes there after a batch was enqueued are what the batch's calls read. Handles
travel as hex text inside JSON messages; nothing is unpickled.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

HANDLE_BYTES = 64
ALIGN = 256
_TYPESTR = {"float32": "<f4", "float64": "<f8", "float16": "<f2", "int32": "<i4", "int64": "<i8",
            "int16": "<i2", "int8": "|i1", "uint8": "|u1", "bool": "|b1", "bfloat16": "<i2"}


class _Handle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * HANDLE_BYTES)]


def _driver() -> Any:
    lib = ctypes.CDLL("libcuda.so.1")
    lib.cuIpcOpenMemHandle_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), _Handle, ctypes.c_uint]
    return lib


def _check(lib: Any, rc: int, what: str) -> None:
    if rc:
        name = ctypes.c_char_p()
        lib.cuGetErrorName(rc, ctypes.byref(name))
        raise RuntimeError(f"{what}: {(name.value or b'?').decode()}")


CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06


def persisting_l2_bytes() -> int:
    """The current context's persisting-L2 set-aside (``cuCtxGetLimit``): lines in it are
    not evicted by the memory a timed batch streams through, so timings would depend on it."""
    lib = _driver()
    value = ctypes.c_size_t(0)
    _check(lib, lib.cuCtxGetLimit(ctypes.byref(value), ctypes.c_int(CU_LIMIT_PERSISTING_L2_CACHE_SIZE)),
           "cuCtxGetLimit")
    return int(value.value)


@dataclass(frozen=True)
class Slice:
    """A tensor at ``offset`` bytes into a pool: dtype, shape (contiguous)."""

    offset: int
    dtype: str
    shape: tuple[int, ...]


def layout(tensors: list[Any]) -> tuple[list[Slice], int]:
    """Offsets of contiguous copies of ``tensors`` in one pool, and the pool's size."""
    out, at = [], 0
    for t in tensors:
        out.append(Slice(at, str(t.dtype).removeprefix("torch."), tuple(t.shape)))
        at += -(-max(t.numel() * t.element_size(), 1) // ALIGN) * ALIGN
    return out, max(at, ALIGN)


class ExportedPool:
    """The verifier's pool: device memory of its own allocation (never the caching allocator's,
    so no other tensor of the verifier ever lives in what the executor can map), its IPC
    handle, and views to write into. Freed by :meth:`free` once no executor maps it."""

    def __init__(self, nbytes: int) -> None:
        import torch

        torch.zeros(1, device="cuda")  # the primary context, current on this thread
        self.lib = _driver()
        self.nbytes = max(int(nbytes), ALIGN)
        ptr = ctypes.c_uint64()

        def alloc() -> None:
            _check(self.lib, self.lib.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(self.nbytes)),
                   "cuMemAlloc")

        allocate_or_release(alloc, _release_cached, self.nbytes)
        self.base = ptr.value
        handle = _Handle()
        _check(self.lib, self.lib.cuIpcGetMemHandle(ctypes.byref(handle), ctypes.c_uint64(self.base)),
               "cuIpcGetMemHandle")
        self.handle = ctypes.string_at(ctypes.addressof(handle), HANDLE_BYTES).hex()

    def view(self, s: Slice) -> Any:
        if s.offset + slice_bytes(s) > self.nbytes:
            raise ValueError(f"a slice at {s.offset} of {slice_bytes(s)} bytes is outside the pool")
        return _tensor(self.base + s.offset, s)

    def describe(self) -> dict[str, Any]:
        return {"handle": self.handle, "offset": 0}

    def tensor(self, s: Slice) -> Any:
        return self.view(s)  # the exporting process's own use of its pool

    def free(self) -> None:
        if self.base:
            self.lib.cuMemFree_v2(ctypes.c_uint64(self.base))
            self.base = 0


def allocate_or_release(alloc: Any, release: Any, nbytes: int) -> None:
    """``alloc()``; when the device is out of memory, ``release()`` (what the verifier's own
    caching allocator holds unused: a pool comes from the driver, which cannot reuse those
    blocks) and once more; still out of memory: a RuntimeError naming the size."""
    try:
        alloc()
        return
    except RuntimeError as exc:
        if "OUT_OF_MEMORY" not in str(exc):
            raise
    release()
    try:
        alloc()
    except RuntimeError as exc:
        if "OUT_OF_MEMORY" not in str(exc):
            raise
        raise RuntimeError(f"cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY for a pool of {nbytes / 2**30:.2f} GiB "
                           "(the workload's inputs and outputs do not fit on the device beside the "
                           "judge's own copies)") from None


def _release_cached() -> None:
    import torch

    torch.cuda.synchronize()
    torch.cuda.empty_cache()


def slice_bytes(s: Slice) -> int:
    n = 1
    for d in s.shape:
        n *= d
    return n * int(_TYPESTR[s.dtype][2:])


def _tensor(address: int, s: Slice) -> Any:
    import torch

    t = torch.as_tensor(_Array(address, s), device="cuda")
    return t.view(torch.bfloat16) if s.dtype == "bfloat16" else t


class _Array:
    """A device array by address, for ``torch.as_tensor`` (CUDA array interface)."""

    def __init__(self, address: int, s: Slice) -> None:
        self.__cuda_array_interface__ = {"shape": s.shape, "typestr": _TYPESTR[s.dtype],
                                         "data": (address, False), "version": 2, "strides": None}


class ImportedPool:
    """The executor's side: the verifier's pool opened in this process."""

    def __init__(self, desc: dict[str, Any]) -> None:
        import torch

        torch.zeros(1, device="cuda")  # the primary context, current on this thread
        lib = _driver()
        handle = _Handle.from_buffer_copy(bytes.fromhex(str(desc["handle"])))
        base = ctypes.c_uint64()
        _check(lib, lib.cuIpcOpenMemHandle_v2(ctypes.byref(base), handle, 1), "cuIpcOpenMemHandle")
        self.base = base.value + int(desc["offset"])

    def tensor(self, s: Slice) -> Any:
        return _tensor(self.base + s.offset, s)


class PeerPool(ImportedPool):
    """The verifier's side of a pool the executor allocated (``own_pool``): the verifier writes
    a timed batch's inputs here, the candidate reads them as its own process's memory. On an
    H100, a kernel read IPC-imported memory 8-12 % slower than its own at a judge's batch
    footprint, by an amount that differed between importing processes (5-6 %), and its own
    memory within 0.2 % (benchmarks/results/ipc_h100_2026-12-06/)."""

    def __init__(self, desc: dict[str, Any], nbytes: int) -> None:
        super().__init__(desc)
        self.desc, self.nbytes = dict(desc), int(nbytes)

    def view(self, s: Slice) -> Any:
        if s.offset + slice_bytes(s) > self.nbytes:
            raise ValueError(f"a slice at {s.offset} of {slice_bytes(s)} bytes is outside the pool")
        return self.tensor(s)

    def describe(self) -> dict[str, Any]:
        return dict(self.desc)

    def free(self) -> None:
        """Unmap it here (before the executor, which frees it, goes)."""
        if self.base:
            _driver().cuIpcCloseMemHandle(ctypes.c_uint64(self.base - int(self.desc["offset"])))
            self.base = 0


def slice_of(desc: dict[str, Any]) -> Slice:
    """A slice from its description in a message."""
    return Slice(int(desc["offset"]), str(desc["dtype"]), tuple(int(d) for d in desc["shape"]))
