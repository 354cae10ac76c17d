"""The process boundary: every way a worker can end becomes data, never a crash or hang."""

from __future__ import annotations

import pytest

from forgekernel.delivery import Job, make_runner

ECHO = "forgekernel.delivery.echo_worker"


def _run(act: str, **kw):
    runner = make_runner("cpu")
    return runner.run(Job(module=ECHO, payload={"act": act, **kw}, timeout_s=3, output_cap_bytes=1 << 20))


def test_echo_round_trip_under_interpreter():
    res = _run("echo", value=7)
    assert res.ok
    assert res.result["echo"]["value"] == 7
    assert res.result["delivery"] == "cpu"
    assert res.result["interpret"] == "1"


@pytest.mark.parametrize(
    ("act", "expect"),
    [("sleep", "timed out"), ("exit", "exited with code 3"), ("segv", "SIGSEGV"),
     ("flood", "flooded"), ("forge", "tampered")],
)
def test_failures_become_descriptions(act, expect):
    res = _run(act, seconds=30)
    assert not res.ok
    assert expect in res.describe_failure()
    assert res.wall_s < 10


def test_unknown_delivery():
    with pytest.raises(ValueError, match="unknown delivery"):
        make_runner("carrier-pigeon")


def test_worker_dies_with_its_parent(tmp_path):
    """A SIGKILLed caller leaves no worker running (PR_SET_PDEATHSIG)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    pidfile = tmp_path / "pids"
    code = (
        "from forgekernel.delivery import Job, make_runner\n"
        "from forgekernel.delivery.local import CpuRunner\n"
        "class R(CpuRunner):\n"
        f"    def on_spawn(self, pid): open({str(pidfile)!r}, 'w').write(str(pid))\n"
        "R().run(Job(module='forgekernel.delivery.echo_worker', payload={'act': 'sleep', 'seconds': 60}, timeout_s=90))\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.time() + 30
    while not pidfile.exists() or not pidfile.read_text():
        assert time.time() < deadline
        time.sleep(0.1)
    worker = int(pidfile.read_text())
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            os.kill(worker, 0)
        except ProcessLookupError:
            return
        # a zombie is dead enough: check its state
        stat = __import__("pathlib").Path(f"/proc/{worker}/stat")
        if stat.exists() and stat.read_text().split()[2] == "Z":
            return
        time.sleep(0.1)
    raise AssertionError("worker outlived its killed parent")
