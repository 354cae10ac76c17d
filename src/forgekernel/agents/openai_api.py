"""``--agent openai``: the tool-use loop over chat completions (``openai`` SDK).

Works with OpenAI and with OpenAI-compatible servers (vLLM, SGLang, Ollama, ...) through
``OPENAI_BASE_URL`` / ``Settings.openai_base_url``. Credentials: ``OPENAI_API_KEY`` through
:func:`forgekernel.config.secret`; a custom base URL may run without one (local servers).
Without ``--model``, a custom server's model is the one it lists at ``GET /models``.
Streams against api.openai.com (tool-call argument deltas assembled here, usage from the
final chunk via ``stream_options.include_usage``); against other servers it asks for whole
responses unless ``stream=True`` is given, since not every compatible server streams tool
calls or accepts ``stream_options``.
"""

from __future__ import annotations

import json
from typing import Any

from forgekernel import config
from forgekernel.agents.base import AgentError
from forgekernel.agents.llm_common import (
    Limits,
    LoopArchitect,
    LoopCoder,
    Reply,
    ToolRequest,
    Transient,
    api_error,
    limits_from,
    loop_architect,
    loop_coder,
    priced,
    retry_after,
)
from forgekernel.agents.tools import Tool, ToolOutcome

NAME = "openai"
DEFAULT_MODEL = "gpt-4.1"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
FALLBACK_MODEL = "default"
"""Model name sent to a compatible server that lists no model (it picks its own)."""


class OpenAIChat:
    """One chat-completions conversation (see :class:`forgekernel.agents.llm_common.Chat`)."""

    provider = NAME

    def __init__(self, client: Any, sdk: Any, model: str, limits: Limits, stream: bool,
                 max_tokens_key: str, effort: str | None = None) -> None:
        self.client, self.sdk, self.model, self.limits = client, sdk, model, limits
        self.stream, self.max_tokens_key, self.effort = stream, max_tokens_key, effort
        self.messages: list[dict[str, Any]] = []

    def reset(self, system: str, user: str) -> None:
        self.messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def step(self, tools: list[Tool]) -> Reply:
        params: dict[str, Any] = {
            "model": self.model, "messages": self.messages, self.max_tokens_key: self.limits.max_tokens,
            "tools": [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                        "parameters": t.parameters}} for t in tools]}
        if self.effort:
            params["reasoning_effort"] = self.effort
        try:
            if self.stream:
                stream = self.client.chat.completions.create(
                    **params, stream=True, stream_options={"include_usage": True})
                text, raw_calls, usage, finish = _assemble(stream)
            else:
                resp = self.client.chat.completions.create(**params)
                text, raw_calls, usage, finish = _whole(resp)
        except self.sdk.APIStatusError as exc:
            raise api_error(NAME, exc.status_code, _message(exc), self.model, "OPENAI_API_KEY",
                            retry_after(exc)) from None
        except self.sdk.APIConnectionError as exc:
            raise Transient(f"{NAME} API: {type(exc).__name__}: {exc}") from None
        assistant: dict[str, Any] = {"role": "assistant", "content": text or None}
        if raw_calls:
            assistant["tool_calls"] = [{"id": c["id"], "type": "function",
                                        "function": {"name": c["name"], "arguments": c["arguments"]}}
                                       for c in raw_calls]
        self.messages.append(assistant)
        calls = tuple(ToolRequest(c["id"], c["name"], _args(c["arguments"])) for c in raw_calls)
        return Reply(text, calls, usage[0], usage[1], finish, cache_read=usage[2])

    def add_results(self, reply: Reply, results: list[tuple[ToolRequest, ToolOutcome]]) -> None:
        for call, out in results:
            self.messages.append({"role": "tool", "tool_call_id": call.id,
                                  "content": ("ERROR: " if out.is_error else "") + out.text})

    def add_user(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})

    def close(self) -> None:
        self.client.close()


def _assemble(stream: Any) -> tuple[str, list[dict[str, str]], tuple[int, int], str]:
    """Text, tool calls (by index), usage and finish reason from streamed chunks."""
    text: list[str] = []
    calls: dict[int, dict[str, str]] = {}
    usage, finish = (0, 0, 0), ""
    for chunk in stream:
        if chunk.usage is not None:
            usage = _usage(chunk.usage)
        for choice in chunk.choices:
            delta = choice.delta
            if delta.content:
                text.append(delta.content)
            for n, tc in enumerate(delta.tool_calls or ()):
                index = tc.index if isinstance(tc.index, int) else n
                slot = calls.setdefault(index, {"id": "", "name": "", "arguments": ""})
                slot["id"] = tc.id or slot["id"]
                if tc.function is not None:
                    slot["name"] += tc.function.name or ""
                    slot["arguments"] += _text_args(tc.function.arguments)
            finish = choice.finish_reason or finish
    ordered = [calls[i] for i in sorted(calls)]
    for i, c in enumerate(ordered):
        c["id"] = c["id"] or f"call_{i}"
    return "".join(text), ordered, usage, finish


