"""The safetensors file format, read and written with torch alone (no extra dependency).

A file is an 8-byte little-endian header length, a JSON header mapping each tensor key to
``{"dtype", "shape", "data_offsets": [begin, end]}`` (offsets into the data that follows;
an optional ``"__metadata__"`` entry holds strings), then the raw little-endian data.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

from forgekernel.errors import ForgeError

CODES = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16",
         "I64": "int64", "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8",
         "BOOL": "bool"}
"""safetensors dtype codes forge can read, with their torch names."""

MAX_HEADER = 100 * 1024 * 1024


class SafetensorsError(ForgeError, ValueError):
    """A safetensors file that cannot be read; the message is one line."""


def header(path: Path) -> tuple[dict[str, Any], int]:
    """The JSON header of ``path`` and the offset where its data begins."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
            if len(head) != 8:
                raise SafetensorsError(f"{path}: not a safetensors file (shorter than 8 bytes)")
            (size,) = struct.unpack("<Q", head)
            if size > MAX_HEADER:
                raise SafetensorsError(f"{path}: not a safetensors file (header of {size} bytes)")
            raw = fh.read(size)
    except OSError as exc:
        raise SafetensorsError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        meta = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise SafetensorsError(f"{path}: not a safetensors file (the header is not JSON)") from None
    if not isinstance(meta, dict):
        raise SafetensorsError(f"{path}: not a safetensors file (the header is not an object)")
    return meta, 8 + size


def load(path: Path, key: str) -> Any:
    """Tensor ``key`` of the file ``path`` (on the CPU)."""
    import torch

    meta, start = header(path)
    entry = meta.get(key)
    if key == "__metadata__" or not isinstance(entry, dict):
        keys = ", ".join(k for k in meta if k != "__metadata__") or "none"
        raise SafetensorsError(f"{path}: no tensor '{key}' (tensors: {keys})")
    code, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if code not in CODES:
        raise SafetensorsError(f"{path}: tensor '{key}' has dtype {code!r}; readable: "
                               f"{', '.join(CODES)}")
    dtype = getattr(torch, CODES[code])
    begin, end = offsets
    count = 1
    for d in shape:
        count *= d
    if end - begin != count * torch.empty((), dtype=dtype).element_size():
        raise SafetensorsError(f"{path}: tensor '{key}' has {end - begin} bytes for shape {shape}")
    with open(path, "rb") as fh:
        fh.seek(start + begin)
        data = bytearray(fh.read(end - begin))
    if not data:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(data, dtype=dtype).reshape(shape).clone()


def save(path: Path, tensors: dict[str, Any]) -> None:
    """Write ``tensors`` (name -> CPU tensor) as a safetensors file."""
    import torch

    names = {v: k for k, v in CODES.items()}
    meta: dict[str, Any] = {}
    blobs: list[bytes] = []
    offset = 0
    for key, t in tensors.items():
        t = t.detach().contiguous().cpu()
        blob = t.view(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        meta[key] = {"dtype": names[str(t.dtype).removeprefix("torch.")], "shape": list(t.shape),
                     "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    raw = json.dumps(meta, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    Path(path).write_bytes(struct.pack("<Q", len(raw)) + raw + b"".join(blobs))
