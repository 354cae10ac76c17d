"""The ssh delivery against a real OpenSSH server on 127.0.0.1 (keys made per test session)."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest

from forgekernel.delivery import Job
from forgekernel.delivery.shipping import DeliveryError, pack_inputs, unpack_inputs
from forgekernel.delivery.ssh import SshRunner
from sshd_helper import ALIAS, serve_sshd

ECHO = "forgekernel.delivery.echo_worker"
_sshd = pytest.fixture(scope="module", name="sshd")(serve_sshd)


@pytest.fixture(scope="module")
def runner(sshd, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("remote") / "work"
    return SshRunner(ALIAS, str(workdir), python=sys.executable, ssh_config=sshd.ssh_config,
                     device="cpu")


def _job(act: str, timeout_s: float = 20, **kw) -> Job:
    return Job(module=ECHO, payload={"act": act, **kw}, timeout_s=timeout_s, output_cap_bytes=1 << 20)


def test_echo_round_trip_ships_the_judge_and_cleans_up(runner):
    res = runner.run(_job("echo", value=11))
    assert res.ok, res.describe_failure() + res.stderr_tail
    assert res.result["echo"]["value"] == 11
    assert res.result["delivery"] == "cpu"  # the worker runs under the interpreter, as on cpu
    assert res.result["interpret"] == "1"
    work = Path(runner.remote["workdir"])
    bundle = work / "judge" / runner.remote["bundle"]
    assert (bundle / ".complete").is_file()
    assert (bundle / "forgekernel" / "delivery" / "remote_exec.py").is_file()
    assert list((work / "jobs").iterdir()) == []
    assert runner.timing_label == "cpu-interpret"


def test_payload_paths_are_shipped_and_rewritten(runner, tmp_path):
    cand = tmp_path / "cand"
    cand.mkdir()
    (cand / "kernel.py").write_text("def run(x):\n    return x\n")
    res = runner.run(_job("echo", candidate=str(cand), note="not/a/path"))
    assert res.ok, res.describe_failure()
    remote_path = res.result["echo"]["candidate"]
    assert remote_path.startswith(runner.remote["workdir"] + "/jobs/job-")
    assert remote_path.endswith("/cand")
    assert res.result["echo"]["note"] == "not/a/path"


def test_pack_and_unpack_inputs_round_trip(tmp_path):
    src = tmp_path / "task"
    (src / "__pycache__").mkdir(parents=True)
    (src / "reference.py").write_text("x = 1\n")
    (src / "__pycache__" / "reference.pyc").write_bytes(b"junk")
    payload, data = pack_inputs({"task": str(src), "rows": [str(src / "reference.py"), 3]})
    dest = tmp_path / "far"
    dest.mkdir()
    out = unpack_inputs(payload, data, dest)
    assert Path(out["task"], "reference.py").read_text() == "x = 1\n"
    assert not Path(out["task"], "__pycache__").exists()
    assert Path(out["rows"][0]).read_text() == "x = 1\n" and out["rows"][1] == 3
    assert Path(out["rows"][0]).parent == Path(out["task"])  # inside the dir's copy, not apart


@pytest.mark.parametrize(
    ("act", "expect"),
    [("sleep", "timed out"), ("exit", "exited with code 3"), ("flood", "flooded"),
     ("forge", "tampered")],
)
def test_failures_come_back_as_data(runner, act, expect):
    res = runner.run(_job(act, timeout_s=2, seconds=30))
    assert not res.ok
    assert expect in res.describe_failure()
    assert res.wall_s < 10


def _kill_connection_when_worker_runs(sshd, seen: list[int], deadline_s: float = 30) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        procs = sshd.descendants()
        workers = [pid for pid, cmd in procs if ECHO in cmd]
        if workers:
            seen.extend(workers)
            for pid, cmd in procs:
                if cmd.startswith("sshd"):
                    os.kill(pid, 9)
            return
        time.sleep(0.05)


def test_lost_connection_mid_job_is_retried(sshd, runner):
    runner.prepare()
    seen: list[int] = []
    killer = threading.Thread(target=_kill_connection_when_worker_runs, args=(sshd, seen))
    killer.start()
    lost_before = len(runner.lost)
    res = runner.run(_job("sleep", seconds=1.5, value=5))
    killer.join(timeout=35)
    assert seen, "the test never saw the remote worker"
    assert res.ok, res.describe_failure()
    assert res.result["echo"]["value"] == 5
    assert len(runner.lost) == lost_before + 1
    assert "ssh exit 255" in runner.lost[-1]
    deadline = time.monotonic() + 10
    while any(Path(f"/proc/{pid}").exists() for pid in seen) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(Path(f"/proc/{pid}").exists() for pid in seen), "orphaned remote worker"


def test_unreachable_after_retries_is_a_delivery_error(sshd, tmp_path):
    blocked = SshRunner(ALIAS, str(tmp_path / "w"), python=sys.executable,
                        ssh_config=sshd.ssh_config, device="cpu", retries=1)
    blocked.prepare()
    # From now on every connection is refused: the job must fail loudly, not as a verdict.
    blocked.ssh_config = str(sshd.write_client_config("dead_config", sshd.root / "known_hosts"))
    Path(blocked.ssh_config).write_text(Path(blocked.ssh_config).read_text()
                                        .replace(f"Port {sshd.port}", "Port 1"))
    with pytest.raises(DeliveryError, match="lost the ssh connection .* 2 times"):
        blocked.run(_job("echo"))


def test_changed_host_key_is_refused(sshd, tmp_path):
    import subprocess

    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "other")],
                   check=True, timeout=30)
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{sshd.port} {(tmp_path / 'other.pub').read_text()}")
    cfg = sshd.write_client_config(f"bad_{tmp_path.name}", known)
    bad = SshRunner(ALIAS, str(tmp_path / "w"), python=sys.executable, ssh_config=cfg, device="cpu")
    with pytest.raises(DeliveryError, match="Host key verification failed"):
        bad.prepare()


def test_remote_without_gpu_or_torch_says_what_is_missing(sshd, tmp_path):
    gpu = SshRunner(ALIAS, str(tmp_path / "w"), python=sys.executable,
                    ssh_config=sshd.ssh_config, device="gpu")
    with pytest.raises(DeliveryError, match="no CUDA GPU .*FK_REMOTE_DEVICE=cpu"):
        gpu.prepare()
    bare = SshRunner(ALIAS, str(tmp_path / "w"), python="/usr/bin/python3",
                     ssh_config=sshd.ssh_config, device="cpu")
    if not Path("/usr/bin/python3").exists():
        pytest.skip("no system python3 without torch to probe")
    with pytest.raises(DeliveryError, match="missing pydantic .*torch"):
        bare.prepare()
    nothing = SshRunner(ALIAS, str(tmp_path / "w"), python="no-such-python3",
                        ssh_config=sshd.ssh_config, device="cpu")
    with pytest.raises(DeliveryError, match="not found on"):
        nothing.prepare()


def _settings(sshd, workdir, **kw):
    from forgekernel.config import Settings

    base = {"delivery": "ssh", "remote_host": ALIAS, "remote_workdir": str(workdir),
            "remote_python": sys.executable, "ssh_config": str(sshd.ssh_config), "remote_device": "cpu"}
    return Settings(**{**base, **kw})


def test_doctor_rows_for_ssh(sshd, tmp_path):
    from forgekernel.delivery.checks import check_delivery

    rows = {name: (ok, detail) for name, ok, detail in check_delivery(_settings(sshd, tmp_path / "w"))}
    assert all(ok for ok, _ in rows.values()), rows
    assert "cpu-interpret" in rows["ssh round trip"][1]
    rows = {name: (ok, detail) for name, ok, detail in
            check_delivery(_settings(sshd, tmp_path / "w", remote_device="gpu"))}
    assert rows["remote GPU"][0] is False and "FK_REMOTE_DEVICE=cpu" in rows["remote GPU"][1]
    assert "ssh round trip" not in rows
    bad = check_delivery(_settings(sshd, tmp_path / "w", ssh_config=str(tmp_path / "missing")))
    assert bad[0][0] == "ssh reachable" and bad[0][1] is False


def test_make_runner_builds_ssh_from_settings(sshd, tmp_path):
    from forgekernel.config import Settings
    from forgekernel.delivery import make_runner

    runner = make_runner("ssh", settings=_settings(sshd, tmp_path / "w", gpu=1))
    assert isinstance(runner, SshRunner) and runner.gpu == 1 and runner.device == "cpu"
    with pytest.raises(DeliveryError, match="needs REMOTE_HOST"):
        make_runner("ssh", settings=Settings(delivery="ssh"))
    with pytest.raises(DeliveryError, match="FK_REMOTE_DEVICE must be gpu or cpu"):
        make_runner("ssh", settings=_settings(sshd, tmp_path, remote_device="tpu"))


def test_local_env_example_documents_every_setting(repo):
    from forgekernel.config import ENV_KEYS, SECRET_KEYS, read_env_file

    path = repo / "local.env.example"
    text = path.read_text()
    assert read_env_file(path) == {"FK_DELIVERY": "auto"}  # everything else is commented out
    for key in (*ENV_KEYS, *SECRET_KEYS):
        assert f"# {key}=" in text or f"\n{key}=" in text, f"{key} is not documented"


@pytest.mark.parametrize(("fixture", "status", "reason"), [
    ("correct/rmsnorm_rowwise", "PASSED", ""),
    ("wrong/rmsnorm_wrong_values", "WRONG_VALUES", "exceeds the tolerance"),
    ("cheating/rmsnorm_forge_channel", "REJECTED", "channel"),
])
def test_judge_over_ssh_gives_the_local_verdict(runner, repo, fixture, status, reason):
    from forgekernel.judge import JudgeOptions, judge
    from forgekernel.task import load_task

    # smoke_only: the judge restricts itself to smoke workloads only when runner.name == "cpu"
    # (not yet for an interpreter-mode ssh runner), so the test asks for it.
    verdict = judge(load_task(repo / "tasks" / "rmsnorm"), repo / "tests" / "fixtures" / "kernels" / fixture,
                    runner, JudgeOptions(smoke_only=True))
    assert verdict.status.value == status, verdict.reason
    assert reason in verdict.reason
    assert verdict.delivery == "ssh"
    if status == "PASSED":
        assert all(w.timing_label == "cpu-interpret" for w in verdict.workloads if w.median_ms)
