"""The GPU gate: a gated job's worker asks for the device after its imports, shared for
untimed work and exclusive for timing; its timeout does not run while it waits.

The echo worker stands in for the verifier (it touches no GPU), so this runs on any machine;
the lock files live in the test's own directory.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from forgekernel.delivery import Job
from forgekernel.delivery.gpu_gate import DeviceLock, Stopped
from forgekernel.delivery.local import CpuRunner, LocalGpuRunner

ECHO = "forgekernel.delivery.echo_worker"


def _held_in_thread(lock: DeviceLock, mode: str, seconds: float) -> threading.Thread:
    taken = threading.Event()

    def hold() -> None:
        with lock.held(mode):
            taken.set()
            time.sleep(seconds)

    t = threading.Thread(target=hold, daemon=True)
    t.start()
    assert taken.wait(5)
    return t


def _blocked(lock: DeviceLock, mode: str, within: float = 0.3) -> bool:
    """True when ``mode`` cannot be had within ``within`` seconds (nothing left held)."""
    stop = threading.Event()
    threading.Timer(within, stop.set).start()
    try:
        lock.acquire(mode, stop)
    except Stopped:
        return True
    lock.release()
    return False


def test_shared_holders_coexist_and_exclude_an_exclusive_one(tmp_path):
    path = tmp_path / "gpu.lock"
    a, b = DeviceLock(path), DeviceLock(path)
    a.acquire("S")
    assert not _blocked(b, "S")
    assert _blocked(b, "X")
    a.release()
    assert not _blocked(b, "X")


def test_an_exclusive_holder_excludes_everyone_and_converts_down(tmp_path):
    path = tmp_path / "gpu.lock"
    a = DeviceLock(path)
    a.acquire("X")
    assert _blocked(DeviceLock(path), "S")
    a.acquire("S")  # after timing, back to shared work
    assert a.mode == "S"
    assert not _blocked(DeviceLock(path), "S")
    a.release()


def test_a_waiting_exclusive_request_holds_back_new_shared_ones(tmp_path):
    path = tmp_path / "gpu.lock"
    holder = _held_in_thread(DeviceLock(path), "S", 1.0)
    waiter = DeviceLock(path)
    got = threading.Event()

    def want_x() -> None:
        waiter.acquire("X")
        got.set()

    threading.Thread(target=want_x, daemon=True).start()
    time.sleep(0.2)
    assert _blocked(DeviceLock(path), "S", within=0.4)  # it queues behind the exclusive one
    assert got.wait(5)
    holder.join(5)
    waiter.release()


def test_shared_holders_that_all_turn_exclusive_take_turns(tmp_path):
    """Every judgement checks shared and then times exclusive: the holders converting one
    after another must not wait on each other (the one in line holds nothing)."""
    path = tmp_path / "gpu.lock"
    locks = [DeviceLock(path) for _ in range(3)]
    for lock in locks:
        lock.acquire("S")
    done = []

    def time_it(lock: DeviceLock) -> None:
        lock.acquire("X")
        time.sleep(0.1)
        done.append(lock)
        lock.release()

    threads = [threading.Thread(target=time_it, args=(lock,), daemon=True) for lock in locks]
    for t in threads:
        t.start()
        time.sleep(0.05)
    for t in threads:
        t.join(10)
    assert len(done) == 3


def _gpu_runner(tmp_path, **kw) -> LocalGpuRunner:
    return LocalGpuRunner(lock_dir=tmp_path, **kw)


def test_a_gated_job_waits_for_the_gpu_outside_its_timeout(tmp_path):
    runner = _gpu_runner(tmp_path)
    busy = _held_in_thread(DeviceLock(runner.lock_path), "X", 6.0)
    res = runner.run(Job(module=ECHO, payload={"act": "gate", "modes": ["X"]}, timeout_s=4.0, gated=True))
    busy.join(5)  # held past the timeout: the job still ends well, its wait not counted
    assert res.ok, res.describe_failure()
    assert res.result["waits"][0] >= 2.5
    assert res.gpu_wait_s >= 2.5 and res.gpu_held_s > 0 and res.gpu_modes == "X"


def test_a_gated_job_is_still_killed_for_its_own_time(tmp_path):
    runner = _gpu_runner(tmp_path)
    res = runner.run(Job(module=ECHO, payload={"act": "gate", "modes": ["X"], "hold_s": 30},
                         timeout_s=2.0, gated=True))
    assert res.timed_out
    assert "timed out after" in res.describe_failure()
    assert not _blocked(DeviceLock(runner.lock_path), "X")  # the lock went with the job


def test_shared_requests_share_only_under_the_budget(tmp_path):
    runner = _gpu_runner(tmp_path, share_gb=1.0)
    busy = _held_in_thread(DeviceLock(runner.lock_path), "S", 1.5)
    small = runner.run(Job(module=ECHO, payload={"act": "gate", "modes": ["S"], "footprint": 2**20},
                           timeout_s=30, gated=True))
    assert small.ok and small.result["waits"][0] < 1.0  # shared beside the other holder
    assert small.result["shared"]  # the worker knows others may run beside it
    assert small.result["may_share"]  # and, before it asks, that its footprint is read
    big = runner.run(Job(module=ECHO, payload={"act": "gate", "modes": ["S"], "footprint": 2**31},
                         timeout_s=30, gated=True))
    busy.join(5)
    assert big.ok and big.result["waits"][0] >= 0.5  # over the budget: exclusive, so it waited
    assert not big.result["shared"]


def test_shared_requests_are_exclusive_when_the_runner_does_not_share(tmp_path):
    runner = _gpu_runner(tmp_path)
    busy = _held_in_thread(DeviceLock(runner.lock_path), "S", 1.0)
    res = runner.run(Job(module=ECHO, payload={"act": "gate", "modes": ["S"], "footprint": 1},
                         timeout_s=30, gated=True))
    busy.join(5)
    assert res.ok and res.result["waits"][0] >= 0.5
    assert not res.result["may_share"]  # a footprint would go unread: the verifier sizes none


def test_a_job_that_is_not_gated_holds_the_gpu_whole(tmp_path):
    runner = _gpu_runner(tmp_path, share_gb=1.0)
    busy = _held_in_thread(DeviceLock(runner.lock_path), "S", 1.0)
    start = time.monotonic()
    res = runner.run(Job(module=ECHO, payload={"act": "gate", "modes": ["S", "X"]}, timeout_s=30))
    busy.join(5)
    assert res.ok and res.result["waits"] == [0.0, 0.0]  # not gated: nothing to ask
    assert time.monotonic() - start >= 0.8 and res.gpu_wait_s == 0.0


@pytest.mark.parametrize("runner", [CpuRunner()], ids=["cpu"])
def test_without_a_device_lock_requests_are_granted_at_once(runner):
    res = runner.run(Job(module=ECHO, payload={"act": "gate", "modes": ["S", "X", "S"]}, timeout_s=60,
                         gated=True))
    assert res.ok and len(res.result["waits"]) == 3 and max(res.result["waits"]) < 1.0


class _LockedCpu(CpuRunner):
    """The CPU delivery with a device lock, so a verifier's requests can be watched here."""

    def __init__(self, path) -> None:
        super().__init__()
        self.path, self.results = path, []

    def gate_lock(self) -> DeviceLock:
        return DeviceLock(self.path)

    def run(self, job: Job):
        res = super().run(job)
        self.results.append(res)
        return res


