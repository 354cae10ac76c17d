"""The ssh delivery's remote launcher on its own: its frame, and what a hang-up does."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from forgekernel.delivery.base import Job, JobResult
from forgekernel.delivery.channel import verify_frames
from forgekernel.delivery.remote_exec import DELIMITER, EXIT_ABORTED

ECHO = "forgekernel.delivery.echo_worker"
GPU = 97  # a GPU index no real job uses: its lock file is ours alone


def _launch(workdir: Path, payload: dict, device: str = "cpu", key: str = "k" * 64):
    job = Job(module=ECHO, payload=payload, timeout_s=30, output_cap_bytes=1 << 20)
    request = {"key": key, "job": job.model_dump(), "inputs_len": 0, "device": device,
               "gpu": GPU, "workdir": str(workdir)}
    proc = subprocess.Popen([sys.executable, "-m", "forgekernel.delivery.remote_exec"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdin.write(json.dumps(request).encode() + b"\n")
    proc.stdin.flush()
    return proc


def _workers_of(parent: int) -> list[int]:
    """Echo workers whose parent is ``parent``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmd = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == parent and ECHO.encode() in cmd:
            pids.append(int(entry.name))
    return pids


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_answer_is_one_frame_signed_with_the_callers_key(tmp_path):
    proc = _launch(tmp_path, {"act": "echo", "value": 4})
    out = proc.stdout.read()  # stdin stays open: closing it would be a hang-up
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 0, err.decode()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        stream.close()
    before, frame = out.split(DELIMITER)
    assert before == b""
    body, problem = verify_frames(frame, "k" * 64)
    assert problem == ""
    res = JobResult(**body["job"])
    assert res.ok and res.result["echo"]["value"] == 4 and res.result["delivery"] == "cpu"
    assert verify_frames(frame, "x" * 64)[1] == "frame signature does not match"
    assert list((tmp_path / "jobs").iterdir()) == []


def test_hangup_kills_the_running_worker(tmp_path):
    proc = _launch(tmp_path, {"act": "sleep", "seconds": 60})
    deadline = time.monotonic() + 30
    workers: list[int] = []
    while not workers and time.monotonic() < deadline:
        workers = _workers_of(proc.pid)
        time.sleep(0.05)
    assert workers, "the launcher never started its worker"
    proc.stdin.close()
    assert proc.wait(timeout=20) == EXIT_ABORTED
    assert proc.stdout.read() == b""
    proc.stdout.close()
    proc.stderr.close()
    assert list((tmp_path / "jobs").iterdir()) == []
    deadline = time.monotonic() + 5
    while any(_alive(p) for p in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in workers), "a worker outlived the hang-up"


def test_hangup_while_waiting_for_the_gpu_lock_ends_at_once(tmp_path):
    lock = Path(tempfile.gettempdir()) / f"forgekernel-gpu{GPU}.lock"
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        proc = _launch(tmp_path, {"act": "echo"}, device="gpu")
        time.sleep(1.5)
        assert proc.poll() is None  # waiting for the lock
        proc.stdin.close()
        assert proc.wait(timeout=20) == EXIT_ABORTED
        proc.stdout.close()
        proc.stderr.close()
    assert list((tmp_path / "jobs").iterdir()) == []
    os.unlink(lock)


def test_on_a_gpu_the_worker_is_told_ssh_and_its_gpu(tmp_path):
    proc = _launch(tmp_path, {"act": "echo"}, device="gpu")
    out = proc.stdout.read()
    assert proc.wait(timeout=60) == 0, proc.stderr.read().decode()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        stream.close()
    res = JobResult(**verify_frames(out.split(DELIMITER)[1], "k" * 64)[0]["job"])
    assert res.result["delivery"] == "ssh" and res.result["interpret"] == "0"
