"""The worker side of a job, and the framing of its one signed answer.

A worker calls :func:`receive` first thing, before importing any candidate code: it reads
the envelope from stdin, keeps the result pipe and the signing key, and returns the
payload. It ends with :func:`reply`, exactly once. The parent accepts exactly one frame
whose HMAC matches; anything else on the pipe is reported as tampering.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any

_MAGIC = b"FKR1"


@dataclass
class Envelope:
    """What the parent sent: the payload plus the delivery it runs under."""

    payload: dict[str, Any]
    delivery: str
    timing_label: str
    _key: bytes = field(repr=False, default=b"")
    _fd: int = field(repr=False, default=-1)
    _gate: tuple[int, int] | None = field(repr=False, default=None)
    _share: bool = field(repr=False, default=False)
    shared: bool = False
    """Whether the runner has granted the GPU shared to this job (other jobs ran beside it)."""

    @property
    def may_share(self) -> bool:
        """Whether the runner may grant this job's shared requests beside other jobs, which
        it decides by their footprint; otherwise a footprint goes unread."""
        return self._gate is not None and self._share

    def device(self, mode: str, footprint: int = 0) -> float:
        """Before GPU work in a gated job: wait until the runner holds the GPU for it, shared
        (``S``, nothing timed; ``footprint`` is the bytes it expects to keep on the device)
        or exclusive (``X``). Returns the seconds waited (0 when the job is not gated: the
        runner then holds the GPU for the whole job). See :mod:`forgekernel.delivery.gpu_gate`."""
        if self._gate is None:
            return 0.0
        from forgekernel.delivery.gpu_gate import ask

        waited, granted = ask(*self._gate, mode, footprint)
        self.shared = self.shared or granted == "S"
        return waited

    def reply(self, result: dict[str, Any]) -> None:
        """Send the one answer of this job and close the channel."""
        view = memoryview(encode_frame(result, self._key.decode()))
        while view:
            n = os.write(self._fd, view)
            view = view[n:]
        os.close(self._fd)
        self._fd = -1


def encode_frame(result: dict[str, Any], key: str) -> bytes:
    """One signed frame holding ``result`` (what :func:`verify_frames` accepts)."""
    body = json.dumps(result, default=str).encode()
    mac = hmac.new(key.encode(), body, hashlib.sha256).hexdigest().encode()
    return _MAGIC + b" " + mac + b" " + str(len(body)).encode() + b"\n" + body


def receive() -> Envelope:
    """Read the envelope from stdin (then detach stdin) and return it."""
    raw = sys.stdin.buffer.read()
    data = json.loads(raw)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    gate = data.get("gate")
    return Envelope(payload=data["payload"], delivery=data["delivery"],
                    timing_label=data["timing_label"], _key=data["key"].encode(), _fd=int(data["fd"]),
                    _gate=(int(gate[0]), int(gate[1])) if gate else None, _share=bool(data.get("share")))


def verify_frames(data: bytes, key: str) -> tuple[dict[str, Any] | None, str]:
    """Parse the result pipe's bytes: (result, '') or (None|result, error)."""
    if not data:
        return None, ""
    try:
        header, rest = data.split(b"\n", 1)
        magic, mac, length = header.split(b" ")
        n = int(length)
    except ValueError:
        return None, "malformed frame header"
    if magic != _MAGIC:
        return None, "bad frame magic"
    body, extra = rest[:n], rest[n:]
    if len(body) != n:
        return None, "truncated frame"
    expect = hmac.new(key.encode(), body, hashlib.sha256).hexdigest().encode()
    if not hmac.compare_digest(expect, mac):
        return None, "frame signature does not match"
    if extra:
        return None, "more than one message on the result channel"
    try:
        return json.loads(body), ""
    except ValueError:
        return None, "frame body is not JSON"
