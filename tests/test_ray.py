"""The ray delivery: a local Ray cluster with two fake GPUs, inside a private network namespace.

The cluster, its driver and every Ray process live in new network and PID namespaces
(`unshare`), with only loopback up: Ray binds nothing outside, and when the driver exits
the kernel ends every process of the namespace, so nothing outlives the test.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

ECHO = "forgekernel.delivery.echo_worker"
REPO = Path(__file__).resolve().parents[1]

DRIVER = textwrap.dedent("""
    import json, sys
    from forgekernel.delivery import Job
    from forgekernel.delivery.ray_runner import RayRunner

    runner = RayRunner(device="cpu", num_gpus=2, num_cpus=4,
                       init_kwargs={"_temp_dir": sys.argv[1], "_node_ip_address": "127.0.0.1"})
    jobs = [Job(module=%(echo)r, payload={"act": "sleep", "seconds": 1.5, "value": i}, timeout_s=60)
            for i in range(4)]
    jobs.append(Job(module=%(echo)r, payload={"act": "exit", "code": 3}, timeout_s=60))
    results = runner.run_many(jobs)
    out = {"results": [r.model_dump() for r in results], "placements": runner.placements,
           "timing": runner.timing_label}

    # The real judge, two candidates at once (one thread each; one fake GPU each).
    from concurrent.futures import ThreadPoolExecutor
    from forgekernel.judge import JudgeOptions, judge
    from forgekernel.task import load_task

    task = load_task(%(repo)r + "/tasks/rmsnorm")
    kernels = [%(repo)r + "/tests/fixtures/kernels/" + k
               for k in ("correct/rmsnorm_rowwise", "wrong/rmsnorm_wrong_values")]
    with ThreadPoolExecutor(2) as pool:
        verdicts = list(pool.map(lambda k: judge(task, k, runner, JudgeOptions(smoke_only=True)), kernels))
    out["verdicts"] = [[v.status.value, v.delivery] for v in verdicts]
    runner.shutdown()
    print("RESULT " + json.dumps(out))
""") % {"echo": ECHO, "repo": str(REPO)}


def _namespace_prefix() -> list[str] | None:
    """`unshare` arguments for private net+pid namespaces, or None when not allowed here."""
    unshare = shutil.which("unshare")
    if not unshare or not shutil.which("ip"):
        return None
    base = [unshare, "-n", "-p", "-f", "--kill-child", "--mount-proc"]
    for prefix in (base, [unshare, "-r", *base[1:]]):
        probe = subprocess.run([*prefix, "ip", "link", "set", "lo", "up"], capture_output=True, timeout=30)
        if probe.returncode == 0:
            return prefix
    return None


@pytest.fixture(scope="module")
def batch():
    if importlib.util.find_spec("ray") is None:
        pytest.skip("ray is not installed (pip install 'forgekernel[ray]')")
    prefix = _namespace_prefix()
    if prefix is None:
        pytest.skip("cannot create a private network namespace here (unshare -n not permitted)")
    temp = tempfile.mkdtemp(prefix="fkray", dir="/tmp")  # short: Ray's socket paths have a limit
    script = os.path.join(temp, "driver.py")
    with open(script, "w") as fh:
        fh.write(DRIVER)
    cmd = [*prefix, "sh", "-c", 'ip link set lo up && exec "$0" "$1" "$2"', sys.executable,
           script, os.path.join(temp, "r")]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT "):])


def _max_concurrency(intervals: list[tuple[float, float]]) -> int:
    events = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
    level = peak = 0
    for _, step in events:
        level += step
        peak = max(peak, level)
    return peak


def test_batch_runs_concurrently_one_job_per_gpu(batch):
    results, places = batch["results"], batch["placements"]
    assert [r["result"]["echo"]["value"] for r in results[:4]] == [0, 1, 2, 3]
    assert all(r["result"]["delivery"] == "cpu" for r in results[:4])  # interpreter mode
    assert results[4]["result"] is None and results[4]["exit_code"] == 3
    spans = [(p["started"], p["ended"]) for p in places]
    assert _max_concurrency(spans) == 2
    for i, (s1, e1) in enumerate(spans):
        for j, (s2, e2) in enumerate(spans[:i]):
            if s1 < e2 and s2 < e1:
                assert places[i]["gpu_ids"] != places[j]["gpu_ids"], "two jobs shared a GPU"
    assert all(len(p["gpu_ids"]) == 1 for p in places)
    assert batch["timing"] == "cpu-interpret"


def test_missing_ray_is_one_line_error():
    code = textwrap.dedent("""
        import sys
        sys.modules["ray"] = None  # as if Ray were not installed
        from forgekernel.delivery import Job
        from forgekernel.delivery.ray_runner import RayRunner
        from forgekernel.errors import ForgeError
        try:
            RayRunner().run(Job(module="x"))
        except ForgeError as exc:
            print("ERR", exc)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "ERR the ray delivery needs Ray: pip install 'forgekernel[ray]'"


def test_doctor_rows_and_make_runner_for_ray():
    if importlib.util.find_spec("ray") is None:
        pytest.skip("ray is not installed (pip install 'forgekernel[ray]')")
    from forgekernel.config import Settings
    from forgekernel.delivery import make_runner
    from forgekernel.delivery.base import cuda_device_name
    from forgekernel.delivery.checks import check_delivery
    from forgekernel.delivery.ray_runner import RayRunner

    rows = {name: (ok, detail) for name, ok, detail in check_delivery(Settings(delivery="ray"))}
    assert rows["ray"][0] is True
    assert rows["ray cluster"][0] is bool(cuda_device_name())
    assert "starts a local Ray cluster" in rows["ray cluster"][1]
    runner = make_runner("ray", settings=Settings(delivery="ray", ray_address="127.0.0.1:6379",
                                                  remote_device="cpu"))
    assert isinstance(runner, RayRunner) and runner.address == "127.0.0.1:6379"
    assert runner.timing_label == "cpu-interpret"


def test_real_judge_verdicts_through_ray(batch):
    assert batch["verdicts"] == [["PASSED", "ray"], ["WRONG_VALUES", "ray"]]
