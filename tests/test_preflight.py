"""Everything `forge run` needs is checked before a run dir exists (or, for a run dir, before
its ledger gets a session): the claude CLI's login, and a GPU for the ray delivery."""

from __future__ import annotations

import importlib.util
import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine_support.runs import REPO
from forgekernel.agents import claude_code
from forgekernel.agents.base import AgentError
from forgekernel.config import Settings
from forgekernel.run import rundir

RMSNORM = REPO / "tasks" / "rmsnorm"


def forge(tmp: Path, *args: str, env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess, float]:
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("ANTHROPIC_", "OPENAI_", "FK_", "RAY_"))}
    clean.update({"CLAUDE_CONFIG_DIR": str(tmp / "claude-config"), **(env or {})})
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "forgekernel.cli", *args], capture_output=True,
                          text=True, cwd=tmp, env=clean, timeout=300)
    return proc, time.monotonic() - t0


def one_error(proc: subprocess.CompletedProcess, text: str) -> None:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and lines[0].startswith("forge: error: ") and text in lines[0], proc.stderr


@pytest.fixture(scope="module")
def claude_cli() -> Path:
    try:
        return claude_code.find_cli(Settings())
    except AgentError as exc:
        pytest.skip(f"no claude CLI here: {exc}")


@pytest.mark.parametrize("command", ["run", "new"])
def test_claude_code_without_login_stops_before_a_run_dir(tmp_path, claude_cli, command):
    out = tmp_path / "never"
    proc, seconds = forge(tmp_path, command, str(RMSNORM), "--out", str(out), "--agent", "claude-code",
                          "--delivery", "cpu")
    one_error(proc, "the claude CLI is not logged in (`claude auth status`")
    assert not out.exists() and "created run dir" not in proc.stdout
    assert seconds < 30  # one local status call, not four planning attempts


def test_a_run_dir_for_claude_code_without_login_gets_no_session(tmp_path, claude_cli):
    root = rundir.create(RMSNORM, Settings(delivery="cpu", agent="claude-code"), tmp_path / "run")
    proc, _ = forge(tmp_path, "run", str(root))
    one_error(proc, "not logged in")
    assert not (root / "ledger.jsonl").exists()
    status, _ = forge(tmp_path, "status", str(root))
    assert status.returncode == 0 and "(not started)" in status.stdout, status.stdout


def test_an_api_key_is_a_login(tmp_path, claude_cli):
    settings = Settings(claude_bin=str(claude_cli))
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "cfg"), "ANTHROPIC_API_KEY": "dummy"}
    assert claude_code.check_login(settings, env=env) == "api_key"
    with pytest.raises(AgentError, match="not logged in"):
        claude_code.check_login(settings, env={"CLAUDE_CONFIG_DIR": str(tmp_path / "cfg"),
                                               "ANTHROPIC_API_KEY": ""})


FAKE_OLD_CLI = """#!{python}
import json, sys
if sys.argv[1:2] == ["auth"]:
    sys.stderr.write("error: unknown command 'auth'\\n")
    sys.exit(1)
if "-p" in sys.argv:
    sys.stdin.read()
    print(json.dumps({{"type": "system", "subtype": "init", "session_id": "s1", "model": "m"}}))
    print(json.dumps({{"type": "result", "is_error": True, "api_error_status": 401, "num_turns": 0,
                      "result": "Invalid API key - Please run /login"}}))
    sys.exit(1)
print("1.0.0 (Claude Code)")
"""


def test_a_cli_without_auth_status_is_checked_with_one_call(tmp_path):
    fake = tmp_path / "claude"
    fake.write_text(FAKE_OLD_CLI.format(python=sys.executable))
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    out = tmp_path / "never"
    proc, _ = forge(tmp_path, "run", str(RMSNORM), "--out", str(out), "--agent", "claude-code",
                    "--delivery", "cpu", env={"FK_CLAUDE_BIN": str(fake)})
    one_error(proc, "the claude CLI is not logged in (Invalid API key - Please run /login)")
    assert not out.exists()


def test_ray_delivery_without_a_gpu_stops_before_a_run_dir(tmp_path):
    from forgekernel.delivery.base import cuda_device_name

    if importlib.util.find_spec("ray") is None:
        pytest.skip("ray is not installed")
    if cuda_device_name():
        pytest.skip("this machine has a GPU")
    out = tmp_path / "never"
    for args in (["run", str(RMSNORM), "--out", str(out)], ["new", str(RMSNORM), "--out", str(out)],
                 ["new", str(RMSNORM), "--dry-run", "--json"]):
        proc, seconds = forge(tmp_path, *args, "--delivery", "ray")
        one_error(proc, "delivery 'ray' without RAY_ADDRESS starts a Ray cluster on this machine, "
                        "which has no CUDA GPU")
        assert not out.exists() and seconds < 30
    plan = json.loads(proc.stdout)  # the dry run shows its plan, then says what is missing
    assert plan["delivery"]["name"] == "ray"


def test_an_api_model_without_a_price_is_refused_before_a_run_dir():
    from forgekernel.cli.preflight import price_problem
    from forgekernel.config import ConfigError, Settings, load_settings

    assert "no price known for model 'my-model'" in price_problem(Settings(model="my-model"), "anthropic")
    assert price_problem(Settings(model="my-model", price="1,2"), "anthropic") == ""
    assert price_problem(Settings(), "anthropic", "openai") == ""  # the defaults are priced
    assert price_problem(Settings(model="my-model"), "builtin", "claude-code") == ""  # not billed per token here
    local = Settings(openai_base_url="http://127.0.0.1:9/v1")
    assert price_problem(local, "openai") == ""  # its model is known once `forge run` asks the server
    with pytest.raises(ConfigError, match="FK_PRICE .flag.: price 'cheap'"):
        load_settings({"price": "cheap"})