def test_the_verifier_checks_shared_and_times_exclusive_after_waiting(tmp_path):
    from forgekernel.judge import JudgeOptions, judge
    from forgekernel.task import load_task

    repo = Path(__file__).resolve().parents[1]
    runner = _LockedCpu(tmp_path / "gpu.lock")
    busy = _held_in_thread(DeviceLock(runner.path), "X", 10.0)  # past the imports
    verdict = judge(load_task(repo / "tasks" / "rmsnorm"),
                    repo / "tests" / "fixtures" / "kernels" / "correct" / "rmsnorm_rowwise", runner,
                    JudgeOptions(smoke_only=True, trials=1, timeout_s=300))
    busy.join(5)
    assert verdict.status.value == "PASSED", verdict.reason
    assert runner.results[-1].gpu_modes == "XX"  # the CPU runner does not share: both exclusive
    assert verdict.profile["phases"]["gpu_wait_s"] >= 1.0
    assert runner.results[-1].gpu_wait_s >= 1.0


def test_six_jobs_that_check_shared_and_time_exclusive_all_finish(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    runner = _gpu_runner(tmp_path, share_gb=1.0)
    job = Job(module=ECHO, payload={"act": "gate", "modes": ["S", "X"], "footprint": 1, "hold_s": 0.3},
              timeout_s=20, gated=True)
    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(lambda _: runner.run(job), range(6)))
    assert all(r.ok for r in results), [r.describe_failure() for r in results if not r.ok]
    assert {r.gpu_modes for r in results} == {"SX"}
    assert max(r.gpu_wait_s for r in results) >= 0.3 * 3  # the exclusive parts took turns


