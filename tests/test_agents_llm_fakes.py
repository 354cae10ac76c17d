"""The fake LLM servers as a separate process (``python -m forgekernel.fakes``)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import openai


def test_fake_openai_process_streams_tool_calls_and_logs(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [
        {"text": "writing", "tool_calls": [{"name": "write_file",
                                            "input": {"path": "kernel.py", "content": "x = 1\n" * 40}}]}]}))
    log = tmp_path / "log.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "forgekernel.fakes", "openai", str(script),
                             "--api-key", "k", "--log", str(log)], stdout=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().split("url: ", 1)[1].strip()
        with openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0) as client:
            chunks = list(client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "go"}], stream=True,
                stream_options={"include_usage": True}))
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
        proc.stdout.close()
    args = "".join(c.choices[0].delta.tool_calls[0].function.arguments or ""
                   for c in chunks if c.choices and c.choices[0].delta.tool_calls)
    assert json.loads(args)["content"] == "x = 1\n" * 40
    assert len([c for c in chunks if c.choices and c.choices[0].delta.tool_calls]) > 2  # deltas
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["method"], r["path"], r["step"]) for r in logged] == [("POST", "/v1/chat/completions", 0)]
    assert logged[0]["headers"]["authorization"] == "***"


def test_fake_rejects_a_malformed_script(tmp_path):
    script = tmp_path / "bad.json"
    script.write_text(json.dumps([{"txt": "typo"}]))
    res = subprocess.run([sys.executable, "-m", "forgekernel.fakes", "anthropic", str(script)],
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 2
    assert "step 0: unknown keys ['txt']" in res.stderr
