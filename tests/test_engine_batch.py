"""Batch mode: the coder proposes several candidates for a row, all are judged (together,
concurrently on a runner with ``run_many``), each is one ledger attempt, and only the
fastest correct one may become the best. Also a SIGKILLed `forge run --batch 3` resumed."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor

import pytest

from engine_support.fake_judge import judge as subprocess_judge
from engine_support.fake_judge import judge_in_process
from engine_support.runs import KERNELS, REPO, TESTS, agents, new_run, step, write_script
from forgekernel.delivery import make_runner
from forgekernel.records import Attempt
from forgekernel.run import engine, ledger, rundir

CPU = make_runner("cpu")
STEPS = [step("torch_slow.py"), step("wrong.py"), step("torch_fast.py")]


def cid(kernel: str, tmp) -> str:
    d = tmp / "ids" / kernel
    d.mkdir(parents=True)
    (d / "kernel.py").write_text((KERNELS / kernel).read_text())
    return rundir.content_hash(d)


def attempts(root) -> list[Attempt]:
    return [e for e in ledger.read(rundir.open(root).ledger)[0] if isinstance(e, Attempt)]


class ThreadedRunner:
    """Implements run_many by running each job in its own thread over the CPU runner, and
    keeps when each job started and ended (a real runner, not a mock)."""

    name, timing_label = "cpu", "cpu-interpret"

    def __init__(self) -> None:
        self.inner = make_runner("cpu")
        self.batches: list[list[tuple[float, float]]] = []
        """Per run_many call: each job's (start, end)."""

    def run(self, job):
        return self.run_many([job])[0]

    def run_many(self, jobs):
        spans: list[tuple[float, float]] = []
        self.batches.append(spans)
        lock = threading.Lock()

        def one(job):
            t0 = time.monotonic()
            res = self.inner.run(job)
            with lock:
                spans.append((t0, time.monotonic()))
            return res

        with ThreadPoolExecutor(len(jobs)) as pool:
            return list(pool.map(one, jobs))


def test_batch_of_three_fastest_correct_becomes_best(tmp_path):
    root = new_run(tmp_path)
    coder, architect = agents(write_script(tmp_path / "s.json", STEPS))
    outcome = engine.run(root, coder, architect, judge_in_process, CPU, limits={"iterations": 3, "batch": 3})
    got = [(a.seq, a.verdict.status.value, a.accepted, a.best) for a in attempts(root)]
    # seq 1 (slow) passed first in seq order, but only the batch's fastest may become the best
    assert got == [(1, "PASSED", True, False), (2, "WRONG_VALUES", False, False), (3, "PASSED", True, True)]
    assert outcome.best == cid("torch_fast.py", tmp_path)
    # every proposal started from the best (the stub) and saw the batch's earlier proposals
    assert [[n.status for n in ctx.history] for ctx in coder.seen] == [[], ["PROPOSED"], ["PROPOSED"] * 2]
    assert rundir.content_hash(rundir.open(root).workspace) == outcome.best
    started = [e.seq for e in ledger.read(rundir.open(root).ledger)[0] if isinstance(e, ledger.StartedEvent)]
    assert started == [1, 2, 3]


def test_batch_is_judged_concurrently_through_run_many(tmp_path):
    root = new_run(tmp_path)
    coder, architect = agents(write_script(tmp_path / "s.json", STEPS))
    runner = ThreadedRunner()
    engine.run(root, coder, architect, subprocess_judge, runner, limits={"iterations": 3, "batch": 3})
    assert [a.verdict.status.value for a in attempts(root)] == ["PASSED", "WRONG_VALUES", "PASSED"]
    assert [a.best for a in attempts(root)] == [False, False, True]
    triples = [b for b in runner.batches if len(b) == 3]  # the batch's jobs in one run_many call
    assert len(triples) == 1 and all(len(b) == 1 for b in runner.batches if b is not triples[0])
    assert max(s for s, _ in triples[0]) < min(e for _, e in triples[0])  # all three overlapped


def forge_run(root, script) -> subprocess.Popen:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(TESTS)])}
    cmd = [sys.executable, "-m", "forgekernel.cli", "run", str(root), "--script", str(script),
           "--delivery", "cpu", "--batch", "3", "--max-iterations", "3",
           "--judge", "engine_support.fake_judge:judge"]
    return subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)


def _wait_unlocked(rd, limit_s: float = 60.0) -> None:
    """Until no process holds the run dir's lock (a killed run's workers may take a moment)."""
    from forgekernel.run import lockfile

    deadline = time.monotonic() + limit_s
    while lockfile.held(rd.lock):
        assert time.monotonic() < deadline, "the killed run's lock is still held"
        time.sleep(0.1)


def _count(path, kind: str) -> int:
    return path.read_text().count(f'"kind":"{kind}"') if path.exists() else 0


