"""``--agent anthropic``: the tool-use loop over the Anthropic Messages API (``anthropic`` SDK).

Credentials: ``ANTHROPIC_API_KEY`` (or ``ANTHROPIC_AUTH_TOKEN``) through
:func:`forgekernel.config.secret`; ``ANTHROPIC_BASE_URL`` / ``Settings.anthropic_base_url``
for a proxy or the loopback fake. Streams responses by default (``stream=False`` to ask
for whole messages). The SDK's own retries are off: :mod:`llm_common` retries with backoff.
"""

from __future__ import annotations

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

NAME = "anthropic"
DEFAULT_MODEL = "claude-sonnet-4-5"
DEFAULT_BASE_URL = "https://api.anthropic.com"
THINKING_TOKENS = {"low": 2048, "medium": 8192, "high": 24576}
"""Extended-thinking budget per ``--effort`` level (tokens the model may think per response)."""
CACHED = {"type": "ephemeral"}


class AnthropicChat:
    """One Messages API conversation (see :class:`forgekernel.agents.llm_common.Chat`)."""

    provider = NAME

    def __init__(self, client: Any, sdk: Any, model: str, limits: Limits, stream: bool,
                 thinking: int | None = None) -> None:
        self.client, self.sdk, self.model, self.limits, self.stream = client, sdk, model, limits, stream
        self.thinking = thinking
        self.system = ""
        self.messages: list[dict[str, Any]] = []

    def reset(self, system: str, user: str) -> None:
        self.system = system
        self.messages = [{"role": "user", "content": user}]

    def params(self, tools: list[Tool]) -> dict[str, Any]:
        """The request: the system prompt (tools and system cached up to it) and the newest
        message marked as cache breakpoints, so each turn re-reads the conversation from the
        prompt cache instead of paying for it again; extended thinking when asked for."""
        params: dict[str, Any] = dict(
            model=self.model, max_tokens=self.limits.max_tokens,
            system=[{"type": "text", "text": self.system, "cache_control": CACHED}],
            messages=[*self.messages[:-1], _marked(self.messages[-1])],
            tools=[{"name": t.name, "description": t.description, "input_schema": t.parameters}
                   for t in tools])
        if self.thinking:
            params["thinking"] = {"type": "enabled", "budget_tokens": self.thinking}
            params["max_tokens"] = max(self.limits.max_tokens, self.thinking + 4096)
        return params

    def step(self, tools: list[Tool]) -> Reply:
        params = self.params(tools)
        sdk = self.sdk
        try:
            if self.stream:
                with self.client.messages.stream(**params) as s:
                    msg = s.get_final_message()
            else:
                msg = self.client.messages.create(**params)
        except sdk.APIStatusError as exc:
            raise api_error(NAME, exc.status_code, _message(exc), self.model, "ANTHROPIC_API_KEY",
                            retry_after(exc)) from None
        except sdk.APIConnectionError as exc:
            raise Transient(f"{NAME} API: {type(exc).__name__}: {exc}") from None
        self.messages.append({"role": "assistant", "content": msg.content})
        calls = tuple(ToolRequest(b.id, b.name, b.input if isinstance(b.input, dict) else None)
                      for b in msg.content if b.type == "tool_use")
        text = "".join(b.text for b in msg.content if b.type == "text")
        u = msg.usage
        write, read = u.cache_creation_input_tokens or 0, u.cache_read_input_tokens or 0
        return Reply(text, calls, u.input_tokens + write + read, u.output_tokens, msg.stop_reason or "",
                     cache_read=read, cache_write=write)

    def add_results(self, reply: Reply, results: list[tuple[ToolRequest, ToolOutcome]]) -> None:
        self.messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": c.id, "content": o.text, "is_error": o.is_error}
            for c, o in results]})

    def add_user(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})

    def close(self) -> None:
        self.client.close()


def _marked(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` with its last content block as a cache breakpoint (a copy: the history
    keeps no marks, so at most two breakpoints are ever sent)."""
    content = message["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
    if not blocks or not isinstance(blocks[-1], dict):
        return message
    return {**message, "content": [*blocks[:-1], {**blocks[-1], "cache_control": CACHED}]}


def _message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return str(body["error"].get("message", exc))
    return str(getattr(exc, "message", exc))


def known_model(settings: Any) -> str:
    """The model this backend calls: FK_MODEL / --model, else the default."""
    return settings.model or DEFAULT_MODEL


def _chat_factory(settings: Any, kw: dict[str, Any]):
    try:
        import anthropic
    except ImportError:
        raise AgentError(f"--agent {NAME} needs the anthropic SDK (not installed; "
                         "pip install 'forgekernel[llm]')") from None
    api_key = kw.pop("api_key", None) or config.secret("ANTHROPIC_API_KEY")
    token = None if api_key else config.secret("ANTHROPIC_AUTH_TOKEN")
    if not api_key and not token:
        raise AgentError(f"--agent {NAME} needs ANTHROPIC_API_KEY (not set); see forge doctor")
    base_url = kw.pop("base_url", None) or settings.anthropic_base_url or DEFAULT_BASE_URL
    model = kw.pop("model", None) or known_model(settings)
    stream = kw.pop("stream", True)
    effort = getattr(settings, "effort", None)
    thinking = THINKING_TOKENS[effort] if effort else None
    limits = priced(limits_from(kw), settings, model)
    if kw:
        raise TypeError(f"unknown options for the {NAME} backend: {sorted(kw)}")

    def new_chat() -> AnthropicChat:
        client = anthropic.Anthropic(api_key=api_key, auth_token=token, base_url=base_url,
                                     max_retries=0, timeout=limits.timeout_s)
        return AnthropicChat(client, anthropic, model, limits, stream, thinking)

    return new_chat, limits


def make_coder(settings: Any, **kw: Any) -> LoopCoder:
    """Coder over the Messages API. Options: api_key, base_url, model, stream, limits,
    any :class:`Limits` field (max_turns, retries, backoff_s, ...), sleep."""
    return loop_coder(NAME, _chat_factory, settings, kw)


def make_architect(settings: Any, **kw: Any) -> LoopArchitect:
    """Architect over the Messages API; same options as :func:`make_coder`."""
    return loop_architect(NAME, _chat_factory, settings, kw)
