"""The hardware knowledge base: probe-certified facts per architecture, prescribed to tasks.

Entries live in ``hw_kb/<arch>/<name>.toml`` (see :mod:`forgekernel.kb.store`); probes that
certify them in :mod:`forgekernel.kb.probes` (run in a worker process through a Runner,
see :mod:`forgekernel.kb.certify`). Public API::

    load(arch, kb_dir=None) -> list[KBEntry]
    get(id, kb_dir=None) -> KBEntry
    ceilings_for(arch, device, kb_dir=None) -> roofline.Ceilings | None
    prescribe(task, profiles=None, *, kb_dir=None, arch=None) -> list[Prescription]
    prescriptions_for_agent(task, profiles=None, *, kb_dir=None) -> tuple[str, ...]
"""

from __future__ import annotations

from pathlib import Path

from forgekernel.kb.ceilings import ceilings_for
from forgekernel.kb.claims import evaluate, state
from forgekernel.kb.entry import KBEntry
from forgekernel.kb.select import Prescription, prescribe, prescriptions_for_agent
from forgekernel.kb.store import KBError, load_with_paths

__all__ = ["KBError", "Prescription", "ceilings_for", "evaluate", "get", "load", "prescribe",
           "prescriptions_for_agent", "state"]


def load(arch: str | None, kb_dir: str | Path | None = None) -> list[KBEntry]:
    """Every entry of ``arch`` (all architectures when None), validated, sorted by file."""
    return [e for e, _ in load_with_paths(arch, kb_dir)]


def get(entry_id: str, kb_dir: str | Path | None = None) -> KBEntry:
    """The entry with this id (``<arch>.<name>``); KBError when there is none."""
    arch = entry_id.split(".", 1)[0]
    entries = load(None, kb_dir)
    for e in entries:
        if e.id == entry_id:
            return e
    near = [e.id for e in entries if e.arch == arch][:12]
    raise KBError(f"no knowledge-base entry {entry_id!r}" + (f"; {arch} has: {', '.join(near)}" if near else ""))
