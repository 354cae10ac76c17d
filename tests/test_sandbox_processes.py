"""The sandbox's process boundary: escaped grandchildren die, statuses come back, spawn cost.

On every mechanism present, with and without a PID namespace.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from forgekernel import sandbox as sb
from sandbox_support import MECHS, launch_code, make_spec, run


@pytest.fixture(params=MECHS)
def mech(request) -> sb.Mechanism:
    return request.param


ESCAPE_CODE = """
import os, sys, time
marker, started, then = sys.argv[1], sys.argv[2], sys.argv[3]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c",
                 f"open({started!r}, 'w').close(); import time; time.sleep(300)", marker])
    os._exit(0)
os.wait()
while not os.path.exists(started):
    time.sleep(0.01)
print("{}", flush=True)
if then == "hang":
    time.sleep(300)
"""


def _marked(marker: str) -> list[int]:
    """Host pids of live processes whose command line holds ``marker``."""
    out = []
    for name in os.listdir("/proc"):
        try:
            cmd = Path(f"/proc/{name}/cmdline").read_bytes()
            state = Path(f"/proc/{name}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker.encode() in cmd and state != b"Z" and name.isdigit():
            out.append(int(name))
    return out


def _gone_soon(marker: str, seconds: float = 3.0) -> bool:
    deadline = time.monotonic() + seconds
    while _marked(marker):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.mark.parametrize("pid_namespace", [True, False], ids=["pidns", "no-pidns"])
def test_escaped_grandchild_dies_when_the_command_ends(mech, tmp_path, pid_namespace):
    spec = make_spec(tmp_path, pid_namespace=pid_namespace)
    marker = f"fk-escape-{uuid.uuid4().hex}"
    started = Path(os.path.realpath(spec.scratch)) / "started"
    run(mech, spec, ESCAPE_CODE, marker, str(started), "exit")
    assert started.exists()  # the setsid() grandchild did run
    assert _gone_soon(marker), f"left running: {_marked(marker)}"


@pytest.mark.parametrize("pid_namespace", [True, False], ids=["pidns", "no-pidns"])
def test_kill_tree_ends_an_escaped_grandchild(mech, tmp_path, pid_namespace):
    spec = make_spec(tmp_path, pid_namespace=pid_namespace)
    marker = f"fk-escape-{uuid.uuid4().hex}"
    started = Path(os.path.realpath(spec.scratch)) / "started"
    launch = launch_code(mech, spec, ESCAPE_CODE, marker, str(started), "hang")
    proc = subprocess.Popen(**launch.popen_kwargs(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        assert proc.stdout.readline().strip() == b"{}", proc.stderr.read()
        assert _marked(marker), "the grandchild should be running"
        sb.kill_tree(proc)
        proc.wait(timeout=10)
        assert _gone_soon(marker), f"left running: {_marked(marker)}"
    finally:
        if proc.returncode is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def test_without_pid_namespace_the_callers_secrets_stay_out_of_reach(mech, tmp_path):
    code = ("import json, sys\ntry:\n    open(f'/proc/{sys.argv[1]}/environ').read(); r = 'read'\n"
            "except OSError as exc:\n    r = type(exc).__name__\nprint(json.dumps({'environ': r}))")
    seen = run(mech, make_spec(tmp_path, pid_namespace=False), code, str(os.getpid()))
    assert seen["environ"] == "PermissionError"
    seen = run(mech, make_spec(tmp_path), code, str(os.getpid()))
    assert seen["environ"] in ("FileNotFoundError", "PermissionError")  # another ns: not ours


def test_exit_codes_and_signals_come_back(mech, tmp_path):
    spec = make_spec(tmp_path)
    for code, expect in (("raise SystemExit(3)", (3, None)),
                         ("import os; os.kill(os.getpid(), 11)", (None, 11))):
        launch = launch_code(mech, spec, code)
        rc = subprocess.run(**launch.popen_kwargs(), capture_output=True, timeout=60).returncode
        assert launch.status(rc) == expect, (code, rc)


def _spawn_ms(argv: list[str], env: dict, n: int) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        subprocess.run(argv, env=env, check=True, capture_output=True, timeout=60)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def test_startup_overhead(mech, tmp_path, request):
    spec = make_spec(tmp_path)
    argv = [sys.executable, "-I", "-S", "-c", "pass"]
    launch = sb.command(mech, spec, argv)
    plain = _spawn_ms(argv, launch.env, 7)
    boxed = _spawn_ms(list(launch.argv), launch.env, 7)
    request.node.user_properties.append((f"{mech.name}_spawn_overhead_ms", round(boxed - plain, 1)))
    assert boxed - plain < 250, f"{mech.name}: {boxed - plain:.0f} ms per spawn"
