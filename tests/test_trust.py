"""The trust boundary: candidate code runs in a sandboxed executor, never beside the verdict.

Each test judges a kernel on the CPU and checks what the verifier/executor split and the
sandbox guarantee: the candidate's process holds nothing to tamper with, sees no credential,
reaches no network, writes nowhere but its scratch, and plants nothing for later judges.
"""

from __future__ import annotations

import http.server
import json
import shutil
import site
import threading
from pathlib import Path

import pytest

from forgekernel.delivery import make_runner
from forgekernel.judge import JudgeOptions, judge
from forgekernel.records import Status
from forgekernel.task import load_task

ROOT = Path(__file__).resolve().parents[1]
CHEATING = ROOT / "tests" / "fixtures" / "kernels" / "cheating"
CORRECT = ROOT / "tests" / "fixtures" / "kernels" / "correct" / "rmsnorm_rowwise"
RMSNORM = load_task(ROOT / "tasks" / "rmsnorm", check_reference=False)


def _judge(kernel: Path, **kw):
    opts = {"trials": 2, "timing": False, "hidden": False, "timeout_s": 120, **kw}
    return judge(RMSNORM, kernel, make_runner("cpu"), JudgeOptions(**opts))


class _Sink(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - the http.server name
        _Sink.hits.append(self.path)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def test_a_kernel_that_tries_to_escape_gets_nothing_out_and_a_clear_verdict(tmp_path, monkeypatch):
    server = http.server.HTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    ledger = run_dir / "ledger.jsonl"
    ledger.write_text('{"seq": 1}\n')
    outside = tmp_path / "outside.txt"
    kernel = tmp_path / "kernel"
    shutil.copytree(CHEATING / "rmsnorm_exfiltrate", kernel)
    (kernel / "targets.json").write_text(json.dumps(
        {"port": server.server_address[1], "ledger": str(ledger), "outside": str(outside)}))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-should-never-leave")
    try:
        verdict = _judge(kernel)
    finally:
        server.shutdown()
        server.server_close()
    assert verdict.status is Status.REJECTED, verdict.reason
    assert any(w in verdict.reason for w in ("credential", "network", "outside"))
    assert _Sink.hits == []
    assert ledger.read_text() == '{"seq": 1}\n' and not outside.exists()


def test_profiling_a_candidate_runs_it_in_the_sandbox_too(tmp_path, monkeypatch):
    """The engine profiles the best candidate: that worker imports candidate code, so it
    starts in the sandbox (no network, no credentials, nothing written outside)."""
    from forgekernel.profile import profile_task

    server = http.server.HTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    ledger, outside = tmp_path / "ledger.jsonl", tmp_path / "outside.txt"
    ledger.write_text("")
    kernel = tmp_path / "kernel"
    shutil.copytree(CHEATING / "rmsnorm_exfiltrate", kernel)
    (kernel / "targets.json").write_text(json.dumps(
        {"port": server.server_address[1], "ledger": str(ledger), "outside": str(outside)}))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-should-never-leave")
    _Sink.hits.clear()
    try:
        profiles = profile_task(RMSNORM, make_runner("cpu"), kernel=kernel / "kernel.py", ncu="off",
                                static=False, timeout_s=300)
    finally:
        server.shutdown()
        server.server_close()
    assert profiles and profiles[0].metrics.get("launches", 0) >= 1
    assert _Sink.hits == [] and ledger.read_text() == "" and not outside.exists()


def test_a_planted_import_hook_reaches_no_later_judgement(tmp_path):
    before = {p: set(Path(p).glob("*.pth")) for p in site.getsitepackages() if Path(p).is_dir()}
    verdict = _judge(CHEATING / "rmsnorm_plant_pth")
    assert verdict.status is Status.REJECTED, verdict.reason
    after = {p: set(Path(p).glob("*.pth")) for p in before}
    assert after == before
    assert _judge(CORRECT).passed


@pytest.mark.parametrize("name", ["rmsnorm_patch_oracle_pydoc", "rmsnorm_frame_walk_tolerance",
                                  "rmsnorm_override_reference_aten"])
def test_tampering_with_the_judge_reaches_nothing_that_decides(name):
    """With the static scan off, the cheats run: they find no judge in their process."""
    verdict = _judge(CHEATING / name, static=False)
    assert verdict.status in (Status.REJECTED, Status.WRONG_VALUES), verdict.reason
    assert verdict.status is not Status.PASSED


def test_the_verdict_says_which_sandbox_ran_the_candidate():
    verdict = _judge(CORRECT)
    assert verdict.passed, verdict.feedback
    assert verdict.profile["sandbox"].split()[0] in ("bwrap", "stdlib")
    unsafe = _judge(CORRECT, unsafe_no_sandbox=True)
    assert unsafe.passed and "unsafe" in unsafe.profile["sandbox"]


def _run_dir(tmp_path: Path) -> Path:
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "forgekernel.cli", "new", str(ROOT / "tasks" / "rmsnorm"),
                          "--out", str(tmp_path / "run")], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    return tmp_path / "run"


