"""`forge run` / `forge status` on the command line: selection, one-line errors, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from engine_support.runs import REPO, TESTS, new_run, step, write_script
from forgekernel.cli import main
from forgekernel.run import rundir

FAST_JUDGE = "engine_support.fake_judge:judge_in_process"


def forge(capsys, *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_error(err: str, text: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("forge: error: ") and text in lines[0], err


@pytest.fixture
def run_dir(tmp_path):
    return new_run(tmp_path)


def test_not_a_run_or_task_dir(capsys, tmp_path):
    code, _, err = forge(capsys, "run", tmp_path / "nothing")
    assert code == 2
    one_error(err, "neither a run dir (run.toml), a task dir (task.toml) nor a KernelBench problem file")


def test_local_delivery_without_a_gpu_is_an_error(capsys, run_dir):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    code, _, err = forge(capsys, "run", run_dir, "--delivery", "local")
    assert code == 2
    one_error(err, "delivery 'local' needs a CUDA GPU")


@pytest.mark.parametrize(("args", "text"), [
    (["--agent", "nosuch"], "unknown agent 'nosuch'"),
    (["--agent", "scripted"], "needs --script PATH"),
    (["--script", "x.toml", "--agent", "builtin"], "--script/--replay drive the scripted agent"),
    (["--script", "missing.toml"], "no such script file"),
])
def test_agent_selection_errors(capsys, run_dir, args, text):
    code, _, err = forge(capsys, "run", run_dir, "--delivery", "cpu", *args)
    assert code == 2
    one_error(err, text)


def test_missing_credential_names_what_is_missing(capsys, run_dir):
    if os.environ.get("ANTHROPIC_API_KEY") or (REPO / "local.env").exists():
        pytest.skip("a credential or local.env is present here")
    code, _, err = forge(capsys, "run", run_dir, "--delivery", "cpu", "--agent", "anthropic")
    assert code == 2
    one_error(err, "missing ANTHROPIC_API_KEY")


def test_status_of_a_fresh_run(capsys, run_dir):
    code, out, _ = forge(capsys, "status", run_dir, "--json")
    d = json.loads(out)
    assert code == 0 and d["state"] == "not started" and d["iterations"] == 0 and d["best"] is None
    code, out, _ = forge(capsys, "status", run_dir)
    assert code == 0 and "best: none" in out and "0/40 attempts" in out


def test_run_then_replay_then_status(capsys, run_dir, tmp_path):
    script = write_script(tmp_path / "s.json", [step("wrong.py"), step("torch_fast.py")])
    code, out, _ = forge(capsys, "run", run_dir, "--script", script, "--delivery", "cpu",
                         "--max-iterations", "2", "--judge", FAST_JUDGE)
    assert code == 2, out
    assert "[judged] #1 M0.1: WRONG_VALUES" in out and "iteration budget spent (2 of 2)" in out
    assert "target 1000x: not met" in out
    assert rundir.open(run_dir).config.budget.iterations == 2  # kept for a resumed run
    replayed = new_run(tmp_path, "replayed")
    code, out, _ = forge(capsys, "run", replayed, "--replay", run_dir, "--delivery", "cpu",
                         "--max-iterations", "2", "--judge", FAST_JUDGE)
    assert code == 2 and "[judged] #2 M0.1: PASSED" in out
    code, out, _ = forge(capsys, "status", replayed, "--json")
    d = json.loads(out)
    assert d["state"] == "stopped" and d["agent"] == "scripted" and d["best"]["seq"] == 2
    assert [a["status"] for a in d["last"]] == ["WRONG_VALUES", "PASSED"]


@pytest.mark.parametrize(("args", "text"), [
    (["--agent", "nosuch"], "unknown agent 'nosuch'"),
    (["--architect", "nosuch"], "unknown agent 'nosuch'; known: builtin, scripted"),
    (["--delivery", "gpu9"], "delivery 'gpu9'"),
])
def test_a_task_dir_is_checked_before_a_run_dir_is_made(capsys, tmp_path, args, text):
    out_dir = tmp_path / "never"
    code, out, err = forge(capsys, "run", REPO / "tasks" / "rmsnorm", "--out", out_dir, *args)
    assert code == 2
    one_error(err, text)
    assert not out_dir.exists() and "created run dir" not in out


def test_a_run_dir_that_cannot_be_made_is_one_line(capsys, tmp_path):
    (tmp_path / "file").write_text("")
    code, _, err = forge(capsys, "new", REPO / "tasks" / "rmsnorm", "--out", tmp_path / "file" / "run")
    assert code == 2
    one_error(err, "cannot create the run dir")


def test_a_task_dir_gets_a_run_dir_first(tmp_path):
    script = write_script(tmp_path / "s.json", [step("torch_fast.py")])
    out_dir = tmp_path / "fresh"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(TESTS)])}
    proc = subprocess.run([sys.executable, "-m", "forgekernel.cli", "run", str(REPO / "tasks" / "rmsnorm"),
                           "--out", str(out_dir), "--script", str(script), "--delivery", "cpu",
                           "--max-iterations", "1", "--judge", FAST_JUDGE],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode in (0, 2), proc.stderr
    assert proc.stdout.splitlines()[0] == f"created run dir {out_dir}"
    assert (out_dir / "best" / "kernel.py").is_file()
    report = (out_dir / "report.md").read_text()
    assert f"(exit code {proc.returncode})" in report  # the report's target line matches the exit code
    assert ("-- met**" in report) == (proc.returncode == 0)


def test_ctrl_c_says_how_to_resume_and_the_resumed_run_loses_nothing(tmp_path):
    import signal
    import time

    out_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "forgekernel.cli", "run", str(REPO / "tasks" / "rmsnorm"), "--out", str(out_dir),
           "--delivery", "cpu", "--max-iterations", "3"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    ledger = out_dir / "ledger.jsonl"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if ledger.exists() and '"kind":"started"' in ledger.read_text():
            break
        time.sleep(0.2)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 130, f"stderr: {err}\nstdout: {out[-3000:]}"
    assert err.strip() == f"forge: interrupted; `forge run {out_dir.resolve()}` resumes it"
    again = subprocess.run(cmd[:4] + [str(out_dir)], capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert again.returncode in (0, 2), again.stderr
    events = [json.loads(line) for line in ledger.read_text().splitlines()]
    seqs = [e["seq"] for e in events if "kind" not in e]  # attempt lines carry no kind
    assert seqs == [1, 2, 3]


def test_target_flag_is_kept_and_decides_the_exit_code(capsys, run_dir, tmp_path):
    script = write_script(tmp_path / "s.json", [step("torch_fast.py")])
    code, out, _ = forge(capsys, "run", run_dir, "--script", script, "--delivery", "cpu",
                         "--max-iterations", "1", "--judge", FAST_JUDGE, "--target", "0.01")
    assert rundir.open(run_dir).config.target == 0.01
    assert rundir.open(run_dir).task().target.speedup == 0.01  # what the agents see
    assert "target 0.01x: met" in out and code == 0, out
    assert "**Target: 0.01x the reference -- met** (exit code 0)" in (run_dir / "report.md").read_text()


def test_a_swallowed_ctrl_c_still_stops_at_the_next_event():
    """Python ignores a KeyboardInterrupt raised in an at-fork hook or a finaliser; the
    resumable command remembers the press and raises again at the next progress event."""
    import signal

    from forgekernel.cli import Interrupted
    from forgekernel.cli.cmd_run import _Printer, resumable

    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(Interrupted) as err, _Printer() as printer, resumable("forge run X"):
        try:
            signal.raise_signal(signal.SIGINT)
        except KeyboardInterrupt:
            pass  # swallowed, as an at-fork hook would
        printer(type("Ev", (), {"kind": "note", "message": "next event"})())
    assert str(err.value) == "forge run X"
    assert signal.getsignal(signal.SIGINT) is before  # the handler is put back
    with _Printer() as printer, resumable("forge run Y"):  # no press remembered from before
        printer(type("Ev", (), {"kind": "note", "message": "goes on"})())
