"""What a timing run concludes, on the CPU and the GPU alike: a timed call's outputs checked
against the oracle, and a workload's timing fields from its three sides (reference,
candidate, reference again), with the roofline floor as the bound no time may beat."""

from __future__ import annotations

import statistics
from typing import Any

from forgekernel.judge import audit, timing, values
from forgekernel.judge import correctness as cx
from forgekernel.judge.failure import Failure
from forgekernel.records import Status


def verify_timed(session: Any, slot: Any, args: list[Any], outs: tuple[Any, ...], last: bool) -> None:
    """A timed call's outputs against the oracle (catches phase detection and drift)."""
    _verify(session, slot, args, outs, 1 if last else 0, 2)


UNSTABLE = 0.1
"""A side's 20-80% spread above this fraction of its median is flagged as unstable."""


def summarise_sides(session: Any, slot: Any, sides: dict[str, Any], label: str, k: int) -> dict[str, Any]:
    """The timing fields from the three sides' per-call samples (ref1, cand, ref2)."""
    r1, cand, r2 = sides["ref1"], sides["cand"], sides["ref2"]
    m_ref = timing.measurement(r1.per_call_ms + r2.per_call_ms, label)
    m_cand = timing.measurement(cand.per_call_ms, label)
    med1, med2 = statistics.median(r1.per_call_ms), statistics.median(r2.per_call_ms)
    noise = abs(med1 / med2 - 1.0) if med2 > 0 else 0.0
    flags = []
    host = statistics.median(cand.host_ms)
    if session.cuda and host > 1.5 * m_cand.median_ms + 0.05:
        flags.append(f"{slot.label}: host time per call {host:.3f} ms vs device {m_cand.median_ms:.3f} ms")
    if session.cuda and m_cand.spread_ms > UNSTABLE * m_cand.median_ms and m_ref.spread_ms <= UNSTABLE * m_ref.median_ms:
        flags.append(f"{slot.label}: the candidate's timing is unstable (20-80% spread {m_cand.spread_ms:.3f} ms "
                     f"on a {m_cand.median_ms:.3f} ms median, the reference's {m_ref.spread_ms:.3f} ms): "
                     "something else may have used the GPU; its confirmation re-times it")
    floor = audit.roofline_floor(session.task, slot.wl, [(o.shape, cx.dtype_name(o)) for o in slot.outputs],
                                 session.device_name, session.ceilings) if session.cuda else None
    sol = floor.sol_pct(m_cand.median_ms) if floor else None
    if floor is not None and m_cand.median_ms < floor.floor_ms / audit.ROOFLINE_SLACK:
        raise Failure(Status.REJECTED, f"{slot.label}: {m_cand.median_ms:.4f} ms is faster than the "
                      f"roofline floor {floor.floor_ms:.4f} ms ({sol:.0f}% of speed of light); "
                      "rejected pending review", {"kind": "roofline", "workload": slot.label})
    fields = {"median_ms": m_cand.median_ms, "spread_ms": m_cand.spread_ms, "reference_ms": m_ref.median_ms,
              "speedup": m_ref.median_ms / m_cand.median_ms if m_cand.median_ms > 0 else None,
              "sol_pct": sol, "timing_label": label}
    return {"fields": fields, "noise": noise, "host_ms": host, "flags": flags, "batch": k}


def _verify(session: Any, slot: Any, args: list[Any], outs: tuple[Any, ...], r: int, rounds: int) -> None:
    """A timed call's outputs against the oracle (catches phase detection and drift)."""
    check = cx.check_structure(outs, tuple(slot.outputs), device=False)  # the executor's own
    # descriptions, device included, were checked before a byte was read (remote._outputs)
    if check.ok:
        oracle = session.problem.oracle(slot.wl, args)
        for k, (o, ref) in enumerate(zip(outs, oracle, strict=True)):
            got = values.compare(o, ref, session.tolerances[k])
            if not got.ok and not session.matches_reference(slot, args, k, o, ref):
                check = got
                break
    if not check.ok:
        which = "the last timed call" if r == rounds - 1 else "a timed call"
        raise Failure(Status.WRONG_VALUES, f"{which} on {slot.label} returned a wrong result "
                      f"({check.message}) although the correctness trials passed",
                      {"kind": "timed_output", "phase": "timing", "workload": slot.label,
                       "message": check.message, "where": check.where, "max_rel": check.max_rel,
                       "tol": check.tol})
