"""report.md and its plots, rebuilt from records (a ledger written here, no judge run)."""

from __future__ import annotations

import pytest

from engine_support.runs import new_run
from forgekernel import curriculum as C
from forgekernel.records import AgentCost, Attempt, Status, Verdict, WorkloadResult
from forgekernel.report import markdown as report
from forgekernel.run import ledger as L
from forgekernel.run import rundir

PLAN = C.loads("""
[[milestone]]
id = "M0"
kind = "architecture"
title = "fused"
[[milestone.row]]
id = "M0.1"
decision = "fuse"
[milestone.gate]
performance = "speedup >= 1.5"
mechanism = ["dram_pct >= 70"]
""")
COST = AgentCost(agent="test")
A = {"M": 4096, "N": 4096}
B = {"M": 8192, "N": 8192}


def device_verdict(cid: str) -> Verdict:
    ws = (WorkloadResult(axes=A, median_ms=0.5, reference_ms=2.0, speedup=4.0, timing_label="device"),
          WorkloadResult(axes=B, median_ms=2.0, reference_ms=2.0, speedup=1.0, sol_pct=80.0,
                         timing_label="device"),
          WorkloadResult(axes={"M": 5, "N": 7}, hidden=True, max_abs_err=0.0))
    return Verdict(status=Status.PASSED, candidate=cid, workloads=ws, speedup=2.0, delivery="local")


def write_run(tmp_path, verdicts, end_met: bool | None = None, floors=True):
    rd = rundir.open(new_run(tmp_path, target=1.5))
    led = L.Ledger(rd.ledger, rd.ledger_key())
    led.append(L.SessionEvent(delivery="local", agent="builtin", architect="builtin"))
    led.append(L.PlanEvent(version=1, reason="initial", after_seq=0, curriculum=C.to_dict(PLAN), agent=COST))
    for seq, v in enumerate(verdicts, 1):
        led.append(L.StartedEvent(seq=seq, milestone="M0", row="M0.1", candidate=f"c{seq:015d}",
                                  agent=COST, summary=f"try {seq}"))
        led.append(Attempt(seq=seq, time=L.now(), milestone="M0", row="M0.1", candidate=f"c{seq:015d}",
                           agent=COST, verdict=v, accepted=v.passed, best=v.passed))
    if end_met is not None:
        led.append(L.EndEvent(reason="test end", target_met=end_met, after_seq=len(verdicts)))
    if floors:
        rundir.write_json(rd.reference, {"floors": [
            {"axes": A, "bytes": 64 << 20, "flops": None, "floor_ms": 0.25, "bandwidth_tbs": 4.0,
             "peak_tflops": None, "bound": "memory"},
            {"axes": B, "bytes": 256 << 20, "flops": None, "floor_ms": 1.6, "bandwidth_tbs": 4.1,
             "peak_tflops": None, "bound": "memory"}]})
    return rd


def test_summary_line_table_and_plots_on_device(tmp_path):
    rd = write_run(tmp_path, [Verdict(status=Status.WRONG_VALUES), device_verdict("c000000000000002")],
                   end_met=True)
    text = report.write(rd).read_text()
    lines = text.splitlines()
    # geometric means: medians 0.5 and 2.0 -> 1 ms; speedups 4 and 1 -> 2x
    assert lines[2] == "best: c000000000000002 -- device median 1 ms, 2x the reference"
    assert "| M=4096 x N=4096 | 2 | 0.5 | 4 | 50.0 | device |" in text  # %SOL from the floor
    assert "| M=8192 x N=8192 | 2 | 2 | 1 | 80.0 | device |" in text  # the judge's own %SOL
    assert "M=5" not in text  # hidden workloads never appear
    assert "**Target: 1.5x the reference -- met** (exit code 0)" in text
    assert "By status: PASSED 1, WRONG_VALUES 1" in text
    assert "gate `dram_pct >= 70`: unknown (not measured: dram_pct)" in text
    for name in ("speedup.png", "roofline.png"):
        assert (rd.plots / name).read_bytes()[:4] == b"\x89PNG"
        assert f"(plots/{name})" in text


