"""The run's append-only record, ``ledger.jsonl``: one JSON object per line.

Attempt lines are plain :class:`~forgekernel.records.Attempt` JSON (no ``kind`` key), one
per attempt. Every other line is a marker with a ``kind``:

``session``  a ``forge run`` process started (agent, delivery, limits it ran under);
``plan``     the architect's curriculum version, in full, and why it was made;
``started``  a candidate was stored and is about to be judged (phase one of an attempt);
``row``      a row closed without an attempt (the coder had nothing more to try for it);
``gate``     a milestone's gate passed (M0 freezes);
``confirm``  the final re-judgement of the best;
``end``      a ``forge run`` process stopped, and why.

Two-phase attempts: the engine stores the candidate's files, appends ``started`` (seq,
candidate hash, row, agent cost), judges, then appends the Attempt with the same seq. A
``started`` without its Attempt is *pending*: a resumed run judges it again and writes the
Attempt once. Every line is written with one ``write`` and fsynced before the engine acts
on it; a line torn by a kill can only be the last one, and :meth:`Ledger.repair` cuts it.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from forgekernel.errors import ForgeError
from forgekernel.records import AgentCost, Attempt, Verdict


class LedgerError(ForgeError, ValueError):
    """The ledger is damaged somewhere other than a torn last line."""


def now() -> str:
    """The timestamp every ledger line carries (UTC, ISO 8601)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class Marker(BaseModel):
    """Base of the non-attempt lines."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    time: str = Field(default_factory=now)


class SessionEvent(Marker):
    kind: Literal["session"] = "session"
    pid: int = 0
    delivery: str = ""
    agent: str = ""
    architect: str = ""
    model: str = ""
    limits: dict[str, Any] = Field(default_factory=dict)


class PlanEvent(Marker):
    kind: Literal["plan"] = "plan"
    version: int
    reason: str
    after_seq: int
    curriculum: dict[str, Any]
    """The curriculum as TOML-shaped data (``curriculum.to_dict``)."""
    agent: AgentCost
    notes: str = ""


class StartedEvent(Marker):
    kind: Literal["started"] = "started"
    seq: int
    milestone: str
    row: str
    candidate: str
    agent: AgentCost
    summary: str = ""
    data: dict[str, Any] = Field(default_factory=dict)
    """The coder's machine-readable state (``CoderResult.data``); absent in older ledgers."""


class RowEvent(Marker):
    kind: Literal["row"] = "row"
    row: str
    status: Literal["done", "failed", "dropped"]
    reason: str = ""
    after_seq: int = 0


class GateEvent(Marker):
    kind: Literal["gate"] = "gate"
    milestone: str
    candidate: str
    after_seq: int
    lines: tuple[dict[str, str], ...] = ()


class ConfirmEvent(Marker):
    kind: Literal["confirm"] = "confirm"
    candidate: str
    after_seq: int
    verdict: Verdict
    target: float
    met: bool


class EndEvent(Marker):
    kind: Literal["end"] = "end"
    reason: str
    target_met: bool
    after_seq: int = 0
    agent: AgentCost | None = None
    """Cost of a last architect call that brought nothing new (else it would go unrecorded)."""


Event = Attempt | SessionEvent | PlanEvent | StartedEvent | RowEvent | GateEvent | ConfirmEvent | EndEvent

_KINDS: dict[str, type[Marker]] = {c.model_fields["kind"].default: c for c in (
    SessionEvent, PlanEvent, StartedEvent, RowEvent, GateEvent, ConfirmEvent, EndEvent)}


_SIG = ',"sig":"'


def split_sig(text: str) -> tuple[str, str | None]:
    """(the line without its signature, the signature or None)."""
    head, sep, tail = text.rpartition(_SIG)
    if not sep or not tail.endswith('"}') or len(tail) != 66:
        return text, None
    return head + "}", tail[:-2]


