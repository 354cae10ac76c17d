"""A fake OpenAI-compatible chat-completions server (``POST /v1/chat/completions``).

Answers as JSON or, when the request says ``"stream": true``, as SSE chunks with tool-call
argument deltas and a final usage chunk (``stream_options.include_usage``). Also serves
``GET /v1/models``. Scripted steps use the same :class:`Step` as the Anthropic fake; a
``stop`` of ``max_tokens`` maps to ``finish_reason = "length"``.
"""

from __future__ import annotations

import json
import time
from typing import Any

from forgekernel.fakes.script import Step, estimate_tokens
from forgekernel.fakes.server import FakeServer, Reply, pieces, sse

FINISH = {"tool_use": "tool_calls", "end_turn": "stop", "max_tokens": "length"}


def error_body(status: int, message: str) -> dict[str, Any]:
    kind = {401: "invalid_api_key", 404: "model_not_found", 429: "rate_limit_exceeded"}.get(
        status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message or kind, "type": kind, "param": None, "code": kind}}


class FakeOpenAI(FakeServer):
    """Scripted chat-completions API on loopback."""

    kind = "openai"

    def route(self, method: str, path: str, headers: dict[str, str],
              body: Any) -> tuple[Reply, int | None]:
        path = path.rstrip("/")
        if method == "GET" and path.endswith("/models"):
            return Reply(200, {"object": "list", "data": [{"id": "fake", "object": "model",
                                                           "owned_by": "forgekernel"}]}), None
        if method != "POST" or not path.endswith("/chat/completions"):
            return Reply(404, error_body(404, f"fake openai: no route {method} {path}")), None
        if not self.authorised(headers):
            return Reply(401, error_body(401, "Incorrect API key provided")), None
        if not isinstance(body, dict):
            return Reply(400, error_body(400, "body must be a JSON object")), None
        step, index = self.take()
        if step.error is not None:
            headers_out = {"retry-after": "0"} if step.error == 429 else None
            return Reply(step.error, error_body(step.error, step.message), headers=headers_out), index
        completion = self.completion(step, body)
        if body.get("stream"):
            usage = (body.get("stream_options") or {}).get("include_usage", False)
            return Reply(200, events=sse(stream_chunks(completion, usage))), index
        return Reply(200, completion), index

    def completion(self, step: Step, request: dict[str, Any]) -> dict[str, Any]:
        n = len(self.requests)
        calls = [{"id": c.id or f"call_fake_{n}_{k}", "type": "function",
                  "function": {"name": c.name, "arguments": json.dumps(c.input)}}
                 for k, c in enumerate(step.tool_calls)]
        message: dict[str, Any] = {"role": "assistant", "content": step.text or None}
        if calls:
            message["tool_calls"] = calls
        prompt = step.usage.get("input_tokens", estimate_tokens(request.get("messages", [])))
        out = step.usage.get("output_tokens", estimate_tokens([step.text, calls]))
        return {"id": f"chatcmpl-fake-{n}", "object": "chat.completion", "created": int(time.time()),
                "model": request.get("model", "fake"),
                "choices": [{"index": 0, "message": message,
                             "finish_reason": FINISH.get(step.stop_reason, "stop")}],
                "usage": {"prompt_tokens": prompt, "completion_tokens": out,
                          "total_tokens": prompt + out,
                          "prompt_tokens_details": {"cached_tokens": step.usage.get("cached_tokens", 0)}}}


def stream_chunks(completion: dict[str, Any], include_usage: bool) -> list[tuple[None, Any]]:
    """The SSE chunks of a streamed completion, ending with ``[DONE]``."""
    head = {k: completion[k] for k in ("id", "created", "model")}
    head["object"] = "chat.completion.chunk"
    choice = completion["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[None, Any]:
        return None, {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"content": t}) for t in pieces(message["content"] or "") if t]
    for i, call in enumerate(message.get("tool_calls", [])):
        out.append(chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                          "function": {"name": call["function"]["name"],
                                                       "arguments": ""}}]}))
        out += [chunk({"tool_calls": [{"index": i, "function": {"arguments": t}}]})
                for t in pieces(call["function"]["arguments"])]
    out.append(chunk({}, choice["finish_reason"]))
    if include_usage:
        out.append((None, {**head, "choices": [], "usage": completion["usage"]}))
    out.append((None, "[DONE]"))
    return out
