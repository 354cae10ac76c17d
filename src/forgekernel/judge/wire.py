"""What crosses between the verifier and the executor: messages and tensors, never code.

Messages are JSON objects, length-prefixed, on a pair of pipes (one each way). Tensors
travel as raw bytes in files of a directory both processes can reach, described in the
message (dtype, shape, file). Nothing is unpickled: the verifier rebuilds a tensor from
bytes it reads itself, after checking the description against what it expects, so an
executor can hand back numbers and nothing else.
"""

from __future__ import annotations

import json
import os
import select
import stat
import struct
import time
from pathlib import Path
from typing import Any

MAX_MESSAGE = 4 << 20
"""Bytes of one message; more is a broken or hostile peer."""
DTYPES = ("bfloat16", "float16", "float32", "float64", "int8", "uint8", "int16", "int32",
          "int64", "bool")


class WireError(RuntimeError):
    """The peer sent something that is not a valid message, or went away."""


class WireTimeout(WireError):
    """No message within the deadline."""


def send(fd: int, message: dict[str, Any]) -> None:
    body = json.dumps(message, default=str).encode()
    if len(body) > MAX_MESSAGE:
        raise WireError(f"message of {len(body)} bytes is over the {MAX_MESSAGE}-byte cap")
    view = memoryview(struct.pack("<I", len(body)) + body)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    out = bytearray()
    while len(out) < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise WireTimeout("no answer before the deadline")
        chunk = os.read(fd, n - len(out))
        if not chunk:
            raise WireError("the peer closed the channel")
        out += chunk
    return bytes(out)


def recv(fd: int, timeout_s: float | None = None) -> dict[str, Any]:
    """The next message (``timeout_s``: raise :class:`WireTimeout` when none comes in time)."""
    deadline = time.monotonic() + timeout_s if timeout_s is not None else None
    (size,) = struct.unpack("<I", _read_exact(fd, 4, deadline))
    if size > MAX_MESSAGE:
        raise WireError(f"message of {size} bytes announced, over the cap")
    try:
        message = json.loads(_read_exact(fd, size, deadline))
    except ValueError:
        raise WireError("a message that is not JSON") from None
    if not isinstance(message, dict):
        raise WireError("a message that is not a JSON object")
    return message


# ------------------------------------------------------------------ tensors


def describe(value: Any, name: str = "") -> dict[str, Any]:
    """What the other side is told of ``value`` (a tensor: dtype, shape, device, plain type)."""
    import torch

    if isinstance(value, torch.Tensor):
        return {"tensor": name, "dtype": str(value.dtype).removeprefix("torch."),
                "shape": list(value.shape), "device": value.device.type,
                "exact": type(value) is torch.Tensor}
    if isinstance(value, (bool, int, float)) or value is None:
        return {"value": value}
    return {"other": type(value).__name__}


def put(value: Any, root: Path, name: str) -> dict[str, Any]:
    """Describe ``value`` for the other side; tensors are written to ``root/name``."""
    import torch

    if isinstance(value, torch.Tensor):
        # contiguous_format: a tensor torch calls contiguous may still have a stride other than
        # 1 on a dimension of size 1 (an (n, 3)[:, 0] at n = 1), which it will not view as bytes
        t = value.detach().cpu().reshape(-1)
        if t.numel() and t.stride(0) != 1:
            t = t.clone(memory_format=torch.contiguous_format)
        data = t.view(torch.uint8).numpy() if t.numel() else b""
        write_new(root, name, bytes(data))
    return describe(value, name)


def _dir_fd(root: Path) -> int:
    return os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)


def write_new(root: Path, name: str, data: bytes) -> None:
    """Write ``root/name`` as a new regular file. The directory is one the executor can write,
    and nothing of the writer's stands at that name yet: whatever does (a link to a host file
    the verifier would otherwise overwrite) is the candidate's doing and makes the write fail;
    nothing is followed or removed."""
    if "/" in name or name in (".", ".."):
        raise WireError(f"not a plain file name: {name!r}")
    dfd = _dir_fd(root)
    try:
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=dfd)
    except FileExistsError:
        raise WireError(f"{name}: something already stands where this file is to be written") from None
    finally:
        os.close(dfd)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def read_regular(root: Path, name: str, nbytes: int) -> bytes:
    """The ``nbytes`` bytes of the regular file ``root/name``, never through a link (a link
    there would hand the verifier a host file's bytes)."""
    dfd = _dir_fd(root)
    try:
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dfd)
        except OSError as exc:
            raise WireError(f"{name}: not a regular file the verifier can read ({exc.strerror})") from None
    finally:
        os.close(dfd)
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise WireError(f"{name}: not a regular file")
        if st.st_size != nbytes:
            raise WireError(f"{name}: {st.st_size} bytes on disk, {nbytes} described")
        data = fh.read(nbytes + 1)
    if len(data) != nbytes:
        raise WireError(f"{name}: {len(data)} bytes read, {nbytes} described")
    return data


def get(desc: dict[str, Any], root: Path, device: str = "cpu", max_bytes: int | None = None) -> Any:
    """The value a description stands for (tensors read from ``root``, checked first)."""
    import torch

    if "value" in desc:
        value = desc["value"]
        if value is not None and not isinstance(value, (bool, int, float)):
            raise WireError("a plain value that is not a number")
        return value
    name, dtype = desc.get("tensor"), desc.get("dtype")
    shape = desc.get("shape")
    if not isinstance(name, str) or "/" in name or dtype not in DTYPES or not isinstance(shape, list) \
            or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise WireError(f"a malformed tensor description: {str(desc)[:200]}")
    numel = 1
    for d in shape:
        numel *= d
    tdtype = getattr(torch, dtype)
    nbytes = numel * torch.empty((), dtype=tdtype).element_size()
    if max_bytes is not None and nbytes > max_bytes:
        raise WireError(f"a tensor of {nbytes} bytes where at most {max_bytes} were expected")
    raw = bytearray(read_regular(root, name, nbytes))
    flat = torch.frombuffer(raw, dtype=torch.uint8) if nbytes else torch.empty(0, dtype=torch.uint8)
    t = flat.view(tdtype).reshape(shape) if nbytes else torch.empty(shape, dtype=tdtype)
    return t.to(device) if device != "cpu" else t


def put_all(values: list[Any], root: Path, prefix: str) -> list[dict[str, Any]]:
    return [put(v, root, f"{prefix}{i}.bin") for i, v in enumerate(values)]


def get_all(descs: list[dict[str, Any]], root: Path, device: str = "cpu") -> list[Any]:
    return [get(d, root, device) for d in descs]


def plain_values(values: Any) -> list[Any]:
    """get_init_inputs() as JSON-able values (numbers, strings, nested lists)."""
    import torch

    def plain(v: Any) -> Any:
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        if isinstance(v, torch.Tensor) and v.numel() == 1:
            return v.item()
        if isinstance(v, (bool, int, float, str)) or v is None:
            return v
        raise TypeError(f"get_init_inputs() returned a {type(v).__name__}, which cannot be sent "
                        "to the candidate's process")
    return [plain(v) for v in (values or [])]


def plain(value: Any) -> Any:
    """An init argument as sent (numbers, strings, booleans and lists of them)."""
    if isinstance(value, list):
        return tuple(plain(v) for v in value)
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    raise TypeError(f"init argument of type {type(value).__name__} cannot be sent")
