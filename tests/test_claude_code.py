"""The claude-code backend: the real bundled ``claude`` CLI against the loopback fake Messages API."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from forgekernel.agents import claude_code
from forgekernel.agents.base import AgentError
from forgekernel.fakes import FakeAnthropic
from llm_agent_support import PLAN, START_KERNEL, architect_ctx, coder_ctx, settings, workspace

MODEL = "claude-sonnet-4-5"
USAGE = {"input_tokens": 1000, "output_tokens": 100}
NEW_LINE = "    return x * weight"


@pytest.fixture(scope="module")
def cli():
    try:
        return claude_code.find_cli(settings())
    except AgentError as exc:
        pytest.skip(f"no claude CLI here: {exc}")


def check_script(tmp: Path) -> tuple[str, ...]:
    """A check command outside the workspace: imports the workspace's kernel and calls it."""
    script = tmp / "check.py"
    script.write_text("import sys\nsys.path.insert(0, '.')\nimport kernel\n"
                      "print('check sees', kernel.run(6, 7))\n")
    return (sys.executable, str(script))


def make_coder(srv, tmp: Path, **kw):
    env = {"ANTHROPIC_API_KEY": kw.pop("key", "dummy"), "CLAUDE_CONFIG_DIR": str(tmp / "claude-config")}
    return claude_code.make_coder(settings(model=MODEL, anthropic_base_url=srv.url),
                                  env=env, timeout_s=kw.pop("timeout_s", 120), **kw)


def tool_texts(request) -> list[str]:
    last = request.body["messages"][-1]
    blocks = last["content"] if isinstance(last["content"], list) else []
    return [json.dumps(b.get("content")) for b in blocks if b.get("type") == "tool_result"]


def tool_flags(request) -> list[str]:
    last = request.body["messages"][-1]
    blocks = last["content"] if isinstance(last["content"], list) else []
    return [json.dumps(bool(b.get("is_error"))) for b in blocks if b.get("type") == "tool_result"]


def edit_steps(check: tuple[str, ...]) -> list[dict]:
    import shlex

    return [
        {"text": "Reading.", "usage": USAGE,
         "tool_calls": [{"name": "Read", "input": {"file_path": "kernel.py"}}]},
        {"usage": USAGE, "tool_calls": [{"name": "Edit", "input": {
            "file_path": "kernel.py", "old_string": "    return x  # TODO", "new_string": NEW_LINE}}]},
        {"usage": USAGE, "tool_calls": [{"name": "Bash", "input": {
            "command": shlex.join(check), "description": "check"}}]},
        {"text": "Scaled the output by weight.", "usage": USAGE},
    ]


def test_cli_edits_kernel_and_resumes_within_milestone(cli, tmp_path):
    ws = workspace(tmp_path)
    check = check_script(tmp_path)
    second = [{"text": "Row two: nothing to change.", "usage": USAGE}]
    with FakeAnthropic(edit_steps(check) + second, api_key="dummy") as srv:
        coder = make_coder(srv, tmp_path)
        res = coder.implement(coder_ctx(ws, check_command=check))
        res2 = coder.implement(coder_ctx(ws, row="M0.2", check_command=check))
    assert res.error == "", res.error
    assert (ws / "kernel.py").read_text() == START_KERNEL.replace("    return x  # TODO", NEW_LINE)
    assert res.summary == "Scaled the output by weight."
    # only the Messages API was called, each call answered by the script: no side traffic
    assert srv.paths() == ["POST /v1/messages?beta=true"] * 5 and srv.remaining == 0
    assert "return x  # TODO" in tool_texts(srv.requests[1])[0]
    assert "check sees 42" in tool_texts(srv.requests[3])[0]
    c = res.cost
    assert (c.agent, c.model, c.turns, c.input_tokens, c.output_tokens) == (
        "claude-code", MODEL, 4, 4000, 400)
    assert c.dollars == pytest.approx((4000 * 3 + 400 * 15) / 1e6)  # sonnet list price
    assert c.session and res2.cost.session == c.session
    # the second row continued the session: the whole first conversation was sent again
    resumed = srv.requests[4].body["messages"]
    assert "Scaled the output by weight." in json.dumps(resumed)
    assert "Decision row M0.2" in json.dumps(resumed[-1])
    assert "torch.rsqrt" not in json.dumps(resumed[-1])  # brief prompt on resume
    assert res2.cost.dollars == pytest.approx((1000 * 3 + 100 * 15) / 1e6)  # increment only
    assert res2.summary == "Row two: nothing to change."


