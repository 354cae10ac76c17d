"""`forge run` with FK_DELIVERY=ssh against a loopback sshd completes like a local run.

The remote host is this machine through a private sshd; its Python is this venv's, its
work dir a temp dir, and FK_REMOTE_DEVICE=cpu runs the judge under the Triton interpreter
there. The task is rmsnorm with its smoke workloads only (interpreter-sized). The same
run with the local cpu delivery is the yardstick.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import tomli_w

from sshd_helper import ALIAS, REPO, serve_sshd

pytestmark = pytest.mark.slow
_sshd = pytest.fixture(scope="module", name="sshd")(serve_sshd)


def _smoke_task(repo: Path, dest: Path) -> Path:
    shutil.copytree(repo / "tasks" / "rmsnorm", dest)
    data = tomllib.loads((dest / "task.toml").read_text())
    data["workload"] = [w for w in data["workload"] if w.get("smoke")]
    (dest / "task.toml").write_text(tomli_w.dumps(data))
    return dest


def _forge(cwd: Path, env_extra: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FK_") and k not in
           ("REMOTE_HOST", "REMOTE_WORKDIR", "RAY_ADDRESS", "ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    env.update(env_extra)
    return subprocess.run([sys.executable, "-m", "forgekernel.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=480)


def _judged(run: Path) -> list[dict]:
    events = [json.loads(line) for line in (run / "ledger.jsonl").read_text().splitlines()]
    return [e for e in events if e.get("verdict")]  # the attempt, then the confirmation


@pytest.fixture(scope="module")
def runs(sshd, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ssh_run")
    task = _smoke_task(REPO, tmp / "rmsnorm")
    ssh_env = {"FK_DELIVERY": "ssh", "REMOTE_HOST": ALIAS, "REMOTE_WORKDIR": str(tmp / "remote"),
               "FK_SSH_CONFIG": str(sshd.ssh_config), "FK_REMOTE_PYTHON": sys.executable,
               "FK_REMOTE_DEVICE": "cpu"}
    common = ("run", str(task), "--max-iterations", "1", "--agent", "builtin")
    ssh = _forge(tmp, ssh_env, *common, "--out", str(tmp / "ssh"))
    local = _forge(tmp, {}, *common, "--out", str(tmp / "cpu"), "--delivery", "cpu")
    doctor = _forge(tmp, ssh_env, "doctor", "--json")
    return tmp, ssh, local, doctor


def test_forge_run_over_ssh_completes_like_a_local_run(runs):
    tmp, ssh, local, _ = runs
    for proc in (ssh, local):
        out = proc.stdout + proc.stderr
        assert proc.returncode in (0, 2), out
        assert "Traceback" not in out
    assert ssh.returncode == local.returncode
    assert "delivery ssh" in ssh.stdout and "confirmed: PASSED" in ssh.stdout, ssh.stdout
    remote, here = _judged(tmp / "ssh"), _judged(tmp / "cpu")
    assert [e.get("kind") for e in remote] == [e.get("kind") for e in here] == [None, "confirm"]
    assert [e["verdict"]["status"] for e in remote + here] == ["PASSED"] * 4
    assert [e["verdict"]["candidate"] for e in remote] == [e["verdict"]["candidate"] for e in here]
    assert {e["verdict"]["delivery"] for e in remote} == {"ssh"}
    labels = {w["timing_label"] for e in remote for w in e["verdict"]["workloads"] if w.get("median_ms")}
    assert labels == {"cpu-interpret"}
    assert (tmp / "ssh" / "best" / "kernel.py").read_text() == (tmp / "cpu" / "best" / "kernel.py").read_text()
    work = tmp / "remote"
    assert list((work / "judge").glob("forgekernel-*/.complete")), "the judge bundle was not shipped"
    assert list((work / "jobs").iterdir()) == [], "remote job dirs were left behind"


def test_forge_doctor_checks_the_ssh_delivery(runs):
    doctor = runs[3]
    rows = {c["name"]: c for c in json.loads(doctor.stdout)}
    for name in ("ssh reachable", "remote python", "remote torch", "remote pydantic", "remote GPU",
                 "ssh round trip"):
        assert rows[name]["ok"], rows[name]
    assert "cpu-interpret" in rows["ssh round trip"]["detail"]
