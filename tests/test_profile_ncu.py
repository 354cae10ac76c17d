"""Nsight Compute CSV parsing and metric selection (CPU only; recorded H200 outputs in fixtures)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from forgekernel.profile import METRICS, ncu

FIXTURES = Path(__file__).parent / "fixtures" / "ncu"

SYNTHETIC = '''==PROF== Connected to process 4242 (/usr/bin/python3.12)
==PROF== Profiling "k_one" - 0: 0%....50%....100% - 12 passes
==WARNING== something harmless
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","gpu__time_duration.sum","dram__bytes.sum","dram__throughput.avg.pct_of_peak_sustained_elapsed","launch__registers_per_thread","launch__shared_mem_per_block_static","launch__shared_mem_per_block_dynamic","lts__t_sector_hit_rate.pct","smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio","smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio"
"","","","","","","","usecond","Mbyte","%","register/thread","byte","Kbyte/block","%","",""
"0","4242","python3.12","127.0.0.1","k_one","1","7","3","1,500","80","32","0","1","n/a","2.5","0.5"
"1","4242","python3.12","127.0.0.1","k_two","1","7","1","500","40","64","1,024","0","50","0.1","4.0"
==PROF== Disconnected from process 4242
'''


def test_parse_synthetic_handles_units_separators_and_na():
    kernels, notes = ncu.parse_csv(SYNTHETIC)
    assert [k.name for k in kernels] == ["k_one", "k_two"]
    assert kernels[0].values["gpu__time_duration.sum"] == pytest.approx(3e-6)
    assert kernels[0].values["dram__bytes.sum"] == pytest.approx(1.5e9)
    assert kernels[0].values["lts__t_sector_hit_rate.pct"] is None
    assert notes == ["==WARNING== something harmless"]
    m = ncu.summarize(kernels)
    assert m["ncu_ms"] == pytest.approx(4e-3)
    assert m["dram_bytes"] == 2_000_000_000
    assert m["dram_tbs"] == pytest.approx(2e9 / 4e-6 / 1e12)
    assert m["dram_pct"] == pytest.approx((80 * 3 + 40 * 1) / 4)
    assert m["regs"] == 64
    assert m["smem_bytes"] == 1024  # the most of k_one (1 Kbyte = 1000 B) and k_two (1,024 B)
    assert m["l2_hit_pct"] == pytest.approx(50.0)  # n/a is absent, not zero
    # long_scoreboard: (2.5*3 + 0.1*1)/4 = 1.9 ; barrier: (0.5*3 + 4*1)/4 = 1.375
    assert m["stall_top"] == "long_scoreboard"
    assert set(m) <= set(METRICS)


def test_missing_metrics_are_absent_not_zero():
    text = SYNTHETIC.replace('"80","32"', '"n/a","32"').replace('"40","64"', '"n/a","64"')
    m = ncu.summarize(ncu.parse_csv(text)[0])
    assert "dram_pct" not in m
    assert "occupancy_pct" not in m and "tensor_pct" not in m


def test_no_table_gives_no_kernels():
    kernels, notes = ncu.parse_csv("==PROF== Connected\n==ERROR== The application returned an error\n")
    assert kernels == []
    assert notes == ["==ERROR== The application returned an error"]


def test_number_parsing():
    assert ncu.parse_number("1,234.5") == pytest.approx(1234.5)
    assert ncu.parse_number("2", "msecond") == pytest.approx(2e-3)
    assert ncu.parse_number("3", "Gbyte/second") == pytest.approx(3e9)
    assert ncu.parse_number("196,192", "nsecond") == pytest.approx(196192e-9)
    assert ncu.parse_number("5", "ns") == pytest.approx(5e-9)
    assert ncu.parse_number("5", "usecond") == pytest.approx(5e-6)
    assert ncu.parse_number("7", "Kbyte") == pytest.approx(7e3)
    assert ncu.parse_number("7", "MB") == pytest.approx(7e6)
    assert ncu.parse_number("9", "byte/second") == pytest.approx(9.0)
    assert ncu.parse_number("9", "register/thread") == pytest.approx(9.0)
    assert ncu.parse_number("n/a") is None
    assert ncu.parse_number("Shared") == "Shared"


def test_select_metrics_drops_unknown_names():
    known = {"gpu__time_duration", "dram__bytes"}
    keep, drop = ncu.select_metrics(known)
    assert "gpu__time_duration.sum" in keep and "dram__bytes.sum" in keep
    assert "launch__registers_per_thread" in keep  # launch stats are always there
    assert "lts__t_sector_hit_rate.pct" in drop
    assert "sm__maximum_warps_per_active_cycle_pct" in keep  # derived: never listed
    assert "sm__maximum_warps_per_active_cycle_pct" in ncu.select_metrics(known, strict=True)[1]
    assert ncu.select_metrics(None) == (list(ncu.WANTED), [])


def test_command_is_focused_and_leaves_clocks_alone(tmp_path):
    cmd = ncu.ncu_command("ncu", ["gpu__time_duration.sum"], tmp_path / "o.csv", ["python", "t.py"],
                          kernel_regex="rmsnorm_row_kernel")
    joined = " ".join(cmd)
    assert "--clock-control none" in joined
    assert "--nvtx-include forge/" in joined
    assert "--kernel-name regex:rmsnorm_row_kernel" in joined
    assert cmd[-2:] == ["python", "t.py"]


@pytest.mark.skipif(shutil.which("ncu") is not None, reason="ncu is installed here")
def test_ncu_on_without_ncu_is_one_line_error():
    with pytest.raises(ncu.NcuError, match="not on PATH"):
        ncu.check_mode("on")
    assert ncu.check_mode("auto") is None
    assert ncu.check_mode("off") is None


def _recorded() -> list[Path]:
    return sorted(FIXTURES.glob("*.csv"))


@pytest.mark.parametrize("path", _recorded(), ids=lambda p: p.name)
def test_recorded_h200_outputs_parse(path):
    kernels, _ = ncu.parse_csv(path.read_text())
    assert kernels, f"{path.name}: no kernel rows parsed"
    m = ncu.summarize(kernels)
    assert m["ncu_ms"] > 0
    assert 0 < m["dram_pct"] <= 100
    assert m["regs"] > 0
    assert set(m) <= set(METRICS)


def test_h200_triton_rmsnorm_counters():
    text = (FIXTURES / "h200_rmsnorm_triton_M16384_N8192.csv").read_text()
    kernels, notes = ncu.parse_csv(text)
    assert [k.name for k in kernels] == ["rmsnorm_row_kernel"]
    assert any("unmodified GPU clocks" in n for n in notes)  # --clock-control none
    m = ncu.summarize(kernels)
    minimal = 2 * 16384 * 8192 * 2 + 2 * 8192
    assert m["dram_bytes"] == pytest.approx(minimal, rel=0.1)  # one pass over the data
    assert 0.05 < m["ncu_ms"] < 1.0  # nanoseconds in the file, milliseconds here
    assert m["dram_tbs"] == pytest.approx(m["dram_bytes"] / (m["ncu_ms"] * 1e-3) / 1e12)
    assert m["local_st_insts"] == 0
    assert m["occupancy_pct"] <= m["occupancy_theoretical_pct"]


def test_h200_eager_rmsnorm_has_eight_kernels_and_moves_far_more_than_minimal():
    kernels, _ = ncu.parse_csv((FIXTURES / "h200_rmsnorm_eager_M16384_N8192.csv").read_text())
    assert len(kernels) == 8
    assert any("reduce_kernel" in k.name for k in kernels)
    m = ncu.summarize(kernels)
    minimal = 2 * 16384 * 8192 * 2 + 2 * 8192
    assert m["dram_bytes"] > 5 * minimal


def test_h200_triton_matmul_uses_the_tensor_pipe():
    m = ncu.summarize(ncu.parse_csv((FIXTURES / "h200_matmul_triton_M4096_N4096_K4096.csv").read_text())[0])
    assert m["tensor_pct"] > 50
    assert m["smem_bytes"] > 32 * 1024


def test_h200_query_metrics_excerpt():
    known = ncu.parse_query_metrics((FIXTURES / "h200_query_metrics_excerpt.txt").read_text())
    assert {"dram__bytes", "gpu__time_duration", "lts__t_sector_hit_rate"} <= known
    assert not any("." in k for k in known)  # 'FBSP.TriageCompute.x' rows are not metric names
    keep, drop = ncu.select_metrics(known)
    # what the H200 run reported dropping
    assert drop == ["sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active"]
