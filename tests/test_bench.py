"""`forge bench`: problems from sources, runs, resume without repeating work, the summary."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from forgekernel import bench, bench_summary

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "generated"


def _forge(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "forgekernel.cli", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=1200)


def test_problems_from_dirs_files_and_levels(tmp_path):
    found = bench.problems_from([FIXTURES, REPO / "tests" / "fixtures" / "kernelbench" / "2_relu.py"])
    assert [p.slug for p in found] == ["gelu_colsum", "rmsnorm_noweight", "2_relu"]
    with pytest.raises(bench.BenchError, match="no such file"):
        bench.problems_from([tmp_path / "missing"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(bench.BenchError, match="holds no task dirs"):
        bench.problems_from([tmp_path / "empty"])


def test_metrics_follow_kernelbench_definitions():
    rows = [{"correct": True, "timing": "device", "speedup": 2.0, "speedup_compile": 0.5},
            {"correct": True, "timing": "device", "speedup": 0.5, "speedup_compile": 0.25},
            {"correct": False}]
    m = bench_summary.metrics(rows, total=4)
    assert m["correct_rate"] == 0.5 and m["fast_0"] == 0.5
    assert m["fast_1_eager"] == 0.25 and m["fast_1_compile"] == 0.0
    assert m["geomean_eager"] == pytest.approx(1.0) and m["geomean_compile"] == pytest.approx(0.3535, 1e-3)
    cpu = bench_summary.metrics([{"correct": True, "timing": "cpu-interpret", "speedup": 0.01}], total=1)
    assert cpu["timing"] == "cpu-interpret" and cpu["geomean_eager"] is None and cpu["fast_1_eager"] is None


def test_compile_ratio_reads_forge_compare_and_names_what_it_could_not_time():
    """torch.compile's time over the kernel's, geometric mean over the workloads where both
    matched the reference; a workload where torch.compile did not is named, not averaged."""
    def wl(axes, comp):
        return {"axes": axes, "rows": [{"kind": "kernel", "status": "ok", "vs_kernel": 1.0}, comp]}
    record = {"label": "device", "workloads": [
        wl({"n": 1}, {"kind": "compile", "status": "ok", "vs_kernel": 2.0}),
        wl({"n": 2}, {"kind": "compile", "status": "ok", "vs_kernel": 0.5}),
        wl({"n": 3}, {"kind": "compile", "status": "failed", "detail": "InductorError", "vs_kernel": None})]}
    out = bench.compile_ratio(record)
    assert out["speedup_compile"] == pytest.approx(1.0) and out["compile_timing"] == "device"
    assert out["compile_note"] == "n=3: torch.compile failed InductorError"
    # only the sizes the judge's speedup over eager came from (the row's timed workloads)
    row = {"workloads": [{"axes": {"n": 2}, "speedup": 3.0}, {"axes": {"n": 1}, "speedup": None}]}
    assert bench.compile_ratio(record, bench.timed_axes(row)) == {"compile_timing": "device",
                                                                  "speedup_compile": pytest.approx(0.5)}
    assert bench.timed_axes({"workloads": []}) is None
    none = bench.compile_ratio({"label": "device", "workloads": [wl({"n": 1}, {"kind": "eager", "status": "ok"})]})
    assert "speedup_compile" not in none and "torch.compile absent" in none["compile_note"]


def test_gpus_spread_the_problems_round_robin_and_reach_each_forge_process(tmp_path):
    slots = bench.gpu_slots(bench.BenchSettings(jobs=6, gpus=4))
    assert [slots.take() for _ in range(6)] == [0, 1, 2, 3, 0, 1]
    unpinned = bench.gpu_slots(bench.BenchSettings(jobs=2))
    assert [unpinned.take() for _ in range(2)] == [None, None]
    log = tmp_path / "run.log"  # FK_GPU reaches the subprocess: an invalid one is refused there
    out = bench._forge(["run", str(tmp_path / "none")], log, 60, {"FK_GPU": "x"})
    assert out.returncode == 2
    assert log.read_text().splitlines()[0] == f"$ FK_GPU=x forge run {tmp_path / 'none'}"
    assert "FK_GPU (environment) must be a GPU index, got 'x'" in log.read_text()


def test_a_problem_too_big_to_share_waits_for_its_gpu_and_has_it_alone():
    """Five jobs on two GPUs: a problem that asks for GPU 0 alone waits until the one running
    there ends; meanwhile and while it runs, new problems go to GPU 1 or wait, never to GPU 0."""
    import threading

    from forgekernel.bench_slots import GpuSlots

    slots = GpuSlots(jobs=5, gpus=2)
    running, other, big = slots.take(), slots.take(), slots.take()
    assert (running, other, big) == (0, 1, 0)
    inside, leave, log = threading.Event(), threading.Event(), []

    def alone() -> None:
        with slots.alone(big):
            inside.set()
            leave.wait(5)
            log.append("big out")
        slots.give(big)

    waiting: list = []
    t_big = threading.Thread(target=alone)
    t_big.start()
    assert not inside.wait(0.2)  # GPU 0 still runs a problem
    assert slots.take() == 1  # GPU 0 has a free slot, but a problem waits to have it alone
    t_new = threading.Thread(target=lambda: (waiting.append(slots.take()), log.append("new in")))
    t_new.start()
    slots.give(running)
    assert inside.wait(5)
    t_new.join(0.2)
    assert not waiting  # GPU 0 is the big problem's alone, GPU 1 full
    leave.set()
    t_big.join(5)
    t_new.join(5)
    assert waiting == [0] and log == ["big out", "new in"]


def test_two_problems_that_need_one_gpu_alone_take_turns():
    import threading
    import time

    from forgekernel.bench_slots import GpuSlots

    slots = GpuSlots(jobs=2, gpus=1)
    spans: list[tuple[float, float]] = []

    def alone() -> None:
        gpu = slots.take()
        with slots.alone(gpu):
            start = time.monotonic()
            time.sleep(0.1)
            spans.append((start, time.monotonic()))
        slots.give(gpu)

    threads = [threading.Thread(target=alone) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert len(spans) == 2 and not any(t.is_alive() for t in threads)
    (s1, e1), (s2, e2) = sorted(spans)
    assert e1 <= s2  # one after the other


BIG_RELU = ("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
            "    def forward(self, x):\n        return torch.relu(x)\n\n"
            "batch_size = 4096\ndim = 393216\n\n"
            "def get_inputs():\n    return [torch.rand(batch_size, dim)]\n\n"
            "def get_init_inputs():\n    return []\n")
"""KernelBench L1 19's ReLU at its size: 6 GiB in, 6 GiB out."""