@pytest.mark.slow
def test_sigkill_mid_batch_then_resume_records_each_attempt_once(tmp_path):
    script = write_script(tmp_path / "s.json", STEPS)
    rd = rundir.open(new_run(tmp_path, "killed"))
    for started in (2, 3):  # kill once two proposals are started, then while three are judged
        proc = forge_run(rd.root, script)
        while proc.poll() is None and _count(rd.ledger, "started") < started:
            time.sleep(0.02)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        _wait_unlocked(rd)  # the judge worker (its own process group) dies with its parent
        assert engine.load_state(rd).waiting  # killed mid-batch: started, not yet recorded
    proc = forge_run(rd.root, script)
    out = proc.communicate(timeout=300)[0].decode()
    # the target is out of reach; the run ends normally (2 is also a one-line error's code:
    # on a loaded CI machine the resumed run once found the killed run's lock still held)
    assert proc.returncode == 2 and "forge: error" not in out, out
    raw = [json.loads(x) for x in rd.ledger.read_text().splitlines()]
    assert sorted(x["seq"] for x in raw if "kind" not in x) == [1, 2, 3]  # each attempt once
    assert [a.verdict.status.value for a in attempts(rd.root)] == ["PASSED", "WRONG_VALUES", "PASSED"]
    assert attempts(rd.root)[-1].best and rd.best_kernel.read_text() == (KERNELS / "torch_fast.py").read_text()
    assert tomllib.loads(rd.run_toml.read_text())["budget"]["batch"] == 3  # kept for resumes


@pytest.mark.slow
def test_judge_many_real_judge_with_a_statically_rejected_candidate(tmp_path):
    """The real judge through run_many: a candidate rejected before any job (no kernel of
    its own) must not hold back the other one's job (no deadlock), verdicts in order."""
    from forgekernel.judge.batch import judge_many
    from forgekernel.task import load_task

    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "kernel.py").write_text((KERNELS / "torch_fast.py").read_text())
    runner = ThreadedRunner()
    verdicts = judge_many(load_task(REPO / "tasks" / "rmsnorm"),
                          [plain, TESTS / "fixtures" / "kernels" / "correct" / "rmsnorm_rowwise"], runner)
    assert [v.status.value for v in verdicts] == ["REJECTED", "PASSED"]
    assert [len(b) for b in runner.batches] == [1]  # only the real candidate's job was sent




RAY_DRIVER = """
import json, sys
sys.path.insert(0, sys.argv[2])
from engine_support.fake_judge import judge
from engine_support.runs import agents
from forgekernel.run import engine
from forgekernel.delivery.ray_runner import RayRunner

class Recording(RayRunner):
    batches = []
    def run_many(self, jobs):
        out = super().run_many(jobs)
        self.batches.append(self.placements)
        return out

runner = Recording(device="cpu", num_gpus=2, num_cpus=4,
                   init_kwargs={"_temp_dir": sys.argv[3], "_node_ip_address": "127.0.0.1"})
coder, architect = agents(sys.argv[4])
engine.run(sys.argv[1], coder, architect, judge, runner, limits={"iterations": 2, "batch": 2})
runner.shutdown()
print("RESULT " + json.dumps(runner.batches))
"""


@pytest.mark.slow
def test_batch_through_ray_one_gpu_each(tmp_path):
    """The engine's batch on the ray delivery: a local cluster with two fake GPUs in a private
    network namespace, as tests/test_ray.py starts one; the two jobs overlap on different GPUs.
    (It failed while a judging thread started the cluster: its GCS stopped answering; now
    judge_each connects from the engine's thread first.)"""
    import importlib.util
    import shutil
    import tempfile

    if importlib.util.find_spec("ray") is None:
        pytest.skip("ray is not installed (pip install 'forgekernel[ray]')")
    from test_ray import _namespace_prefix

    prefix = _namespace_prefix()
    if prefix is None:
        pytest.skip("cannot create a private network namespace here (unshare -n not permitted)")
    root = new_run(tmp_path)
    script = write_script(tmp_path / "s.json", [step("torch_slow.py"), step("torch_fast.py")])
    temp = tempfile.mkdtemp(prefix="fkray", dir="/tmp")  # short: Ray's socket paths have a limit
    try:
        driver = tmp_path / "driver.py"
        driver.write_text(RAY_DRIVER)
        cmd = [*prefix, "sh", "-c", 'ip link set lo up && exec "$0" "$@"', sys.executable, str(driver),
               str(root), str(TESTS), temp + "/r", str(script)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    pairs = [b for b in json.loads(lines[-1][len("RESULT "):]) if len(b) == 2]
    assert len(pairs) == 1
    a, b = pairs[0]
    assert a["started"] < b["ended"] and b["started"] < a["ended"]  # judged at the same time
    assert a["gpu_ids"] != b["gpu_ids"]  # one GPU each
    got = [(x.verdict.status.value, x.verdict.delivery, x.best) for x in attempts(root)]
    assert got == [("PASSED", "ray", False), ("PASSED", "ray", True)]
