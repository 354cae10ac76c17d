"""A fake Anthropic Messages API: ``POST /v1/messages`` (JSON or SSE stream) from a script.

Also answers ``POST /v1/messages/count_tokens`` and the connectivity probe ``HEAD /``-style
requests the Claude Code CLI makes, so the real CLI can run against it with
``ANTHROPIC_BASE_URL``. Anything else is a logged 404.
"""

from __future__ import annotations

import json
from typing import Any

from forgekernel.fakes.script import Step, estimate_tokens
from forgekernel.fakes.server import FakeServer, Reply, pieces, sse

ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error",
               403: "permission_error", 404: "not_found_error", 413: "request_too_large",
               429: "rate_limit_error", 529: "overloaded_error"}


def error_body(status: int, message: str) -> dict[str, Any]:
    kind = ERROR_TYPES.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message or kind}}


class FakeAnthropic(FakeServer):
    """Scripted Messages API on loopback."""

    kind = "anthropic"

    def route(self, method: str, path: str, headers: dict[str, str],
              body: Any) -> tuple[Reply, int | None]:
        if method == "HEAD" or path in ("/", "/api/hello"):
            return Reply(200), None
        if method != "POST" or not path.startswith("/v1/messages"):
            return Reply(404, error_body(404, f"fake anthropic: no route {method} {path}")), None
        if not self.authorised(headers):
            return Reply(401, error_body(401, "invalid x-api-key")), None
        if not isinstance(body, dict):
            return Reply(400, error_body(400, "body must be a JSON object")), None
        if path.endswith("/count_tokens"):
            return Reply(200, {"input_tokens": estimate_tokens(body.get("messages", []))}), None
        bad = _bad_thinking(body)
        if bad:
            return Reply(400, error_body(400, bad)), None
        step, index = self.take()
        if step.error is not None:
            headers_out = {"retry-after": "0"} if step.error == 429 else None
            return Reply(step.error, error_body(step.error, step.message), headers=headers_out), index
        message = self.message(step, body, index)
        if body.get("stream"):
            return Reply(200, events=sse(stream_events(message))), index
        return Reply(200, message), index

    def message(self, step: Step, request: dict[str, Any], index: int | None) -> dict[str, Any]:
        n = len(self.requests)
        content: list[dict[str, Any]] = []
        if step.thinking and (request.get("thinking") or {}).get("type") == "enabled":
            content.append({"type": "thinking", "thinking": step.thinking, "signature": f"fake-sig-{n}"})
        if step.text:
            content.append({"type": "text", "text": step.text})
        for k, call in enumerate(step.tool_calls):
            content.append({"type": "tool_use", "id": call.id or f"toolu_fake_{n}_{k}",
                            "name": call.name, "input": call.input})
        usage = {"input_tokens": step.usage.get("input_tokens",
                                                estimate_tokens(request.get("messages", []))),
                 "output_tokens": step.usage.get("output_tokens", estimate_tokens(content)),
                 "cache_creation_input_tokens": step.usage.get("cache_write", 0),
                 "cache_read_input_tokens": step.usage.get("cache_read", 0)}
        return {"id": f"msg_fake_{n}", "type": "message", "role": "assistant",
                "model": request.get("model", "fake"), "content": content,
                "stop_reason": step.stop_reason, "stop_sequence": None, "usage": usage}


def _bad_thinking(body: dict[str, Any]) -> str:
    """The API's refusal of an extended-thinking request it would not take ('' when fine)."""
    thinking = body.get("thinking")
    if not isinstance(thinking, dict) or thinking.get("type") != "enabled":
        return ""
    budget = thinking.get("budget_tokens")
    if not isinstance(budget, int) or budget < 1024:
        return "thinking.budget_tokens: must be at least 1024"
    if budget >= int(body.get("max_tokens") or 0):
        return "max_tokens must be greater than thinking.budget_tokens"
    if "temperature" in body:
        return "temperature may not be set when thinking is enabled"
    return ""


def stream_events(message: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The SSE event sequence of a streamed Messages API response."""
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None,
             "usage": {**usage, "output_tokens": 1}}
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start",
                                                                     "message": start})]
    for i, block in enumerate(message["content"]):
        if block["type"] == "text":
            head, deltas = {"type": "text", "text": ""}, [
                {"type": "text_delta", "text": t} for t in pieces(block["text"])]
        elif block["type"] == "thinking":
            head = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [*({"type": "thinking_delta", "thinking": t} for t in pieces(block["thinking"])),
                      {"type": "signature_delta", "signature": block["signature"]}]
        else:
            head = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": t}
                      for t in pieces(json.dumps(block["input"]))]
        events.append(("content_block_start", {"type": "content_block_start", "index": i,
                                               "content_block": head}))
        events += [("content_block_delta", {"type": "content_block_delta", "index": i, "delta": d})
                   for d in deltas]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    events.append(("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": message["stop_reason"],
                                               "stop_sequence": None},
                                     "usage": {"output_tokens": usage["output_tokens"]}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events
