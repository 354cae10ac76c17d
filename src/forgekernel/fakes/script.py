"""The script a fake LLM server replays: one step per model request, in order.

A script is a list of steps (or ``{"steps": [...]}``), plain JSON so it can live in a file::

    [
      {"text": "Reading the kernel first.",
       "tool_calls": [{"name": "read_file", "input": {"path": "kernel.py"}}]},
      {"error": 429, "message": "slow down"},
      {"text": "Done.", "usage": {"input_tokens": 1200, "output_tokens": 80}}
    ]

A step answers one request: ``text`` and ``tool_calls`` make an assistant message, ``error``
makes an HTTP error with that status instead (the step is consumed either way). ``usage``
overrides the token counts (otherwise about four characters per token of what was sent and
what is returned). When the script is exhausted the server answers a plain text
``(fake server: script exhausted)`` and says so in its log.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

EXHAUSTED = "(fake server: script exhausted)"


class ScriptError(ValueError):
    """A malformed script (names the step and the problem)."""


@dataclass(frozen=True)
class ToolCall:
    """One tool call the fake model makes."""

    name: str
    input: dict[str, Any]
    id: str = ""


@dataclass(frozen=True)
class Step:
    """One scripted answer."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    error: int | None = None
    message: str = ""
    usage: dict[str, int] = field(default_factory=dict)
    stop: str = ""
    """Explicit stop reason (Anthropic spelling); default ``tool_use`` with calls, else ``end_turn``."""
    thinking: str = ""
    """A thinking block before the answer (Anthropic, when the request enabled thinking)."""

    @property
    def stop_reason(self) -> str:
        return self.stop or ("tool_use" if self.tool_calls else "end_turn")


_STEP_KEYS = {"text", "tool_calls", "error", "message", "usage", "stop", "thinking"}


def _step(n: int, raw: Any) -> Step:
    if not isinstance(raw, dict):
        raise ScriptError(f"step {n}: expected an object, got {type(raw).__name__}")
    unknown = set(raw) - _STEP_KEYS
    if unknown:
        raise ScriptError(f"step {n}: unknown keys {sorted(unknown)}; allowed {sorted(_STEP_KEYS)}")
    calls = []
    for k, c in enumerate(raw.get("tool_calls", [])):
        if not isinstance(c, dict) or not isinstance(c.get("name"), str):
            raise ScriptError(f"step {n} tool call {k}: needs a string 'name'")
        if not isinstance(c.get("input", {}), dict):
            raise ScriptError(f"step {n} tool call {k}: 'input' must be an object")
        calls.append(ToolCall(name=c["name"], input=dict(c.get("input", {})),
                              id=str(c.get("id", ""))))
    error = raw.get("error")
    if error is not None and not (isinstance(error, int) and 400 <= error <= 599):
        raise ScriptError(f"step {n}: 'error' must be an HTTP status 400..599, got {error!r}")
    return Step(text=str(raw.get("text", "")), tool_calls=tuple(calls), error=error,
                message=str(raw.get("message", "")), usage=dict(raw.get("usage", {})),
                stop=str(raw.get("stop", "")), thinking=str(raw.get("thinking", "")))


def parse_script(raw: Any) -> tuple[Step, ...]:
    """Steps from a list of step objects (or ``{"steps": [...]}``)."""
    if isinstance(raw, dict) and "steps" in raw:
        raw = raw["steps"]
    if not isinstance(raw, list):
        raise ScriptError("a script is a list of steps (or an object with 'steps')")
    return tuple(_step(n, s) if not isinstance(s, Step) else s for n, s in enumerate(raw))


def load_script(path: Path) -> tuple[Step, ...]:
    """Steps from a JSON file."""
    try:
        raw = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ScriptError(f"{path}: {exc}") from None
    return parse_script(raw)


def estimate_tokens(value: Any) -> int:
    """Rough token count (four characters per token) for usage the script does not give."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return max(1, len(text) // 4)