def test_the_lock_log_has_a_line_per_job(tmp_path):
    import json

    log = tmp_path / "lock.jsonl"
    runner = LocalGpuRunner(lock_dir=tmp_path, lock_log=log, share_gb=1.0)
    runner.run(Job(module=ECHO, payload={"act": "gate", "modes": ["S", "X"], "footprint": 1, "hold_s": 0.3},
                   timeout_s=60, gated=True))
    runner.run(Job(module=ECHO, payload={"act": "echo"}, timeout_s=60))
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert [x["modes"] for x in lines] == ["SX", "whole"]
    assert all(x["module"] == ECHO and x["end"] >= x["start"] and x["held_s"] > 0 for x in lines)
    gated = lines[0]  # shared 0.3 s, then exclusive 0.3 s to its end
    assert 0.25 <= gated["exclusive_s"] <= gated["held_s"] - 0.25
    assert lines[1]["exclusive_s"] == lines[1]["held_s"]  # a whole job holds it alone throughout


class _Pool:
    def __init__(self, nbytes):
        self.nbytes = nbytes


class _Proc:
    def __init__(self, kernel, pools):
        self.kernel, self.owned, self.trimmed, self.closed = kernel, [_Pool(n) for n in pools], 0, False

    def trim(self):
        self.trimmed += 1


class _Cuda:
    def synchronize(self):
        pass

    def empty_cache(self):
        pass


class _Session:
    """What the verifier's trim reads of a judgement on a GPU."""

    cuda = True

    def __init__(self, pools, shared):
        import types

        self.torch = types.SimpleNamespace(cuda=_Cuda())
        self.cand, self.perf, self.shared_gpu, self.spawned = _Proc(Path("k.py"), pools), None, shared, []

    def close(self):
        self.cand.closed = True

    def spawn(self, kernel, perf):
        self.spawned.append((kernel, perf))
        self.cand = _Proc(kernel, [])


@pytest.mark.parametrize("pools,shared,fresh", [
    ([2 << 30], True, True),  # shared and a 2 GiB staging pool: the executor goes, the pool with it
    ([2 << 30], False, False),  # the GPU alone: nobody else needs the memory
    ([1 << 20, 1 << 20], True, False),  # small pools: kept, only the caches given back
])
def test_before_timing_alone_a_shared_judgement_lets_large_pools_go(pools, shared, fresh):
    from forgekernel.judge import worker

    session = _Session(pools, shared)
    old = session.cand
    assert worker._trim(session) is fresh
    assert old.closed is fresh and bool(session.spawned) is fresh
    if fresh:
        assert session.spawned == [(Path("k.py"), None)] and session.cand is not old
    else:
        assert old.trimmed == 1


def test_only_a_job_whose_runner_may_share_the_gpu_sizes_its_device_footprint():
    """The footprint (a meta run of the reference; on torch 2.11 it imports torch._dynamo,
    seconds of a verdict) is read only by a runner that may share the GPU between jobs."""
    from types import SimpleNamespace

    from forgekernel.delivery.channel import Envelope
    from forgekernel.judge.worker import _gate

    sized: list[list] = []

    class Problem:
        def footprint(self, workloads: list) -> int:
            sized.append(workloads)
            return 10

    session = SimpleNamespace(problem=Problem(), slots=[], deadline=None, phases={})
    alone = Envelope(payload={}, delivery="local", timing_label="device")
    _gate(alone, session)("S")  # not gated: no wait, nothing sized
    exclusive = Envelope(payload={}, delivery="local", timing_label="device", _gate=(0, 0))
    assert not exclusive.may_share
    _gate(exclusive, session)  # gated by a runner that never shares: nothing sized
    assert sized == []
    sharing = Envelope(payload={}, delivery="local", timing_label="device", _gate=(0, 0), _share=True)
    assert sharing.may_share
    _gate(sharing, session)
    assert sized == [[]]
    _gate(Envelope(payload={}, delivery="cpu", timing_label="cpu-interpret", _gate=(0, 0), _share=True), session)
    assert sized == [[]]  # the CPU interpreter has no device memory to plan
