"""Checking a probe's result against an entry's claim, and naming an entry's state."""

from __future__ import annotations

import math
from typing import Literal

from forgekernel.kb.entry import Certification, KBEntry
from forgekernel.kb.probes import ProbeEnv, ProbeResult
from forgekernel.kb.store import KBError

State = Literal["CERTIFIED", "FAILED", "UNSUPPORTED", "UNCERTIFIED"]


def holds(value: float, comparison: str, threshold: float) -> bool:
    """Whether ``value <comparison> threshold`` (NaN never holds)."""
    if math.isnan(value):
        return False
    return {">=": value >= threshold, "<=": value <= threshold,
            ">": value > threshold, "<": value < threshold}[comparison]


def evaluate(entry: KBEntry, result: ProbeResult, env: ProbeEnv) -> Certification:
    """The certification record of ``entry`` given its probe's result on ``env``.

    A supported result that contradicts the claim is recorded with ``passed = False``
    (outcome ``fail``); an unsupported mechanism likewise, with outcome ``unsupported``
    and a NaN measurement.
    """
    if result.probe != entry.probe:
        raise KBError(f"{entry.id}: result of probe {result.probe!r} given for probe {entry.probe!r}")
    if result.unit != entry.unit:
        raise KBError(f"{entry.id}: probe {result.probe} measured in {result.unit!r}, "
                      f"the claim is in {entry.unit!r}")
    if entry.threshold is None:
        raise KBError(f"{entry.id}: has no threshold, so no claim to check")
    if not result.supported or result.value is None:
        outcome, measured, passed = "unsupported", math.nan, False
    else:
        measured = float(result.value)
        passed = holds(measured, entry.comparison, entry.threshold)
        outcome = "pass" if passed else "fail"
    details = {**result.details, "outcome": outcome,
               "check": f"{_fmt(measured)} {entry.comparison} {entry.threshold:g} {entry.unit}"}
    if result.reason:
        details["reason"] = result.reason
    return Certification(device=env.device, driver=env.driver, versions=dict(env.versions),
                         date=env.date, measured=measured, unit=entry.unit, passed=passed,
                         details=details)


def state(entry: KBEntry) -> State:
    """CERTIFIED (probe agreed), FAILED (probe contradicted), UNSUPPORTED, or UNCERTIFIED."""
    cert = entry.certification
    if cert is None:
        return "UNCERTIFIED"
    if cert.passed:
        return "CERTIFIED"
    if cert.details.get("outcome") == "unsupported" or math.isnan(cert.measured):
        return "UNSUPPORTED"
    return "FAILED"


def _fmt(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.4g}"


def measured_text(entry: KBEntry) -> str:
    """The measured value with its unit ('' when never measured, 'n/a' when unsupported)."""
    if entry.certification is None:
        return ""
    return f"{_fmt(entry.certification.measured)} {entry.unit}".strip()
