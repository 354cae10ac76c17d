"""The knowledge base's records: a hardware fact (:class:`KBEntry`) and the probe run that
certified it (:class:`Certification`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from forgekernel.records import Record


class Certification(Record):
    device: str
    driver: str = ""
    versions: dict[str, str] = Field(default_factory=dict)
    date: str
    measured: float
    unit: str
    passed: bool
    details: dict[str, Any] = Field(default_factory=dict)


class KBEntry(Record):
    """A hardware fact for one architecture, certified (or not yet) by a probe."""

    id: str
    arch: str
    mechanism: str
    claim: str
    """Checkable statement, e.g. 'copy bandwidth >= 3.9 TB/s for buffers >= 256 MiB'."""
    probe: str
    """Name of the probe in forgekernel.kb.probes that certifies it."""
    unit: str = ""
    threshold: float | None = None
    comparison: Literal[">=", "<=", ">", "<"] = ">="
    bottlenecks: tuple[str, ...] = ()
    families: tuple[str, ...] = ()
    roles: tuple[Literal["coder", "architect", "judge"], ...] = ("coder", "architect")
    """Who the prescription is for: the agent writing kernels, the one planning, or the judge
    (a measuring practice, never shown to an agent)."""
    prescription: str = ""
    certification: Certification | None = None

    @property
    def certified(self) -> bool:
        return self.certification is not None and self.certification.passed