def parse_line(text: str) -> Event:
    """One line -> its record; ValueError (or ValidationError) when it is not one."""
    obj = json.loads(split_sig(text)[0])
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")
    kind = obj.get("kind")
    if kind is not None and (not isinstance(kind, str) or kind not in _KINDS):
        raise ValueError(f"unknown kind {kind!r}")
    event = Attempt.model_validate(obj) if kind is None else _KINDS[kind].model_validate(obj)
    datetime.fromisoformat(event.time)  # ValueError: a damaged timestamp
    return event


def _blank(raw: bytes) -> bool:
    """A line of NUL bytes or whitespace: what a crash can leave where a write never landed."""
    return not raw.strip(b"\0 \t\r")


def read(path: Path, key: bytes | None = None) -> tuple[list[Event], int]:
    """All events, and how many bytes at the end are a torn (unfinished) last line.

    Only the last line may be torn: unfinished (no newline yet), or NUL bytes a crash left.
    Any other line that does not parse, the last one included, is a LedgerError: a complete
    line was written whole, so damage there is not an interruption and is never dropped.
    With the run's ``key`` (:mod:`forgekernel.run.seal`), every line's signature must follow
    from the one before: a line the engine did not write is refused.
    """
    return _read(path, key)[:2]


def _read(path: Path, key: bytes | None) -> tuple[list[Event], int, str]:
    if not path.exists():
        return [], 0, ""
    data = path.read_bytes()
    *complete, tail = data.split(b"\n")
    events: list[Event] = []
    last = ""
    for n, raw in enumerate(complete, 1):
        try:
            text = raw.decode()
            events.append(parse_line(text))
        except (ValueError, UnicodeDecodeError, ValidationError) as exc:
            if n == len(complete) and not tail and _blank(raw):
                return events, len(raw) + 1, last
            raise LedgerError(f"{path}: line {n} is damaged ({_one_line(exc)}); only a torn "
                              "last line is repaired: restore the file, or cut the ledger before "
                              f"line {n} to resume from there") from None
        if key is not None:
            last = _verified(path, n, key, last, text)
    return events, len(tail), last


def _verified(path: Path, n: int, key: bytes, previous: str, text: str) -> str:
    from forgekernel.run import seal

    body, sig = split_sig(text)
    if sig is None or not seal.check(key, previous, body, sig):
        raise LedgerError(f"{path}: line {n} does not carry the engine's signature (it was written "
                          "or changed outside forge, or lines were reordered); the run is not "
                          "resumed: restore the ledger")
    return sig


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, ValidationError) and exc.errors():
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return f"{where}: {first['msg']}" if where else first["msg"]
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


class Ledger:
    """Appends to ``ledger.jsonl``: one write per line, fsynced before returning."""

    def __init__(self, path: Path, key: bytes | None = None) -> None:
        self.path, self.key = path, key
        self.last: str | None = None
        """The last line's signature (read on first use)."""

    def events(self) -> list[Event]:
        events, _, self.last = _read(self.path, self.key)
        return events

    def repair(self) -> int:
        """Cut a torn last line (left by a kill mid-write); returns the bytes removed."""
        _, torn, self.last = _read(self.path, self.key)
        if torn:
            size = self.path.stat().st_size
            with open(self.path, "r+b") as fh:
                fh.truncate(size - torn)
                fh.flush()
                os.fsync(fh.fileno())
        return torn

    def append(self, event: Event) -> Event:
        """Write one line and make it durable; returns the event for chaining."""
        text = event.model_dump_json(exclude_none=False)
        if "\n" in text:
            raise LedgerError("a ledger line must not contain a newline")
        if self.key is not None:
            from forgekernel.run import seal

            if self.last is None:
                self.last = _read(self.path, self.key)[2]
            sig = seal.sign(self.key, self.last, text)
            text = text[:-1] + _SIG + sig + '"}'
            self.last = sig
        data = (text + "\n").encode()
        created = not self.path.exists()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        if created:
            _fsync_dir(self.path.parent)
        return event


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