def test_a_task_whose_judge_footprint_is_over_the_share_is_too_big_to_share(tmp_path):
    """The ReLU of KernelBench L1 19 at 4096 x 393216 fp32 (6 GiB in, 6 GiB out) is over an
    8 GiB share (the judge keeps about 8 bytes per byte of it), not over a 1000 GiB one."""
    from forgekernel.bench_slots import too_big_to_share
    from forgekernel.kernelbench import convert

    src = tmp_path / "19_ReLU.py"
    src.write_text(BIG_RELU)
    convert(src, tmp_path / "run" / "task")
    assert too_big_to_share(tmp_path / "run", 8.0)
    assert not too_big_to_share(tmp_path / "run", 1000.0)
    assert not too_big_to_share(tmp_path / "no_task_here", 8.0)  # its forge run will say why


def test_problems_too_big_to_share_run_after_the_others(tmp_path):
    """A problem that must have its GPU alone would stop every other problem from starting
    while it waits and runs (an H100 sample at 5b2178f ran one problem at a time for most of
    its 850 s): the first pass hands it back, converted but not run, and the bench runs such
    problems one by one once the shareable ones are done."""
    from concurrent.futures import Future

    from forgekernel.bench_slots import GpuSlots
    from forgekernel.kernelbench import convert

    src = tmp_path / "19_ReLU.py"
    src.write_text(BIG_RELU)
    run_dir = tmp_path / "bench" / "problems" / "19_relu" / "run"
    convert(src, run_dir / "task")
    (run_dir / "run.toml").write_text("")  # converted already: no `forge new` here
    problem = bench.Problem("19_relu", str(src))
    settings = bench.BenchSettings(delivery="local", share_gb=8.0)
    slots = GpuSlots(jobs=2, gpus=1)
    assert bench.run_problem(tmp_path / "bench", problem, settings, 0, slots, defer=True) is problem
    assert slots.claims[0] == 0 and not (run_dir.parent / "run.log").exists()  # nothing claimed, nothing run
    done: list[dict] = []
    futures = [Future() for _ in range(3)]
    for future, result in zip(futures, ({"slug": "a"}, problem, None), strict=True):
        future.set_result(result)  # None: interrupted, left for the resume
    assert bench._drain(futures, done.append) == [problem] and done == [{"slug": "a"}]