def _whole(resp: Any) -> tuple[str, list[dict[str, str]], tuple[int, int], str]:
    choice = resp.choices[0]
    msg = choice.message
    calls = [{"id": tc.id or f"call_{i}", "name": tc.function.name,
              "arguments": _text_args(tc.function.arguments)}
             for i, tc in enumerate(msg.tool_calls or ())]
    usage = _usage(resp.usage) if resp.usage else (0, 0, 0)
    return msg.content or "", calls, usage, choice.finish_reason or ""


def _text_args(raw: Any) -> str:
    """Arguments as the JSON text the API specifies (some servers send an object)."""
    return json.dumps(raw) if isinstance(raw, dict) else str(raw or "")


def _args(raw: str) -> dict[str, Any] | None:
    try:
        value = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict) and body.get("message"):
        return str(body["message"])
    return str(getattr(exc, "message", exc))


def _official(url: str) -> bool:
    return "api.openai.com" in url


def known_model(settings: Any) -> str | None:
    """The model this backend calls when that is known without asking a server: FK_MODEL /
    --model, else the default on OpenAI's own API (a local server is asked when the agent is
    built)."""
    if settings.model:
        return settings.model
    return DEFAULT_MODEL if _official(settings.openai_base_url or DEFAULT_BASE_URL) else None


def _chat_factory(settings: Any, kw: dict[str, Any]):
    try:
        import openai
    except ImportError:
        raise AgentError(f"--agent {NAME} needs the openai SDK (not installed; "
                         "pip install 'forgekernel[llm]')") from None
    base_url = kw.pop("base_url", None) or settings.openai_base_url
    api_key = kw.pop("api_key", None) or config.secret("OPENAI_API_KEY")
    if not api_key and not base_url:
        raise AgentError(f"--agent {NAME} needs OPENAI_API_KEY (not set), or OPENAI_BASE_URL "
                         "for a local OpenAI-compatible server; see forge doctor")
    url = base_url or DEFAULT_BASE_URL
    official = _official(url)
    stream = kw.pop("stream", official)
    model = kw.pop("model", None) or settings.model
    limits = limits_from(kw)
    if kw:
        raise TypeError(f"unknown options for the {NAME} backend: {sorted(kw)}")

    def client() -> Any:
        return openai.OpenAI(api_key=api_key or "no-key", base_url=url, max_retries=0,
                             timeout=limits.timeout_s)

    if not model:
        with client() as c:
            model = DEFAULT_MODEL if official else served_model(c, openai, url)
    limits = priced(limits, settings, model)
    # api.openai.com's newer models take max_completion_tokens; compatible servers max_tokens.
    key = "max_completion_tokens" if official else "max_tokens"
    effort = getattr(settings, "effort", None)
    return (lambda: OpenAIChat(client(), openai, model, limits, stream, key, effort)), limits


def _usage(u: Any) -> tuple[int, int, int]:
    """Prompt, completion and cached prompt tokens (``prompt_tokens_details.cached_tokens``)."""
    details = getattr(u, "prompt_tokens_details", None)
    cached = (getattr(details, "cached_tokens", None) or 0) if details is not None else 0
    return u.prompt_tokens or 0, u.completion_tokens or 0, cached


def served_model(client: Any, sdk: Any, url: str) -> str:
    """The model a local server serves, when it serves exactly one (GET /models)."""
    try:
        ids = [m.id for m in client.models.list()]
    except (sdk.APIError, ValueError, TypeError):
        return FALLBACK_MODEL  # a server without /models: it answers whatever model it has
    if len(ids) == 1:
        return ids[0]
    if not ids:
        return FALLBACK_MODEL
    raise AgentError(f"--agent {NAME}: {url} serves {len(ids)} models ({', '.join(ids[:8])}); "
                     "pick one with --model or FK_MODEL")


def make_coder(settings: Any, **kw: Any) -> LoopCoder:
    """Coder over chat completions. Options: api_key, base_url, model, stream, limits,
    any :class:`Limits` field (max_turns, retries, backoff_s, ...), sleep."""
    return loop_coder(NAME, _chat_factory, settings, kw)


def make_architect(settings: Any, **kw: Any) -> LoopArchitect:
    """Architect over chat completions; same options as :func:`make_coder`."""
    return loop_architect(NAME, _chat_factory, settings, kw)
