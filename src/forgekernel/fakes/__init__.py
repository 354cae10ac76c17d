"""Loopback fake LLM servers for tests and demos: no network, no credential, scripted replies.

- :class:`FakeAnthropic`: the Messages API (JSON and SSE streaming, tool use), enough for the
  ``anthropic`` SDK and the real Claude Code CLI (``ANTHROPIC_BASE_URL``).
- :class:`FakeOpenAI`: chat completions (JSON and SSE streaming, tool calls) for the
  ``openai`` SDK or any OpenAI-compatible client.

Run one from a shell with ``python -m forgekernel.fakes anthropic|openai SCRIPT.json``.
"""

from forgekernel.fakes.anthropic import FakeAnthropic
from forgekernel.fakes.openai import FakeOpenAI
from forgekernel.fakes.script import (
           EXHAUSTED,
           ScriptError,
           Step,
           ToolCall,
           load_script,
           parse_script,
)
from forgekernel.fakes.server import FakeServer, Request

__all__ = ["EXHAUSTED", "FakeAnthropic", "FakeOpenAI", "FakeServer", "Request", "ScriptError",
           "Step", "ToolCall", "load_script", "parse_script"]
