"""`forge run` end to end on the CPU interpreter with each LLM backend behind a loopback fake.

The fake model writes a correct Triton RMSNorm through its tools; the run must judge that
kernel, record the agent's cost in the ledger and write the report and best kernel.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from forgekernel.fakes import FakeAnthropic, FakeOpenAI
from llm_agent_support import PLAN, REPO
from llm_agent_support import RMSNORM_KERNEL as KERNEL

pytestmark = pytest.mark.slow



def judge_args() -> list[str]:
    """The real judge once it is installed; until then the engine's test judge."""
    try:
        from forgekernel.judge import judge  # noqa: F401
    except ImportError:
        return ["--judge", "engine_support.fake_judge:judge"]
    return []


def forge_run(tmp: Path, env_extra: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_AUTH_TOKEN")
           and not k.startswith("FK_")}
    env.update(PYTHONPATH=os.pathsep.join([str(REPO / "src"), str(REPO / "tests")]), **env_extra)
    return subprocess.run([sys.executable, "-m", "forgekernel.cli", "run", str(REPO / "tasks" / "rmsnorm"),
                           "--out", str(tmp / "run"), "--delivery", "cpu", "--max-iterations", "1",
                           *args, *judge_args()], cwd=tmp, env=env, capture_output=True, text=True,
                          timeout=480)


def check_outcome(tmp: Path, proc: subprocess.CompletedProcess, agent: str) -> dict:
    out = proc.stdout + proc.stderr
    assert proc.returncode in (0, 2), out
    assert "Traceback" not in out
    run = tmp / "run"
    best = run / "best" / "kernel.py"
    assert best.is_file() and best.read_text() == KERNEL, out
    events = [json.loads(line) for line in (run / "ledger.jsonl").read_text().splitlines()]
    judged = [e for e in events if e.get("verdict")]
    assert judged and judged[0]["verdict"]["status"] == "PASSED", out
    if not judge_args():
        assert judged[0]["verdict"]["judge"].startswith("forgekernel")  # the real judge
    assert judged[0]["agent"]["agent"] == agent and judged[0]["agent"]["input_tokens"] > 0
    report = (run / "report.md").read_text()
    assert "best:" in report and "cpu-interpret" in report
    return judged[0]


CAPTURED = REPO / "tests" / "fixtures" / "llm_requests"
"""Requests the fake servers captured from a CPU run, committed so a reader sees what a model
is sent (FK_UPDATE_FIXTURES=1 rewrites them); volatile text (paths, timings) is masked."""
SECTIONS = {"openai_architect": ("## What the engine measures here", "speedup bound", "## Hardware\\n",
                                 "## Best kernel so far", "Budget left"),
            "openai_coder": ("## The kernel you start from", "## Hardware\\n", "## Milestone M0",
                             "## Best kernel so far", "Gate that closes it")}


def _masked(body: dict, tmp: Path) -> dict:
    text = json.dumps(body, indent=1, sort_keys=True)
    text = text.replace(str(tmp), "<tmp>").replace(str(REPO), "<repo>")
    text = re.sub(r"\d+\.\d{3,}", "<num>", text)  # measured times vary run to run
    return json.loads(text)


def _headings(body: dict) -> list[str]:
    text = "\n".join(str(m.get("content", "")) for m in body["messages"])
    return [line for line in text.splitlines() if line.startswith("#")]


def check_captured(tmp: Path, bodies: dict[str, dict]) -> None:
    """The captured requests carry the code, the run's facts, gate states and the hardware
    sheet, and their sections are those of the committed fixtures."""
    for name, body in bodies.items():
        path = CAPTURED / f"{name}.json"
        masked = _masked(body, tmp)
        if os.environ.get("FK_UPDATE_FIXTURES") == "1":
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(masked, indent=1, sort_keys=True) + "\n")
        committed = json.loads(path.read_text())
        assert _headings(masked) == _headings(committed), name
        text = json.dumps(committed)
        for needle in SECTIONS[name]:
            assert needle in text, (name, needle)