def _forge(*args: str, cwd: Path):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "forgekernel.cli", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=600)


def test_a_ledger_line_not_written_by_the_engine_is_refused(tmp_path):
    from forgekernel.records import AgentCost, Attempt, Status, Verdict
    from forgekernel.run import ledger, rundir

    rd = rundir.open(_run_dir(tmp_path))
    good = ledger.Ledger(rd.ledger, rd.ledger_key())
    good.append(ledger.SessionEvent(pid=1))
    assert _forge("status", str(rd.root), cwd=tmp_path).returncode == 0
    forged = Attempt(seq=1, time=ledger.now(), agent=AgentCost(agent="builtin"), candidate="ab",
                     verdict=Verdict(status=Status.PASSED, speedup=99.0), accepted=True, best=True)
    with open(rd.ledger, "a") as fh:
        fh.write(forged.model_dump_json() + "\n")
    for cmd in (("status", str(rd.root)), ("run", str(rd.root), "--max-iterations", "1")):
        out = _forge(*cmd, cwd=tmp_path)
        assert out.returncode == 2, out.stdout + out.stderr
        assert out.stderr.startswith("forge: error:") and "signature" in out.stderr
        assert out.stderr.count("\n") == 1


def test_git_in_the_workspace_runs_no_command_an_agent_plants(tmp_path):
    from forgekernel.run import rundir
    from forgekernel.run.workspace import Workspace

    rd = rundir.open(_run_dir(tmp_path))
    assert rd.git_dir.is_dir() and not (rd.workspace / ".git").exists()
    marker = tmp_path / "ran"
    fake = rd.workspace / ".git"
    fake.mkdir()
    (fake / "config").write_text(f"[core]\n\tfsmonitor = touch {marker}\n")
    (rd.workspace / ".gitattributes").write_text("* filter=evil\n")
    (rd.workspace / "kernel.py").write_text("# changed by an agent\n")
    ws = Workspace(rd.workspace, rd.git_dir)
    ws.git("status")
    ws.reset()
    assert not marker.exists()
    assert "changed by an agent" not in (rd.workspace / "kernel.py").read_text()