def test_gpus_need_the_local_delivery_and_no_bench_dir_is_made(tmp_path):
    proc = _forge("bench", str(FIXTURES), "--out", str(tmp_path / "b"), "--delivery", "cpu",
                  "--gpus", "2", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.startswith("forge: error: --gpus 2 pins problems")
    assert len(proc.stderr.strip().splitlines()) == 1 and not (tmp_path / "b").exists()


def test_share_gpu_needs_the_local_delivery_and_reaches_each_forge_process(tmp_path):
    proc = _forge("bench", str(FIXTURES), "--out", str(tmp_path / "b"), "--delivery", "cpu",
                  "--share-gpu", "8", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.startswith("forge: error: --share-gpu shares")
    assert len(proc.stderr.strip().splitlines()) == 1 and not (tmp_path / "b").exists()
    log = tmp_path / "run.log"  # FK_GPU_SHARE_GB is read there: a bad one is refused in one line
    out = bench._forge(["run", str(tmp_path / "none")], log, 60, {"FK_GPU_SHARE_GB": "-1"})
    assert out.returncode == 2
    assert "FK_GPU_SHARE_GB (environment) must be a positive number of GiB, got '-1'" in log.read_text()


def test_the_summary_says_where_the_gpu_time_went(tmp_path):
    from forgekernel import bench_summary

    log = tmp_path / "gpu_lock.jsonl"
    line = '{{"module": "{m}", "modes": "{o}", "wait_s": {w}, "held_s": {h}, "start": 0, "end": 1}}\n'
    log.write_text(line.format(m="forgekernel.judge.worker", o="SX", w=2.5, h=4)
                   + line.format(m="forgekernel.judge.worker", o="X", w=1, h=6).replace('"start"', '"exclusive_s": 5, "start"')
                   + line.format(m="forgekernel.profile.worker", o="X", w=0, h=20) + '{"module": "torn')
    rows = bench_summary.gpu_lock(log)
    assert rows == [{"kind": "profile", "jobs": 1, "wait_s": 0.0, "held_s": 20.0, "exclusive_s": 0.0},
                    {"kind": "judge", "jobs": 2, "wait_s": 3.5, "held_s": 10.0, "exclusive_s": 5.0}]
    assert bench_summary.gpu_lock(tmp_path / "none.jsonl") == []
    text = bench_summary.markdown({"metrics": bench_summary.metrics([], 0), "results": [], "failures": [],
                                   "gpu_lock": rows})
    assert "| judge | 2 | 3.5 | 10.0 | 5.0 |" in text  # an older line without exclusive_s counts 0


def test_bench_runs_resumes_and_summarises(tmp_path):
    out = tmp_path / "b"
    first = _forge("bench", str(FIXTURES), "--out", str(out), "--delivery", "cpu",
                   "--max-iterations", "1", cwd=tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["metrics"]["correct"] == 2 and summary["metrics"]["timing"] == "cpu-interpret"
    assert "cpu-interpret" in (out / "summary.md").read_text() and (out / "summary.png").is_file()
    lines = (out / "results.jsonl").read_text().splitlines()
    (out / "results.jsonl").write_text(lines[0] + "\n")  # as if killed before the second result
    again = _forge("bench", str(out), cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.count("correct") == 2  # one problem line + the summary line
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(r["slug"] for r in rows) == ["gelu_colsum", "rmsnorm_noweight"]
    resumed = next(r for r in rows if r["slug"] != json.loads(lines[0])["slug"])
    assert resumed["attempts"] == 1  # the finished run was read back, not run again


def test_a_run_that_judged_nothing_is_named_by_its_error(tmp_path):
    """A problem whose run stopped before any verdict (the built-in agent could not plan, say)
    is listed with the error the run printed, not as a bare 'not correct'."""
    root = bench.create(tmp_path / "b", [bench.Problem(slug="p", source=str(tmp_path / "p.py"))],
                        bench.BenchSettings(delivery="cpu"))
    (root / "problems" / "p").mkdir(parents=True)
    (root / "problems" / "p" / "run.log").write_text(
        "[plan] architect (builtin): initial plan\nforge: error: the reference draws random numbers\n")
    (root / bench.RESULTS).write_text(json.dumps({"slug": "p", "correct": False, "statuses": {}}) + "\n")
    failure = bench.summary(root)["failures"][0]
    assert failure["why"] == "the reference draws random numbers"
    assert "the reference draws random numbers" in (root / "summary.md").read_text()


def test_an_interrupted_bench_leaves_the_running_problem_unfinished(tmp_path):
    """Ctrl-C (SIGINT to the process group, as a terminal or `timeout` sends it) while a problem's
    `forge new` runs: bench exits 130, records nothing for that problem and starts no other, so a
    later `forge bench` on the dir runs both."""
    import os
    import signal
    import time

    slow = tmp_path / "slow_relu.py"
    slow.write_text("import time\ntime.sleep(120)\n" + (REPO / "tests/fixtures/kernelbench/2_relu.py").read_text())
    other = tmp_path / "other_relu.py"
    other.write_text((REPO / "tests/fixtures/kernelbench/2_relu.py").read_text())
    out = tmp_path / "b"
    # a shell's background job starts with SIGINT ignored, and children inherit that: give the
    # bench the default disposition a terminal's Ctrl-C meets
    proc = subprocess.Popen([sys.executable, "-m", "forgekernel.cli", "bench", str(slow), str(other),
                             "--out", str(out), "--delivery", "cpu", "--max-iterations", "1"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    log = out / "problems" / "slow_relu" / "new.log"
    deadline = time.monotonic() + 60
    while not log.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(2)
    os.killpg(proc.pid, signal.SIGINT)
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, output
    assert "Traceback" not in output
    assert bench.finished(out) == {}
    assert not (out / "problems" / "other_relu").exists()


def test_a_run_started_on_another_machine_is_set_aside_and_started_again(tmp_path, monkeypatch):
    """A bench dir carried to a fresh machine (a lent GPU): a started run whose ledger key
    stayed behind cannot be resumed, so the bench keeps it beside and starts the problem
    again, and the result row says so; a run made here is left alone."""
    from forgekernel.config import Settings
    from forgekernel.run import rundir

    repo = Path(__file__).resolve().parents[1]
    monkeypatch.setenv("FK_STATE_DIR", str(tmp_path / "machine_a"))
    here = rundir.create(repo / "tasks" / "rmsnorm", Settings(delivery="cpu"), tmp_path / "p" / "run")
    assert rundir.set_aside_if_made_elsewhere(here) is None and (here / "run.toml").is_file()
    monkeypatch.setenv("FK_STATE_DIR", str(tmp_path / "machine_b"))
    aside = rundir.set_aside_if_made_elsewhere(here)
    assert aside is not None and aside.parent == here.parent and aside.name.startswith("run.elsewhere-")
    assert (aside / "run.toml").is_file() and not here.exists()
    assert rundir.set_aside_if_made_elsewhere(here) is None  # nothing left to set aside
    row = {"slug": "p", "correct": False, "restarted": f"started on another machine: kept as {aside.name}"}
    text = bench_summary.markdown({"metrics": bench_summary.metrics([row], 1), "results": [row], "failures": []})
    assert "started on another machine" in text