def test_no_best_and_target_not_met(tmp_path):
    rd = write_run(tmp_path, [Verdict(status=Status.COMPILE_ERROR, reason="SyntaxError")], end_met=False)
    text = report.write(rd).read_text()
    assert text.splitlines()[2] == "best: none -- no candidate passed the judge"
    assert "-- NOT met** (exit code 2)" in text and "No plot" in text
    assert not (rd.plots / "roofline.png").exists()


def test_cpu_timings_are_labelled(tmp_path):
    ws = (WorkloadResult(axes={"M": 16, "N": 256}, median_ms=20.0, reference_ms=0.05, speedup=0.0025,
                         timing_label="cpu-interpret"),)
    v = Verdict(status=Status.PASSED, candidate="c000000000000001", workloads=ws, speedup=0.0025, delivery="cpu")
    rd = write_run(tmp_path, [v], end_met=False, floors=False)
    text = report.write(rd).read_text()
    assert text.splitlines()[2] == "best: c000000000000001 -- cpu-interpret median 20 ms, 0.0025x the reference"
    assert "timings labelled `cpu-interpret`" in text
    assert not (rd.plots / "roofline.png").exists()  # an interpreter's time is not on a GPU roofline


def test_the_confirmation_is_the_verdict_shown(tmp_path):
    rd = write_run(tmp_path, [device_verdict("c000000000000001")])
    first = device_verdict("c000000000000001")
    again = first.model_copy(update={"speedup": 1.8})
    led = L.Ledger(rd.ledger, rd.ledger_key())
    led.append(L.ConfirmEvent(candidate="c000000000000001", after_seq=1, verdict=again,
                              target=1.5, met=True))
    state = L.read(rd.ledger)[0]
    from forgekernel.run.state import replay

    v, source = report.best_verdict(replay(state))
    assert v.speedup == pytest.approx(1.8) and source.startswith("final confirmation")
    assert report.summary_line(replay(state)).endswith("1.8x the reference")


def test_sol_above_100_gets_a_note_and_below_does_not():
    from forgekernel.report.markdown import ABOVE_CEILING, workload_table

    def table(sol):
        w = WorkloadResult(axes={"M": 8192}, passed=True, median_ms=1.0, reference_ms=1.0, speedup=1.0,
                           sol_pct=sol, timing_label="device")
        return workload_table(Verdict(status=Status.PASSED, candidate="c1", workloads=(w,), speedup=1.0), [])

    assert ABOVE_CEILING in table(117.6)
    assert "| 117.6 |" in " ".join(table(117.6))
    assert ABOVE_CEILING not in table(97.0)


def test_judge_time_per_verdict_is_summarised(tmp_path):
    timed = [Verdict(status=Status.WRONG_VALUES, wall_s=w) for w in (9.5, 6.8, 7.25)]
    text = report.write(write_run(tmp_path, timed, end_met=False)).read_text()
    assert "Judge time per verdict: median 7.2 s, range 6.8-9.5 s over 3 verdict(s)." in text
    text = report.write(write_run(tmp_path / "b", [Verdict(status=Status.WRONG_VALUES)], end_met=False)).read_text()
    assert "Judge time per verdict" not in text


def test_roofline_bound_from_device_profiles_only():
    from forgekernel.report import markdown as report
    from forgekernel.run.analysis import bound_note, speedup_bound

    def prof(median, floor, source="device: triton.testing.do_bench median"):
        return {"metrics": {"median_ms": median, "floor_ms": floor}, "sources": {"median_ms": source}}

    ref = {"profiles": [prof(2.0, 0.1), prof(0.8, 0.1), prof(5.0, 0.1, "cpu-interpret: wall clock")]}
    assert speedup_bound(ref) == pytest.approx(160 ** 0.5)  # sqrt(20 x 8); the CPU row says nothing
    assert speedup_bound({"profiles": [prof(5.0, 0.1, "cpu-interpret: wall clock")]}) is None
    assert speedup_bound({}) is None
    assert "not expected to meet" in bound_note(40.0, 50.0)
    assert "not expected" not in bound_note(40.0, 3.0) and "40x" in bound_note(40.0, 3.0)
    assert bound_note(None, 3.0) is None
    assert report._bound_lines(ref, 50.0)[0].startswith("Roofline bound: a kernel can be at most about 12.6x")
    assert report._bound_lines({}, 50.0) == []
