"""benchmarks/gpu_gap_ncu.py without a GPU: its ncu CSV parser, totals and table on a
hand-written raw page, its driver's refusals, and its orchestrator's plan and ncu check."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "benchmarks" / "gpu_gap_ncu.py"
_spec = importlib.util.spec_from_file_location("gpu_gap_ncu", SCRIPT)
assert _spec is not None and _spec.loader is not None
gap = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gap)

NVTX = '"4242  ""<default domain>:forge_measure:none:none:none:none:none:none"" "'
HEAD = ('"ID","Process ID","Process Name","Host Name",'
        '"thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg",'
        '"Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC",'
        '"dram__bytes_read.sum","dram__bytes_write.sum",'
        '"dram__throughput.avg.pct_of_peak_sustained_elapsed","gpu__time_duration.avg",'
        '"gpu__time_duration.sum","l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum",'
        '"launch__block_size","launch__grid_size","launch__registers_per_thread",'
        '"lts__t_sector_hit_rate.pct","sm__throughput.avg.pct_of_peak_sustained_elapsed",'
        '"sm__warps_active.avg.pct_of_peak_sustained_active","smsp__inst_executed.sum"')
UNITS = ('"","","","","","","","","","","","","byte","byte","%","ns","ns","byte","","",'
         '"register/thread","%","%","%","inst"')
GEMM = ('"0","4242","python3","127.0.0.1",' + NVTX + ',"nvjet_tst_128x256_64x4_2x1_v_bz_coopA_NNT",'
        '"1","7","(384, 1, 1)","(132, 1, 1)","0","9.0","67,371,008","33,554,432","24.31",'
        '"201,344","201,344","0","384","132","168","71.62","82.17","18.75","12,845,056"')
REDUCE = ('"1","4242","python3","127.0.0.1",' + NVTX + ',"void splitKreduce_kernel<32, 16, int, '
          'float, __nv_bfloat16, float, __nv_bfloat16, true, false, false>(cublasSplitKParams<float>, '
          '__nv_bfloat16 const*, float const*, __nv_bfloat16*)","1","7","(256, 1, 1)",'
          '"(4,096, 1, 1)","0","9.0","1,048,576","524,288","61.5","5,120","5,120","1,048,576",'
          '"256","4,096","32","12.5","20.0","88.1","n/a"')
SAMPLE = "\n".join([
    "==PROF== Connected to process 4242 (/usr/bin/python3.12)",
    "==WARNING== Note: Running with unmodified GPU clocks. If not controlled otherwise, "
    "profiling results may be inconsistent.",
    "gpu env: a line the target printed",
    HEAD, UNITS, GEMM, REDUCE,
    "==PROF== Disconnected from process 4242", ""])


def test_parse_keeps_each_kernel_with_base_units_and_plain_numbers():
    gemm, reduce = gap.parse_ncu_csv(SAMPLE)
    assert (gemm["id"], reduce["id"]) == (0, 1)
    assert gemm["name"] == "nvjet_tst_128x256_64x4_2x1_v_bz_coopA_NNT"
    assert reduce["name"].startswith("void splitKreduce_kernel<32, 16, int,")
    assert (gemm["block"], gemm["grid"], reduce["grid"]) == ("(384, 1, 1)", "(132, 1, 1)", "(4,096, 1, 1)")
    m = gemm["metrics"]
    assert m["gpu__time_duration.sum"] == pytest.approx(201_344e-9)  # ns -> s
    assert m["dram__bytes_read.sum"] == 67_371_008 and isinstance(m["dram__bytes_read.sum"], int)
    assert m["launch__registers_per_thread"] == 168
    assert m["smsp__inst_executed.sum"] == 12_845_056
    assert m["sm__warps_active.avg.pct_of_peak_sustained_active"] == pytest.approx(18.75)
    assert "gpu__time_duration.avg" not in m  # not asked for
    assert reduce["metrics"]["launch__grid_size"] == 4096
    assert reduce["metrics"]["smsp__inst_executed.sum"] is None  # n/a


def test_parse_scales_other_units_and_finds_nothing_in_a_failed_run():
    units = UNITS.replace('"ns","ns","byte"', '"us","usecond","Mbyte"')
    (gemm,) = gap.parse_ncu_csv("\n".join([HEAD, units, GEMM]))
    assert gemm["metrics"]["gpu__time_duration.sum"] == pytest.approx(0.201344)
    assert gemm["metrics"]["l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum"] == 0
    failed = "==PROF== Connected to process 1\n==ERROR== The application returned an error code (2).\n"
    assert gap.parse_ncu_csv(failed) == []
    assert gap.ncu_notes(failed + SAMPLE) == [
        "==ERROR== The application returned an error code (2).",
        "==WARNING== Note: Running with unmodified GPU clocks. If not controlled otherwise, "
        "profiling results may be inconsistent."]


def test_totals_sum_time_and_bytes_and_weight_percentages_by_duration():
    t = gap.totals(gap.parse_ncu_csv(SAMPLE))
    assert t["kernels"] == 2
    assert t["duration_us"] == pytest.approx(206.464)
    assert t["dram_read_mb"] == pytest.approx(67.371008 + 1.048576)
    assert t["dram_write_mb"] == pytest.approx(33.554432 + 0.524288)
    assert t["inst_executed"] == 12_845_056  # the n/a kernel adds nothing
    assert t["dram_pct"] == pytest.approx((24.31 * 201_344 + 61.5 * 5_120) / 206_464)
    assert (t["main_kernel"], t["registers"], t["grid"], t["block"]) == (
        "nvjet_tst_128x256_64x4_2x1_v_bz_coopA_NNT", 168, "(132, 1, 1)", "(384, 1, 1)")
    assert gap.totals([]) == {"kernels": 0, "duration_us": 0.0, "dram_read_mb": None,
                              "dram_write_mb": None, "inst_executed": None, "l1_global_ld_mb": None,
                              "dram_pct": None, "sm_pct": None, "occupancy_pct": None,
                              "l2_hit_pct": None}


def test_table_has_a_row_per_step_and_says_why_one_failed():
    kernels = gap.parse_ncu_csv(SAMPLE)
    results = [{"task": "matmul", "workload": 2, "axes": {"M": 4096, "N": 4096, "K": 4096},
                "impl": "cublas", "status": "ok", "note": "", "totals": gap.totals(kernels)},
               {"task": "matmul", "workload": 2, "axes": {"M": 4096, "N": 4096, "K": 4096},
                "impl": "forge", "status": "timeout", "note": "ncu ran past 120 s",
                "totals": gap.totals([])}]
    lines = gap.render_table(results).splitlines()
    assert lines[0].startswith("| task | workload | impl | kernels | duration us | DRAM read MB")
    assert lines[0].endswith("| regs/thread | grid | block |")
    assert len(lines) == 4 and len({ln.count("|") for ln in lines}) == 1
    assert lines[2] == ("| matmul | 2: M=4096 N=4096 K=4096 | cublas | 2: nvjet_tst_128x256_64x4_2x1_v_bz_coopA_NNT "
                        "| 206.5 | 68.4 | 34.1 | 25.2 | 80.6 | 20.5 | 168 | (132, 1, 1) | (384, 1, 1) |")
    assert "| forge | timeout: ncu ran past 120 s |" in lines[3]


def test_driver_refuses_an_unknown_impl_or_task_in_one_line(capsys):
    gap.check_impl("matmul", "cublas")
    gap.check_impl("rope", "compile")
    for task, impl, word in (("rope", "bogus", "impl 'bogus'"), ("rope", "cublas", "impl 'cublas'"),
                             ("softmax", "forge", "task 'softmax'")):
        with pytest.raises(SystemExit) as exc:
            gap.main(["--drive", task, impl, "2"])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and word in err and "Traceback" not in err


def test_driver_without_cuda_says_so_in_one_line(capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: the driver would run")
    with pytest.raises(SystemExit) as exc:
        gap.main(["--drive", "rope", "forge", "2"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1 and "CUDA" in err


def test_orchestrator_without_ncu_exits_2_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SystemExit) as exc:
        gap.main(["--out", str(tmp_path / "out"), "--commit", "abc"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1 and "ncu" in err
    assert not (tmp_path / "out").exists()


def test_plan_pairs_each_non_smoke_workload_with_its_peer():
    steps = gap.plan(["rope", "matmul"])
    rope = [s for s in steps if s["task"] == "rope"]
    matmul = [s for s in steps if s["task"] == "matmul"]
    assert [s["impl"] for s in rope[:2]] == ["forge", "compile"]
    assert [s["impl"] for s in matmul[:2]] == ["forge", "cublas"]
    assert sorted({s["workload"] for s in rope}) == [2, 3, 4, 5, 6]
    assert sorted({s["workload"] for s in matmul}) == [2, 3, 4, 5, 6, 7]
    assert matmul[0]["axes"] == {"M": 4096, "N": 4096, "K": 4096}
    cmd = gap.ncu_command("ncu", list(gap.METRICS), matmul[1], Path("raw/x.csv"), "none")
    assert cmd[cmd.index("--nvtx-include") + 1] == "forge_measure/"
    assert cmd[-4:] == ["--drive", "matmul", "cublas", "2"]