def test_no_sandbox_stops_every_command_before_anything_is_made(tmp_path, monkeypatch):
    """No sandbox works (FK_SANDBOX names bubblewrap, FK_BWRAP a missing binary): each
    command that would run candidate code says so in one line, exits 2 and makes nothing;
    `forge doctor` shows the missing row."""
    monkeypatch.setenv("FK_SANDBOX", "bwrap")
    monkeypatch.setenv("FK_BWRAP", str(tmp_path / "missing" / "bwrap"))
    task = str(ROOT / "tasks" / "rmsnorm")
    for cmd in (("run", task, "--delivery", "cpu", "--out", "r"), ("new", task, "--delivery", "cpu", "--out", "r"),
                ("check", task, str(CORRECT), "--delivery", "cpu"),
                ("profile", task, "--kernel", str(CORRECT), "--delivery", "cpu"),
                ("bench", task, "--delivery", "cpu", "--out", "b"),
                ("evolve", task, "--delivery", "cpu", "--out", "e")):
        out = _forge(*cmd, cwd=tmp_path)
        assert out.returncode == 2, (cmd, out.stdout, out.stderr)
        assert out.stderr.startswith("forge: error: no sandbox for candidate code") and out.stderr.count("\n") == 1
        assert "--unsafe-no-sandbox" in out.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    doctor = _forge("doctor", cwd=tmp_path)
    assert any(ln.startswith("missing sandbox") for ln in doctor.stdout.splitlines()), doctor.stdout
    out = _forge("check", task, str(CORRECT), "--delivery", "cpu", "--unsafe-no-sandbox", cwd=tmp_path)
    assert out.returncode == 0 and "candidate ran in: none (--unsafe-no-sandbox" in out.stdout, out.stdout


def test_workers_get_no_credentials(monkeypatch):
    from forgekernel.config import worker_env

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-2")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    monkeypatch.setenv("FK_MY_TOKEN", "x")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    env = worker_env({"TRITON_INTERPRET": "1"})
    assert not {"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "FK_MY_TOKEN"} & set(env)
    assert env["CUDA_VISIBLE_DEVICES"] == "0" and env["TRITON_INTERPRET"] == "1" and "PATH" in env


def _library_and_candidate(tmp_path: Path, monkeypatch, body: str) -> Path:
    """An installed library holding a Triton RMSNorm (on the judge's path, as site-packages
    would be), and a candidate whose ``run`` is ``body`` and defines no kernel."""
    lib = tmp_path / "site" / "tinylib"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text((CORRECT / "kernel.py").read_text())
    monkeypatch.setenv("PYTHONPATH", str(lib.parent))
    kernel = tmp_path / "candidate"
    kernel.mkdir()
    (kernel / "kernel.py").write_text(f'"""A third-party kernel."""\nimport torch\nimport tinylib\n\n\n{body}')
    return kernel


def test_a_library_kernel_is_judged_honestly_when_the_policy_allows_it(tmp_path, monkeypatch):
    kernel = _library_and_candidate(tmp_path, monkeypatch, "def run(x, weight):\n"
                                    "    return tinylib.run(x, weight)\n")
    default = _judge(kernel)
    assert default.status is Status.REJECTED and "no kernel of its own" in default.reason
    allowed = _judge(kernel, library_kernels=True)
    assert allowed.status is Status.PASSED, allowed.reason
    assert allowed.profile["library_kernels"] is True
    assert [k["name"] for k in allowed.profile["kernels"]] == ["_rmsnorm_row"]
    by_task = RMSNORM.model_copy(update={"policy": RMSNORM.policy.model_copy(
        update={"library_kernels": True})})
    verdict = judge(by_task, kernel, make_runner("cpu"),
                    JudgeOptions(trials=2, timing=False, hidden=False, timeout_s=120))
    assert verdict.status is Status.PASSED, verdict.reason


def test_the_library_policy_still_rejects_eager_pytorch_doing_the_work(tmp_path, monkeypatch):
    """A library launch that only copies does not make eager PyTorch around it the kernel."""
    kernel = _library_and_candidate(tmp_path, monkeypatch, (
        "def run(x, weight):\n"
        "    tinylib.run(x, weight)  # launched, answer thrown away\n"
        "    xf = x.float()\n"
        "    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)\n"
        "    return (y.to(x.dtype) * weight).to(x.dtype)\n"))
    verdict = _judge(kernel, library_kernels=True)
    assert verdict.status is Status.REJECTED, verdict.reason
    assert "not written by any of your Triton kernels" in verdict.reason, verdict.reason
