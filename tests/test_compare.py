"""`forge compare` at smoke shapes on the CPU runner (the Triton interpreter, sandboxed
worker): the table, the JSON, the plot, peers with other semantics, bad input."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from forgekernel.compare import api, peers, record, render, timing
from forgekernel.task import load_task

REPO = Path(__file__).resolve().parents[1]
WRONG = REPO / "tests" / "fixtures" / "kernels" / "wrong" / "rmsnorm_wrong_values"


def forge(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "forgekernel.cli", "compare", *args],
                          capture_output=True, text=True, timeout=300, cwd=cwd)


def rows(data: dict, wl: int = 0) -> dict[str, dict]:
    return {r["name"]: r for r in data["workloads"][wl]["rows"]}


def test_rmsnorm_smoke_table_json_and_plot(tmp_path):
    """The default kernel (kernels/rmsnorm) against eager, F.rms_norm and a copy."""
    proc = forge(str(REPO / "tasks" / "rmsnorm"), "--delivery", "cpu", "--skip", "compile",
                 "--reps", "2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads((tmp_path / "compare_rmsnorm.json").read_text())
    assert (tmp_path / "compare_rmsnorm.png").stat().st_size > 0
    assert data["task"] == "rmsnorm" and data["label"] == "cpu-interpret"
    assert data["basis"] == "per_call_ms" and data["device"] == "cpu" and data["delivery"] == "cpu"
    assert data["method"].startswith("cpu-interpret") and data["date"] and data["commit"]
    assert {"torch", "triton"} <= set(data["versions"]) and data["skipped"] == ["compile"]
    assert data["kernels"] == {"kernel": str(REPO / "kernels" / "rmsnorm" / "kernel.py")}
    assert data["sandbox"].startswith(("bwrap", "forge's"))
    assert [w["axes"] for w in data["workloads"]] == [{"M": 16, "N": 256}, {"M": 7, "N": 384}]
    for i in range(2):
        got = rows(data, i)
        assert list(got) == ["kernel", "eager", "F.rms_norm", "liger", "quack", "copy"]
        assert got["kernel"]["status"] == "ok" and got["kernel"]["vs_kernel"] == 1.0
        assert got["eager"]["status"] == "ok" and got["eager"]["per_call_ms"] > 0
        assert got["eager"]["vs_kernel"] == pytest.approx(got["eager"]["per_call_ms"] / got["kernel"]["per_call_ms"])
        assert got["eager"]["of_ceiling"] == pytest.approx(got["copy"]["per_call_ms"] / got["eager"]["per_call_ms"])
        assert got["eager"]["device_ms"] is None and got["eager"]["host_us"] is None  # no device here
        assert got["F.rms_norm"]["source"] == "task" and got["F.rms_norm"]["max_err"] is not None
        assert got["liger"]["status"] == "not installed" and got["liger"]["per_call_ms"] is None
        assert got["copy"]["vs_kernel"] is None and got["copy"]["n"] == 2
        assert "read" not in got  # not a reduction
    for text in ("workload", "per-call ms", "vs kernel", "of ceiling", "F.rms_norm",
                 "not installed", "cpu-interpret", "rank nothing"):
        assert text in proc.stdout


def test_cross_entropy_peer_with_other_semantics_and_the_read_ceiling(tmp_path):
    """A run dir as KERNEL; F.cross_entropy returns bf16 (the reference: an fp32 scalar)."""
    run_dir = REPO / "benchmarks" / "results" / "engine_h200_2026-12-02d" / "cross_entropy"
    proc = forge("cross_entropy", str(run_dir), "--delivery", "cpu", "--skip", "compile",
                 "--skip", "liger", "--skip", "quack", "--reps", "2", "--json", "out/ce.json",
                 "--plot", "out/ce.png", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads((tmp_path / "out" / "ce.json").read_text())
    assert data["kernels"]["kernel"] == str(run_dir / "best" / "kernel.py")
    wl = data["workloads"][0]
    assert wl["reduction"] and wl["bytes_out"] == 4
    got = rows(data)
    assert list(got) == ["kernel", "eager", "F.cross_entropy", "copy", "read"]
    other = got["F.cross_entropy"]
    assert other["status"] == "other semantics" and "dtype bfloat16" in other["detail"]
    assert other["per_call_ms"] is None and other["vs_kernel"] is None and other["of_ceiling"] is None
    assert got["eager"]["of_ceiling"] == pytest.approx(got["read"]["per_call_ms"] / got["eager"]["per_call_ms"])
    assert "other semantics" in proc.stdout


def test_a_wrong_kernel_is_shown_as_wrong_and_exits_1(tmp_path):
    proc = forge("rmsnorm", str(REPO / "kernels" / "rmsnorm"), str(WRONG), "--delivery", "cpu",
                 "--skip", "compile", "--skip", "eager", "--skip", "F.rms_norm", "--reps", "1",
                 cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    got = rows(json.loads((tmp_path / "compare_rmsnorm.json").read_text()))
    assert got["kernel:rmsnorm"]["status"] == "ok"
    assert got["kernel:rmsnorm_wrong_values"]["status"] == "wrong"
    assert got["kernel:rmsnorm_wrong_values"]["vs_kernel"] is None


def _task_with_peer(tmp_path: Path, peer: str) -> Path:
    task = tmp_path / "rms"
    shutil.copytree(REPO / "tasks" / "rmsnorm", task)
    (task / "task.toml").write_text((task / "task.toml").read_text().split("[[peer]]")[0] + peer)
    return task


@pytest.mark.parametrize("args,expected", [
    (["no_such_task"], "no_such_task: no such task"),
    (["rmsnorm", "missing/kernel.py"], "missing/kernel.py: no kernel"),
    (["rmsnorm", "--skip", "nothing"], "--skip nothing: no such peer"),
    (["rmsnorm", "--delivery", "cpu", "--workloads", "all"], "needs a GPU delivery"),
    (["rmsnorm", "--delivery", "cpu", "--workloads", "timed"], "needs a GPU delivery"),
    (["rmsnorm", "--delivery", "cpu", "--workloads", "some"], "use smoke, all or timed"),
    (["rmsnorm", "--delivery", "moon"], "--delivery 'moon'"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, expected):
    proc = forge(*args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("forge: error: ") and expected in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("peer,expected", [
    ('[[peer]]\nname = "p"\ncall = "torch.nn.functional.rms_norm"\n', "use 'module.path:function'"),
    ('[[peer]]\nname = "p"\ncall = "torch:exp"\ninputs = ["y"]\n', "names 'y', which is not an input"),
    ('[[peer]]\nname = "p"\ncall = "torch:exp"\nargs = [["=Q"]]\n', "uses 'Q', which is not an axis"),
    ('[[peer]]\nname = "eager"\ncall = "torch:exp"\n', "a peer needs its own name"),
    ('[[peer]]\ncall = "torch:exp"\n', "peer[0].name"),
    ('[[peer]]\nname = "p"\ncall = "torch:exp"\nspeed = 3\n', "peer[0].speed"),
])
def test_a_bad_peer_table_is_one_line(tmp_path, peer, expected):
    task = _task_with_peer(tmp_path, peer)
    proc = forge(str(task), cwd=tmp_path)
    assert proc.returncode == 2 and expected in proc.stderr, proc.stderr
    assert proc.stderr.startswith(f"forge: error: {task / 'task.toml'}: peer[0]")


def test_timed_workloads_are_the_ones_the_judge_times_on_a_gpu():
    task = load_task(REPO / "tasks" / "rmsnorm")
    timed = api.choose_workloads(task, "timed", "device")
    assert timed and all(not w.smoke for w in timed) and len(timed) == sum(not w.smoke for w in task.workloads)
    only_smoke = task.model_copy(update={"workloads": task.smoke_workloads()})
    assert api.choose_workloads(only_smoke, "timed", "device") == only_smoke.workloads


def test_the_plan_orders_peers_and_matches_library_peers_to_the_task(tmp_path):
    task = load_task(_task_with_peer(tmp_path, '[[peer]]\nname = "exp"\ncall = "torch:exp"\n'))
    plan = peers.plan(task, [("kernel", "/k/kernel.py")], {"compile"})
    assert [p["name"] for p in plan] == ["kernel", "eager", "exp", "liger", "quack", "copy", "read"]
    assert [p.source for p in peers.library_peers(task)] == ["liger", "quack"]
    renamed = task.model_copy(update={"inputs": {"y": task.inputs["x"]}})
    assert peers.library_peers(renamed) == ()  # an rmsnorm with other inputs is not the example's


def test_measure_keeps_going_when_a_peer_raises():
    def boom():
        raise RuntimeError("bad\nsecond line")

    got = timing.measure({"ok": lambda: 1, "boom": boom}, timing.CpuClock(), reps=3, warmup=1)
    assert got["ok"]["n"] == 3 and got["ok"]["per_call_ms"] >= 0 and got["ok"]["failed"] is None
    assert got["boom"]["failed"] == "RuntimeError: bad" and got["boom"]["n"] == 0


def _raw(status: str = "ok") -> dict:
    def row(name, kind, ms, st="ok"):
        return {"name": name, "kind": kind, "source": kind, "status": st, "per_call_ms": ms}
    return {"label": "device", "method": "m", "device": "gpu", "versions": {"torch": "x"},
            "workloads": [{"axes": {"M": 1}, "bytes_in": 8, "bytes_out": 8, "reduction": False,
                           "rows": [{**row("kernel", "kernel", 1.0), "device_ms": 2.0},
                                    {**row("eager", "eager", 9.0), "device_ms": 6.0},
                                    {**row("lib", "call", None, status), "device_ms": 4.0},
                                    {**row("copy", "copy", 1.0), "device_ms": 1.0}]},
                          {"axes": {"M": 2}, "note": "not reached: the time budget was spent"}]}


def test_ratios_use_device_time_on_a_gpu_and_skip_rows_that_did_not_match(tmp_path):
    rec = record.build(_raw("other semantics"), task="t", delivery="local", commit="abc",
                       kernels={"kernel": "k"}, skipped=[], sandbox="")
    got = {r.name: r for r in rec.workloads[0].rows}
    assert rec.basis == "device_ms"
    assert got["eager"].vs_kernel == 3.0 and got["eager"].of_ceiling == pytest.approx(1 / 6)
    assert got["kernel"].of_ceiling == 0.5 and got["lib"].vs_kernel is None
    cells = render.cells(rec)
    assert cells[2][0] == "" and cells[2][-1] == "other semantics"
    assert cells[-1][-1] == "not reached: the time budget was spent"
    record.write(rec, tmp_path / "r.json")
    assert record.load(tmp_path / "r.json") == rec
    assert render.plot(rec, tmp_path / "r.png")
