"""Gates (met / not met / unknown), freezing M0, advancing, marking rows and revising."""

from __future__ import annotations

import pytest

from forgekernel import curriculum as C
from forgekernel.records import Profile, Status, Verdict, WorkloadResult

PLAN = """
version = 1
reason = "initial"

[[milestone]]
id = "M0"
kind = "architecture"
title = "fused"
[[milestone.row]]
id = "M0.1"
decision = "one program per row"
[milestone.gate]
performance = "speedup >= 3"
mechanism = ["launches == 1", "dram_pct >= 70"]

[[milestone]]
id = "M1"
title = "tune"
[[milestone.row]]
id = "M1.1"
decision = "block size"
[[milestone.row]]
id = "M1.2"
decision = "warps"
[milestone.gate]
performance = "min_speedup >= 4"
"""


def verdict(speedups=(5.0, 4.0), status=Status.PASSED, profile=None) -> Verdict:
    passed = status is Status.PASSED
    ws = tuple(WorkloadResult(axes={"M": 8 * (i + 1), "N": 256}, median_ms=1.0 / s if passed else None,
                              reference_ms=1.0 if passed else None, speedup=s if passed else None)
               for i, s in enumerate(speedups))
    geo = (speedups[0] * speedups[1]) ** 0.5 if passed else None
    return Verdict(status=status, workloads=ws, speedup=geo, profile=profile or {})


def test_gate_lines_met_not_met_and_unknown():
    cur = C.loads(PLAN)
    g = C.evaluate_gate(cur.milestones[0], verdict(profile={"launches": 1}))
    states = {r.line: r.state for r in g.lines}
    assert states == {"correct": "met", "speedup >= 3": "met", "launches == 1": "met",
                      "dram_pct >= 70": "unknown"}
    assert not g.passed and [r.line for r in g.unknown] == ["dram_pct >= 70"]
    assert "dram_pct" in g.unknown[0].detail


def test_profile_metrics_make_mechanism_lines_decidable():
    cur = C.loads(PLAN)
    profiles = [Profile(axes={"M": 8, "N": 256}, metrics={"dram_pct": 81.0, "launches": 1}),
                Profile(axes={"M": 16, "N": 256}, metrics={"dram_pct": 65.0, "launches": 1})]
    g = C.evaluate_gate(cur.milestones[0], verdict(), profiles)
    states = {r.line: r.state for r in g.lines}
    assert states["dram_pct >= 70"] == "not met"  # it must hold at every measured workload
    assert states["launches == 1"] == "met"
    profiles[1] = Profile(axes={"M": 16, "N": 256}, metrics={"dram_pct": 75.0, "launches": 1})
    assert C.evaluate_gate(cur.milestones[0], verdict(), profiles).passed


def test_no_candidate_or_failed_candidate_fails_correctness():
    m = C.loads(PLAN).milestones[1]
    none = C.evaluate_gate(m, None)
    assert none.lines[0].state == "not met" and "no correct candidate" in none.lines[0].detail
    assert none.lines[1].state == "unknown"
    bad = C.evaluate_gate(m, verdict(status=Status.WRONG_VALUES))
    assert bad.lines[0].detail == "WRONG_VALUES" and not bad.passed
    assert C.evaluate_gate(m, verdict((5.0, 4.0))).passed
    assert not C.evaluate_gate(m, verdict((5.0, 3.9))).passed


def test_pass_freezes_m0_and_advances():
    cur = C.loads(PLAN)
    assert C.current_milestone(cur).id == "M0"
    g = C.evaluate_gate(cur.milestones[0], verdict(),
                        [Profile(axes={"M": 8, "N": 256}, metrics={"dram_pct": 90, "launches": 1})])
    cur = C.advance(cur, g)
    m0 = C.milestone(cur, "M0")
    assert m0.status == "passed" and m0.frozen
    m, row = C.next_row(cur)
    assert (m.id, row.id) == ("M1", "M1.1")
    with pytest.raises(C.CurriculumError, match="frozen"):
        C.mark_row(cur, "M0.1", "failed")
    cur = C.mark_row(C.mark_row(cur, "M1.1", "done"), "M1.2", "failed")
    assert C.next_row(cur) is None and C.open_rows(cur) == 0
    assert C.advance(cur, C.evaluate_gate(C.milestone(cur, "M1"), verdict((1.0, 1.0)))) == cur


def test_revise_keeps_frozen_m0_unless_reopened_with_reason():
    cur = C.pass_milestone(C.loads(PLAN), "M0")
    same_m0 = C.loads(PLAN.replace('decision = "warps"', 'decision = "rows per program"'))
    v2 = C.revise(cur, same_m0, "stall after 6 attempts")
    assert v2.version == 2 and v2.reason == "stall after 6 attempts"
    assert C.milestone(v2, "M0").frozen and C.milestone(v2, "M0").status == "passed"
    new_m0 = C.loads(PLAN.replace("one program per row", "split rows across programs"))
    v3 = C.revise(v2, new_m0, "dram_pct stuck at 40%: only a new structure can lift it")
    m0 = C.milestone(v3, "M0")
    assert v3.version == 3 and not m0.frozen and m0.status == "open"
    assert "reopens frozen M0" in v3.reason
    with pytest.raises(C.CurriculumError, match="reason"):
        C.revise(v2, new_m0, "  ")


def test_revise_cannot_pass_a_milestone_by_decree():
    cur = C.loads(PLAN)
    claimed = C.loads(PLAN.replace('title = "tune"', 'title = "tune"\nstatus = "passed"'))
    v2 = C.revise(cur, claimed, "architect claims M1 passed")
    assert C.milestone(v2, "M1").status == "open"
    assert C.same_content(cur, C.loads(PLAN)) and not C.same_content(cur, claimed)


def test_revise_rejects_a_broken_plan():
    broken = C.loads(PLAN).model_copy(update={"milestones": ()})
    with pytest.raises(C.CurriculumError, match="no milestone"):
        C.revise(C.loads(PLAN), broken, "oops")


def test_row_status_and_gate_errors_are_one_liners():
    cur = C.loads(PLAN)
    with pytest.raises(C.CurriculumError, match="no row 'M9.9'"):
        C.mark_row(cur, "M9.9", "done")
    with pytest.raises(C.CurriculumError, match="not one of"):
        C.mark_row(cur, "M1.1", "finished")
