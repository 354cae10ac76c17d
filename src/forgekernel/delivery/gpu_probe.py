"""Is a CUDA GPU visible here, and what is it called, without importing torch.

Choosing a delivery happens in the command's own process before any worker starts. Asking
torch costs its import and a CUDA runtime start (about 5 s on the H200 machine), all before
the verifier, which imports torch again, can begin. The NVIDIA driver's management library
(NVML, the one ``nvidia-smi`` uses) answers in milliseconds, so it is asked first:

1. torch already imported in this process: ask it (nothing left to save);
2. a CPU-only torch build: no GPU can be visible to it;
3. a ROCm build, or a ``CUDA_VISIBLE_DEVICES`` entry NVML cannot resolve (a MIG instance):
   ask torch;
4. NVML loads: the first visible device's name, ``CUDA_VISIBLE_DEVICES`` applied (an index
   or a GPU UUID; empty or ``-1`` hides every device);
5. no NVML and no NVIDIA device node (``/dev/nvidiactl``, or ``/dev/dxg`` under WSL): no
   driver, so no CUDA GPU; otherwise ask torch.

NVML sees every device the driver does; a device it lists that CUDA still cannot use (a
driver and toolkit mismatch) is named by the verifier, which starts CUDA itself, as a judge
error: never a silent change of delivery.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Mapping
from pathlib import Path

NVML = "libnvidia-ml.so.1"
DEVICE_NODES = ("/dev/nvidiactl", "/dev/dxg")
UNKNOWN = "unknown"  # what nvml_name says when NVML cannot answer


def cuda_device_name() -> str | None:
    """Name of the first visible CUDA device, or None (the module docstring gives the order
    of the questions)."""
    if "torch" in sys.modules:
        return _torch_name()
    version = _torch_version()
    if version is None or version.endswith("+cpu"):
        return None  # no torch, or one without CUDA: nothing here runs a GPU job
    if "rocm" in version:
        return _torch_name()
    answer = nvml_name()
    if answer != UNKNOWN:
        return answer
    if not any(Path(n).exists() for n in DEVICE_NODES):
        return None  # no NVIDIA driver on this machine
    return _torch_name()


def _torch_version() -> str | None:
    from importlib import metadata

    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None


def _torch_name() -> str | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    return torch.cuda.get_device_name(0)


def _first_visible(environ: Mapping[str, str]) -> str | None:
    """The first entry of CUDA_VISIBLE_DEVICES ("" when every device is hidden), or None
    when it is unset. CUDA stops at the first invalid entry, so "-1" hides everything."""
    value = environ.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return None
    first = value.split(",")[0].strip()
    return "" if first.startswith("-") else first


def nvml_name(library: str = NVML, environ: Mapping[str, str] | None = None) -> str | None:
    """The first visible device's name from NVML (``library``), None when no device is
    visible, or UNKNOWN when NVML cannot answer."""
    first = _first_visible(os.environ if environ is None else environ)
    if first == "":
        return None
    try:
        nvml = ctypes.CDLL(library)
    except OSError:
        return UNKNOWN
    try:
        if nvml.nvmlInit_v2() != 0:
            return UNKNOWN
    except AttributeError:
        return UNKNOWN
    try:
        return _nvml_query(nvml, first)
    finally:
        nvml.nvmlShutdown()


def _nvml_query(nvml: ctypes.CDLL, first: str | None) -> str | None:
    handle = ctypes.c_void_p()
    if first is None or first.isdigit():
        count = ctypes.c_uint(0)
        if nvml.nvmlDeviceGetCount_v2(ctypes.byref(count)) != 0:
            return UNKNOWN
        index = int(first or 0)
        if index >= count.value:
            return None  # CUDA sees no device at an index past the last
        if nvml.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(index), ctypes.byref(handle)) != 0:
            return UNKNOWN
    elif first.startswith("GPU-"):
        if nvml.nvmlDeviceGetHandleByUUID(first.encode(), ctypes.byref(handle)) != 0:
            return UNKNOWN
    else:  # a MIG instance or a short UUID prefix: CUDA's own rules
        return UNKNOWN
    name = ctypes.create_string_buffer(96)
    if nvml.nvmlDeviceGetName(handle, name, ctypes.c_uint(len(name))) != 0:
        return UNKNOWN
    return name.value.decode(errors="replace") or UNKNOWN