def test_forge_run_with_openai_coder_and_architect(tmp_path):
    plan = {"tool_calls": [{"name": "submit_curriculum", "input": {"toml": PLAN, "summary": "fuse"}}]}
    steps = [plan,
             {"text": "A first draft.", "tool_calls": [
                 {"name": "write_file", "input": {"path": "kernel.py", "content": KERNEL + "# draft\n"}}]},
             {"text": "Measuring it.", "tool_calls": [{"name": "run_profile", "input": {}}]},
             {"text": "One launch per call: keep the structure.", "tool_calls": [
                 {"name": "write_file", "input": {"path": "kernel.py", "content": KERNEL}}]},
             {"tool_calls": [{"name": "run_check", "input": {}}]},
             {"tool_calls": [{"name": "finish", "input": {"summary": "one program per row"}}]}]
    with FakeOpenAI(steps) as srv:
        proc = forge_run(tmp_path, {"OPENAI_BASE_URL": srv.url + "/v1"}, "--agent", "openai",
                         "--price", "0.5,2")
    attempt = check_outcome(tmp_path, proc, "openai")
    assert attempt["agent"]["dollars"] > 0  # the user's price for a model the table lacks
    profiled = srv.scripted()[3].body["messages"][-1]  # what run_profile gave the model
    assert profiled["role"] == "tool" and profiled["content"].startswith("exit code 0"), profiled
    for fact in ("profile of kernel.py on the cpu delivery", "M=16 x N=256: median_ms=", "launches=1",
                 "regs=", "spills=0", "cpu-interpret"):
        assert fact in profiled["content"], fact
    assert attempt["row"] == "M0.1" and attempt["agent"]["model"] == "fake"
    assert srv.remaining == 0
    check_captured(tmp_path, {"openai_architect": srv.scripted()[0].body,
                              "openai_coder": srv.scripted()[1].body})
    check_result = srv.scripted()[5].body["messages"][-1]
    assert check_result["role"] == "tool" and check_result["content"].startswith("exit code 0")
    assert '"status":"PASSED"' in check_result["content"].replace(" ", "")
    plans = [json.loads(x) for x in (tmp_path / "run" / "ledger.jsonl").read_text().splitlines()
             if '"kind":"plan"' in x.replace(" ", "")]
    assert plans and plans[0]["agent"]["agent"] == "openai"
    assert plans[0]["curriculum"]["milestone"][0]["row"][0]["decision"].startswith("one program per row")


def test_forge_run_with_claude_code_coder_and_builtin_architect(tmp_path):
    from forgekernel.agents import claude_code
    from forgekernel.agents.base import AgentError
    from forgekernel.config import Settings

    try:
        claude_code.find_cli(Settings())
    except AgentError as exc:
        pytest.skip(f"no claude CLI here: {exc}")
    steps = [{"text": "Reading.", "tool_calls": [{"name": "Read", "input": {"file_path": "kernel.py"}}]},
             {"tool_calls": [{"name": "Write", "input": {"file_path": "kernel.py", "content": KERNEL}}]},
             {"text": "One program per row, fp32 statistics."}]
    env = {"ANTHROPIC_BASE_URL": "", "ANTHROPIC_API_KEY": "dummy",
           "CLAUDE_CONFIG_DIR": str(tmp_path / "claude-config"), "FK_MODEL": "claude-sonnet-4-5"}
    with FakeAnthropic(steps, api_key="dummy") as srv:
        env["ANTHROPIC_BASE_URL"] = srv.url
        proc = forge_run(tmp_path, env, "--agent", "claude-code", "--architect", "builtin")
    attempt = check_outcome(tmp_path, proc, "claude-code")
    assert attempt["agent"]["session"] and attempt["agent"]["dollars"] > 0
    assert srv.paths() == ["POST /v1/messages?beta=true"] * 3 and srv.remaining == 0


def test_forge_run_with_an_unpriced_model_stops_before_a_run_dir(tmp_path):
    with FakeOpenAI([]) as srv:
        proc = forge_run(tmp_path, {"OPENAI_BASE_URL": srv.url + "/v1"}, "--agent", "openai")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "no price known for model 'fake'" in lines[0] and "--price" in lines[0]
    assert not (tmp_path / "run").exists()


def test_forge_run_with_anthropic_and_no_key_stops_at_once(tmp_path):
    proc = forge_run(tmp_path, {}, "--agent", "anthropic")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "ANTHROPIC_API_KEY" in lines[0], proc.stderr