def test_cli_is_confined_to_workspace_and_check_command(cli, tmp_path):
    import shlex

    ws = workspace(tmp_path)
    check = check_script(tmp_path)
    (tmp_path / "secret.txt").write_text("hidden workloads: M=3 N=777")
    attempts = [
        ("Write", {"file_path": "../outside.txt", "content": "x"}),
        ("Write", {"file_path": str(tmp_path / "outside2.txt"), "content": "x"}),
        ("Read", {"file_path": "../secret.txt"}),
        ("Bash", {"command": "ls /", "description": "x"}),
        ("Bash", {"command": shlex.join(check) + " && touch ../pwned", "description": "x"}),
        ("WebFetch", {"url": "http://example.com", "prompt": "x"}),
        ("Write", {"file_path": ".claude/settings.json", "content": "{}"}),
        ("Bash", {"command": shlex.join(check), "description": "the allowed check"}),
    ]
    steps = [{"tool_calls": [{"name": n, "input": a}]} for n, a in attempts] + [{"text": "gave up"}]
    with FakeAnthropic(steps, api_key="dummy") as srv:
        res = make_coder(srv, tmp_path).implement(coder_ctx(ws, check_command=check))
    assert not any((tmp_path / f).exists() for f in ("outside.txt", "outside2.txt", "pwned"))
    assert "hidden workloads" not in json.dumps([r.body for r in srv.requests])
    assert srv.remaining == 0 and res.error == ""
    flags = [json.loads(b) for r in srv.requests[1:] for b in tool_flags(r)]
    assert flags == [True] * 7 + [False]  # every escape refused; the exact check command ran
    assert not (ws / ".claude").exists()
    sent_tools = [t["name"] for t in srv.requests[0].body["tools"]]
    assert {"Read", "Write", "Edit", "Bash"} <= set(sent_tools) and "WebFetch" not in sent_tools


def test_cli_auth_failure_stops_at_once(cli, tmp_path):
    ws = workspace(tmp_path)
    with FakeAnthropic([], api_key="the-right-key") as srv:
        coder = make_coder(srv, tmp_path, key="wrong")
        t0 = time.monotonic()
        with pytest.raises(AgentError, match=r"authentication failed \(401\)") as info:
            coder.implement(coder_ctx(ws, check=False))
    assert time.monotonic() - t0 < 30
    assert "\n" not in str(info.value)


def test_cli_unknown_model_is_agent_error(cli, tmp_path):
    ws = workspace(tmp_path)
    with FakeAnthropic([{"error": 404, "message": "model: nope"}] * 2) as srv:
        with pytest.raises(AgentError, match=r"model not found \(404\)"):
            make_coder(srv, tmp_path).implement(coder_ctx(ws, check=False))


def test_cli_max_turns_is_an_attempt_error(cli, tmp_path):
    ws = workspace(tmp_path)
    read = {"tool_calls": [{"name": "Read", "input": {"file_path": "kernel.py"}}]}
    with FakeAnthropic([read] * 4) as srv:
        res = make_coder(srv, tmp_path, max_turns=2).implement(coder_ctx(ws, check=False))
    assert "max" in res.error.lower() and res.cost.turns >= 2
    assert len(srv.scripted()) == 2


def test_cli_architect_revises_invalid_curriculum(cli, tmp_path):
    bad = "[[milestone]]\nid = 'M0'\nkind = 'tuning'\n"
    steps = [{"tool_calls": [{"name": "Write", "input": {"file_path": "curriculum.toml", "content": bad}}]},
             {"text": "written"},
             {"tool_calls": [{"name": "Read", "input": {"file_path": "curriculum.toml"}}]},
             {"tool_calls": [{"name": "Write", "input": {"file_path": "curriculum.toml", "content": PLAN}}]},
             {"text": "one fused pass, then tuning"}]
    env = {"ANTHROPIC_API_KEY": "dummy", "CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")}
    with FakeAnthropic(steps) as srv:
        arch = claude_code.make_architect(settings(model=MODEL, anthropic_base_url=srv.url),
                                          env=env, timeout_s=120)
        res = arch.plan(architect_ctx())
    assert [r.id for r in res.curriculum.milestones[0].rows] == ["M0.1", "M0.2"]
    assert res.notes == "one fused pass, then tuning"
    assert "must have kind = 'architecture'" in json.dumps(srv.requests[2].body["messages"][-1])
    assert res.cost.turns == 5 and res.cost.input_tokens > 0


def test_missing_cli_is_named(tmp_path):
    with pytest.raises(AgentError, match="FK_CLAUDE_BIN=.*not an executable"):
        claude_code.make_coder(settings(claude_bin=str(tmp_path / "nope")))


def test_the_cli_is_told_the_budget_left_and_the_effort(tmp_path):
    """--max-budget-usd carries what is left of the run's dollar budget (the CLI stops itself),
    --effort the user's setting; neither appears when unset."""
    from forgekernel.agents.claude_code import _Cli

    fake = tmp_path / "claude"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    plain = _Cli(settings(claude_bin=str(fake)), {})
    argv = plain.argv("sys", ["Read"], ["Read"], None)
    assert "--max-budget-usd" not in argv and "--effort" not in argv
    tuned = _Cli(settings(claude_bin=str(fake), effort="medium"), {})
    argv = tuned.argv("sys", ["Read"], ["Read"], None, budget=0.125)
    assert argv[argv.index("--max-budget-usd") + 1] == "0.1250"
    assert argv[argv.index("--effort") + 1] == "medium"


def test_the_bundled_cli_accepts_the_budget_and_effort_flags(cli):
    """The flags forge passes exist in the CLI it runs (its --help lists them)."""
    import subprocess

    out = subprocess.run([str(cli), "--help"], capture_output=True, text=True, timeout=60).stdout
    assert "--max-budget-usd" in out and "--effort" in out
