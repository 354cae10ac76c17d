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
    """The verifier's pool: a device buffer, its IPC handle, and views to write into."""

    def __init__(self, nbytes: int) -> None:
        import torch

        self.buffer = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
        lib = _driver()
        base, size = ctypes.c_uint64(), ctypes.c_size_t()
        _check(lib, lib.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size),
                                                 ctypes.c_uint64(self.buffer.data_ptr())), "address range")
        handle = _Handle()
        _check(lib, lib.cuIpcGetMemHandle(ctypes.byref(handle), base), "cuIpcGetMemHandle")
        self.handle = ctypes.string_at(ctypes.addressof(handle), HANDLE_BYTES).hex()
        self.offset = self.buffer.data_ptr() - base.value

    def view(self, s: Slice) -> Any:
        import torch

        dtype = getattr(torch, s.dtype)
        n = 1
        for d in s.shape:
            n *= d
        nbytes = n * torch.empty((), dtype=dtype).element_size()
        return self.buffer[s.offset:s.offset + nbytes].view(dtype).view(s.shape)

    def describe(self) -> dict[str, Any]:
        return {"handle": self.handle, "offset": self.offset}


class _Array:
    """A device array by address, for ``torch.as_tensor`` (CUDA array interface)."""

    def __init__(self, address: int, s: Slice) -> None:
        self.__cuda_array_interface__ = {"shape": s.shape, "typestr": _TYPESTR[s.dtype],
                                         "data": (address, False), "version": 2, "strides": None}


class ImportedPool:
    """The executor's side: the verifier's pool opened in this process."""

    def __init__(self, desc: dict[str, Any]) -> None:
        import torch

        torch.cuda.init()
        lib = _driver()
        handle = _Handle.from_buffer_copy(bytes.fromhex(str(desc["handle"])))
        base = ctypes.c_uint64()
        _check(lib, lib.cuIpcOpenMemHandle_v2(ctypes.byref(base), handle, 1), "cuIpcOpenMemHandle")
        self.base = base.value + int(desc["offset"])

    def tensor(self, s: Slice) -> Any:
        import torch

        t = torch.as_tensor(_Array(self.base + s.offset, s), device="cuda")
        return t.view(torch.bfloat16) if s.dtype == "bfloat16" else t
