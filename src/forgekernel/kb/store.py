"""The knowledge base on disk: ``hw_kb/<arch>/<name>.toml``, one entry per file.

Each file holds one :class:`KBEntry`: ``id`` is ``<arch>.<file stem>`` and ``arch`` is the
directory name. Validation is strict and every problem is one :class:`KBError` line that
names the file and the key. Certification records are written back into the same file
(the ``[certification]`` table), so a probe run leaves the entries it checked updated.
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from forgekernel.errors import ForgeError
from forgekernel.kb.entry import Certification, KBEntry
from forgekernel.records import FAMILIES

BOTTLENECKS = ("memory", "compute", "launch", "occupancy")
"""Bottleneck classes an entry can apply to (``prescribe`` matches them to the task)."""

REQUIRED = ("id", "arch", "mechanism", "claim", "probe", "unit", "threshold", "comparison",
            "bottlenecks", "families", "prescription")


class KBError(ForgeError, ValueError):
    """A knowledge-base entry or directory that cannot be used (one line, names file and key)."""


def default_dir() -> Path:
    """``hw_kb/`` at the repository root (the package is installed editable from src/)."""
    return Path(__file__).resolve().parents[3] / "hw_kb"


def resolve_dir(kb_dir: str | Path | None = None) -> Path:
    """The knowledge-base directory: ``kb_dir`` when given, else :func:`default_dir`."""
    root = Path(kb_dir) if kb_dir else default_dir()
    if not root.is_dir():
        how = "" if kb_dir else " (pass --kb-dir or set FK_KB_DIR)"
        raise KBError(f"{root}: no knowledge-base directory{how}")
    return root


def arches(kb_dir: str | Path | None = None) -> list[str]:
    """Architectures with a directory in the knowledge base."""
    return sorted(p.name for p in resolve_dir(kb_dir).iterdir() if p.is_dir())


def entry_files(arch: str | None, kb_dir: str | Path | None = None) -> list[Path]:
    """Entry files of ``arch`` (all architectures when None), sorted."""
    root = resolve_dir(kb_dir)
    names = [arch] if arch else arches(root)
    return [p for a in names for p in sorted((root / a).glob("*.toml"))]


def _pydantic_line(exc: ValidationError) -> str:
    err = exc.errors()[0]
    key = ".".join(str(p) for p in err["loc"])
    if err["type"] == "extra_forbidden":
        return f"unknown key '{key}'"
    if err["type"] == "missing":
        return f"missing required key '{key}'"
    return f"key '{key}': {err['msg']} (got {err.get('input')!r})"


def _check_fields(entry: KBEntry, path: Path) -> None:
    from forgekernel.kb.probes import PROBES

    where = str(path)
    want_id = f"{path.parent.name}.{path.stem}"
    if entry.id != want_id:
        raise KBError(f"{where}: key 'id' = {entry.id!r} must be {want_id!r} (<arch dir>.<file stem>)")
    if entry.arch != path.parent.name:
        raise KBError(f"{where}: key 'arch' = {entry.arch!r} must match its directory {path.parent.name!r}")
    if entry.probe not in PROBES:
        raise KBError(f"{where}: key 'probe' = {entry.probe!r} is not a probe (known: {', '.join(PROBES)})")
    if entry.unit != PROBES[entry.probe].unit:
        raise KBError(f"{where}: key 'unit' = {entry.unit!r} but probe {entry.probe} measures "
                      f"{PROBES[entry.probe].unit!r}")
    for key, allowed in (("bottlenecks", BOTTLENECKS), ("families", FAMILIES)):
        bad = [v for v in getattr(entry, key) if v not in allowed]
        if bad:
            raise KBError(f"{where}: key '{key}' has {bad[0]!r}; allowed: {', '.join(allowed)}")
    number = f"{entry.threshold:g}"
    if number not in entry.claim or entry.unit not in entry.claim:
        raise KBError(f"{where}: key 'claim' must state the threshold {number} and the unit "
                      f"{entry.unit!r} (got {entry.claim!r})")
    if entry.certification is not None and entry.certification.unit != entry.unit:
        raise KBError(f"{where}: key 'certification.unit' = {entry.certification.unit!r} differs "
                      f"from the entry's unit {entry.unit!r}")


def parse_entry(raw: dict[str, Any], path: Path) -> KBEntry:
    """Validate one parsed entry file."""
    missing = [k for k in REQUIRED if k not in raw]
    if missing:
        raise KBError(f"{path}: missing required key '{missing[0]}'")
    try:
        entry = KBEntry.model_validate(raw)
    except ValidationError as exc:
        raise KBError(f"{path}: {_pydantic_line(exc)}") from None
    _check_fields(entry, path)
    return entry


def read_entry(path: Path) -> KBEntry:
    try:
        raw = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise KBError(f"{path}: not valid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise KBError(f"{path}: not UTF-8 text") from None
    return parse_entry(raw, path)


def load_with_paths(arch: str | None, kb_dir: str | Path | None = None) -> list[tuple[KBEntry, Path]]:
    """Every entry of ``arch`` (all when None) with the file it came from; ids are unique."""
    out: list[tuple[KBEntry, Path]] = []
    seen: dict[str, Path] = {}
    for path in entry_files(arch, kb_dir):
        entry = read_entry(path)
        if entry.id in seen:
            raise KBError(f"{path}: key 'id' = {entry.id!r} already used by {seen[entry.id]}")
        seen[entry.id] = path
        out.append((entry, path))
    return out


def _tomlable(value: Any) -> Any:
    """Drop None (TOML has no null) and stringify keys, recursively."""
    if isinstance(value, dict):
        return {str(k): _tomlable(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [math.nan if v is None else _tomlable(v) for v in value]
    return value


def write_certification(path: Path, cert: Certification) -> KBEntry:
    """Replace the ``[certification]`` table of the entry in ``path``; returns the new entry."""
    import tomli_w

    raw = tomllib.loads(path.read_text())
    raw["certification"] = _tomlable(cert.model_dump(mode="python"))
    entry = parse_entry(raw, path)
    path.write_text(tomli_w.dumps(raw))
    return entry
