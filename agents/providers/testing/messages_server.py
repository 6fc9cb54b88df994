"""A real local HTTP server speaking the Anthropic Messages API, for tests.

`POST /v1/messages` (streamed as server-sent events when the request asks, else one
JSON message) and `POST /v1/messages/count_tokens`. Answers come from a queue the test
fills (`push_text`, `push_tool_use`, `push_content`, `push_error`, `push_raw`, ...; an
error message holding `PRESENTED_KEY` echoes the request's key, see _server); with the
queue empty it answers a default text reply. A streamed answer can fail the ways real streams
do (`fault=StreamFault(...)`: stall, `error` event, dropped connection, an event whose
data is not JSON), come without usage (`no_usage=True`, as some proxies send it), or
be a 429 asking for a wait in either header (`push_rate_limit(s, header=...)`).

What it receives is checked as the real API checks it, and a mistake is answered with
the real 400 (`invalid_request_error`) and kept in `problems`:
  - every tool_use is answered by a tool_result in the next message, and every
    tool_result answers a tool_use of the previous message;
  - at most 4 blocks carry cache_control; no text block is empty;
  - thinking blocks come back with the signature this server gave them; with thinking
    on, an assistant message still waiting for tool results starts with a thinking
    block; budget_tokens is below max_tokens (unless the interleaved beta is on).

    with FakeMessagesServer() as server:
        server.push_rate_limit(retry_after_s=0.01)
        server.push_text("hello")
        client = AnthropicModelClient("claude-x", api_key="k", base_url=server.url)

Run by hand, it serves a fixed port (answering "ok") for a `workingset run` against it;
a port already taken is one line and exit 2:

    python3 -m agents.providers.testing.messages_server --port 8012     # then ANTHROPIC_BASE_URL=http://127.0.0.1:8012
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from agents.providers.testing._server import (
    FakeApiServer,
    RecordedRequest,
    StreamFault,
    json_error,
    pieces,
    presented_key,
    retry_after,
    serve_by_hand,
    sse_response,
    with_presented_key,
)

__all__ = [
    "FakeMessagesServer",
    "RecordedRequest",
    "ScriptedResponse",
    "StreamFault",
    "error_body",
    "presented_key",
    "sign",
]

DEFAULT_TEXT = "ok"
_SIGNING_KEY = "fake-messages-server"
INTERLEAVED = "interleaved-thinking-2025-05-14"


def sign(thinking: str) -> str:
    """The signature this server gives (and expects back on) a thinking block."""
    return hashlib.sha256(f"{_SIGNING_KEY}:{thinking}".encode()).hexdigest()[:40]


@dataclass(frozen=True)
class ScriptedResponse:
    """One queued answer. `body` of None means "a message built from `content`"."""

    status: int = 200
    body: dict[str, Any] | None = None
    content: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str = "end_turn"
    stop_details: dict[str, Any] | None = None
    usage: dict[str, int] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    fault: StreamFault | None = None
    chunk_chars: int = 8
    raw: tuple[str, str] | None = None  # (body, content type): sent exactly as it is
    no_usage: bool = False  # the stream carries no usage at all (as some proxies send it)


def error_body(error_type: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type, "message": message}}


class FakeMessagesServer(FakeApiServer):
    name = "fake-messages-server"

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(host=host, port=port)
        self.token_counts: list[int] = []  # answers of count_tokens, in order; then an estimate
        self.required_key: str | None = None  # set: a request without this x-api-key gets the real 401

    def routes(self) -> list[Route]:
        return [
            Route("/v1/messages", self._messages, methods=["POST"]),
            Route("/v1/messages/count_tokens", self._count_tokens, methods=["POST"]),
        ]

    def reset(self) -> None:
        super().reset()
        self.token_counts.clear()
        self.required_key = None

    # ---------------------------------------------------------------- scripting

    def push_text(
        self,
        text: str = DEFAULT_TEXT,
        *,
        stop_reason: str = "end_turn",
        usage: dict[str, int] | None = None,
        fault: StreamFault | None = None,
        stop_details: dict[str, Any] | None = None,
        no_usage: bool = False,
    ) -> None:
        self.push(
            ScriptedResponse(
                content=[{"type": "text", "text": text}],
                stop_reason=stop_reason,
                usage=dict(usage or {}),
                fault=fault,
                stop_details=stop_details,
                no_usage=no_usage,
            )
        )

    def push_tool_use(
        self,
        name: str,
        input: dict[str, Any],
        *,
        id: str | None = None,
        text: str | None = None,
        usage: dict[str, int] | None = None,
        no_usage: bool = False,
    ) -> None:
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text is not None else []
        content.append({"type": "tool_use", "id": id or f"toolu_{next(self.ids):04d}", "name": name, "input": input})
        self.push(ScriptedResponse(content=content, stop_reason="tool_use", usage=dict(usage or {}), no_usage=no_usage))

    def push_content(
        self,
        content: list[dict[str, Any]],
        *,
        stop_reason: str = "end_turn",
        usage: dict[str, int] | None = None,
        fault: StreamFault | None = None,
        no_usage: bool = False,
    ) -> None:
        """A reply with arbitrary blocks. A thinking block without a `signature` is signed
        here; a tool_use may give `partial_json` (raw argument text) instead of `input`;
        text may hold what JSON can escape but UTF-8 cannot encode (a lone surrogate)."""
        self.push(
            ScriptedResponse(
                content=list(content), stop_reason=stop_reason, usage=dict(usage or {}), fault=fault, no_usage=no_usage
            )
        )

    def push_error(self, status: int, error_type: str, message: str, *, headers: dict[str, str] | None = None) -> None:
        self.push(ScriptedResponse(status=status, body=error_body(error_type, message), headers=dict(headers or {})))

    def push_raw(self, body: str, *, status: int = 200, content_type: str = "application/json") -> None:
        """An answer that is not what the API sends (an empty or HTML body, JSON that is not a message)."""
        self.push(ScriptedResponse(status=status, raw=(body, content_type)))

    def push_rate_limit(
        self, retry_after_s: float | None = None, message: str = "Rate limited", *, header: str = "retry-after-ms"
    ) -> None:
        """A 429 asking to wait `retry_after_s`, in `retry-after-ms` (Anthropic's) or the
        standard `retry-after` (whole seconds)."""
        headers = {} if retry_after_s is None else {header: retry_after(retry_after_s, header)}
        self.push_error(429, "rate_limit_error", message, headers=headers)

    def push_overloaded(self, message: str = "Overloaded") -> None:
        self.push_error(529, "overloaded_error", message, headers={"retry-after-ms": "1"})

    def push_server_error(self, message: str = "Internal server error") -> None:
        self.push_error(500, "api_error", message, headers={"retry-after-ms": "1"})

    def push_auth_error(self, message: str = "invalid x-api-key") -> None:
        self.push_error(401, "authentication_error", message)

    def push_prompt_too_long(self, actual_tokens: int, limit_tokens: int) -> None:
        self.push_error(
            400, "invalid_request_error", f"prompt is too long: {actual_tokens} tokens > {limit_tokens} maximum"
        )

    # ------------------------------------------------------------------ serving

    async def _count_tokens(self, request: Request) -> Response:
        recorded = await self.record(request)
        problems = self.refuse(check_request(recorded.body, recorded.headers, counting=True))
        if problems:
            return json_error(400, error_body("invalid_request_error", problems[0]))
        count = self.token_counts.pop(0) if self.token_counts else len(json.dumps(recorded.body)) // 4
        return JSONResponse({"input_tokens": count})

    async def _messages(self, request: Request) -> Response:
        recorded = await self.record(request)
        if self.required_key is not None and presented_key(recorded.headers) != self.required_key:
            return json_error(401, error_body("authentication_error", "invalid x-api-key"))
        body = recorded.body if isinstance(recorded.body, dict) else {}
        problems = self.refuse(check_request(body, recorded.headers))
        if problems:
            return json_error(400, error_body("invalid_request_error", problems[0]))
        scripted = self.next_answer(ScriptedResponse(content=[{"type": "text", "text": DEFAULT_TEXT}]))
        headers = {"request-id": f"req_fake_{next(self.ids):06d}", **scripted.headers}
        if scripted.raw is not None:
            return Response(scripted.raw[0], status_code=scripted.status, media_type=scripted.raw[1], headers=headers)
        if scripted.body is not None:
            return json_error(scripted.status, with_presented_key(scripted.body, recorded.headers), headers)
        message = self._message(body.get("model", "claude-fake"), scripted)
        if body.get("stream"):
            return sse_response(_events(message, scripted), fault=scripted.fault, headers=headers)
        message["content"] = [_final_block(b) for b in message["content"]]
        return JSONResponse(message, headers=headers)

    def _message(self, model: str, scripted: ScriptedResponse) -> dict[str, Any]:
        usage = {
            "input_tokens": 10,
            "output_tokens": 5,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            **scripted.usage,
        }
        content = []
        for block in scripted.content:
            if block.get("type") == "thinking" and block.get("signature") is None:
                block = {**block, "signature": sign(block["thinking"])}
            content.append(block)
        return {
            "id": f"msg_fake_{next(self.ids):06d}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": scripted.stop_reason,
            "stop_sequence": None,
            "stop_details": scripted.stop_details,
            "usage": usage,
        }


def _final_block(block: dict[str, Any]) -> dict[str, Any]:
    if block.get("type") == "tool_use" and "partial_json" in block:
        return {k: v for k, v in block.items() if k != "partial_json"} | {"input": {}}
    return block


def _block_events(index: int, block: dict[str, Any], size: int) -> list[tuple[str, Any]]:
    kind = block["type"]
    start: dict[str, Any]
    deltas: list[dict[str, Any]] = []
    if kind == "text":
        start = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": p} for p in pieces(block["text"], size)]
    elif kind == "thinking":
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [{"type": "thinking_delta", "thinking": p} for p in pieces(block["thinking"], size)]
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
    elif kind == "tool_use":
        start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        raw = block["partial_json"] if "partial_json" in block else json.dumps(block["input"])
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces(raw, size)]
    else:
        start = dict(block)
    events = [("content_block_start", {"type": "content_block_start", "index": index, "content_block": start})]
    events += [("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}) for d in deltas]
    events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    return events


def _events(message: dict[str, Any], scripted: ScriptedResponse) -> list[tuple[str, Any]]:
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    start.pop("stop_details", None)
    if scripted.no_usage:
        del start["usage"]
    events: list[tuple[str, Any]] = [
        ("message_start", {"type": "message_start", "message": start}),
        ("ping", {"type": "ping"}),
    ]
    for index, block in enumerate(message["content"]):
        events += _block_events(index, block, scripted.chunk_chars)
    delta = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    if message.get("stop_details") is not None:
        delta["stop_details"] = message["stop_details"]
    ending = {"type": "message_delta", "delta": delta}
    if not scripted.no_usage:
        ending["usage"] = {"output_tokens": usage["output_tokens"]}
    events.append(("message_delta", ending))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


# -------------------------------------------------------------------- what the API checks


def _cache_marks(body: dict[str, Any]) -> int:
    blocks = [*(body.get("system") or []), *(body.get("tools") or [])]
    blocks += [
        b for m in body.get("messages", []) for b in (m.get("content") if isinstance(m.get("content"), list) else [])
    ]
    return sum(1 for b in blocks if isinstance(b, dict) and "cache_control" in b)


def _blocks(message: dict[str, Any]) -> list[Any] | None:
    """A message's content blocks; None when its content is a string (or missing)."""
    content = message.get("content")
    return content if isinstance(content, list) else None


def _pairing_problems(messages: list[dict[str, Any]]) -> list[str]:
    problems = []
    for i, message in enumerate(messages):
        content = _blocks(message) or []
        previous = (_blocks(messages[i - 1]) if i > 0 else None) or []
        following = _blocks(messages[i + 1]) if i + 1 < len(messages) else None
        if message.get("role") == "assistant":
            uses = [b["id"] for b in content if b.get("type") == "tool_use"]
            answered = {b.get("tool_use_id") for b in (following or []) if b.get("type") == "tool_result"}
            missing = [u for u in uses if u not in answered]
            if missing and following is not None:
                problems.append(
                    f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately "
                    f"after: {', '.join(missing)}. Each `tool_use` block must have a corresponding "
                    "`tool_result` block in the next message."
                )
        else:
            offered = {b.get("id") for b in previous if b.get("type") == "tool_use"}
            stray = [
                b.get("tool_use_id")
                for b in content
                if b.get("type") == "tool_result" and b.get("tool_use_id") not in offered
            ]
            if stray:
                problems.append(
                    f"messages.{i}.content: unexpected `tool_use_id` found in `tool_result` blocks: "
                    f"{', '.join(stray)}. Each `tool_result` block must have a corresponding `tool_use` "
                    "block in the previous message."
                )
    return problems


def _thinking_problems(body: dict[str, Any], headers: dict[str, str]) -> list[str]:
    problems = []
    thinking = body.get("thinking") or {}
    messages = body.get("messages", [])
    for i, message in enumerate(messages):
        content = message.get("content") if isinstance(message.get("content"), list) else []
        for j, block in enumerate(content):
            if block.get("type") == "thinking" and block.get("signature") != sign(block.get("thinking", "")):
                problems.append(f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block")
    interleaved = INTERLEAVED in headers.get("anthropic-beta", "")
    if (
        thinking.get("type") == "enabled"
        and not interleaved
        and thinking.get("budget_tokens", 0) >= body.get("max_tokens", 0)
    ):
        problems.append("`max_tokens` must be greater than `thinking.budget_tokens`")
    if thinking.get("type") in ("enabled", "adaptive") and len(messages) >= 2:
        last_assistant = next((m for m in reversed(messages) if m.get("role") == "assistant"), None)
        waiting = messages[-1].get("role") == "user" and any(
            b.get("type") == "tool_result" for b in messages[-1].get("content") or [] if isinstance(b, dict)
        )
        if last_assistant is not None and waiting:
            first = (last_assistant.get("content") or [{}])[0]
            if first.get("type") not in ("thinking", "redacted_thinking"):
                problems.append(
                    f"messages.{messages.index(last_assistant)}.content.0.type: Expected `thinking` or "
                    f"`redacted_thinking`, but found `{first.get('type')}`. When `thinking` is enabled, a "
                    "final `assistant` message must start with a thinking block."
                )
    return problems


def check_request(body: Any, headers: dict[str, str], *, counting: bool = False) -> list[str]:
    """What the real API would refuse in this request body."""
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return ["messages: Field required"]
    problems = []
    if not counting and not isinstance(body.get("max_tokens"), int):
        problems.append("max_tokens: Field required")
    marks = _cache_marks(body)
    if marks > 4:
        problems.append(f"A maximum of 4 blocks with cache_control may be provided. Found {marks}.")
    for i, message in enumerate(body["messages"]):
        content = message.get("content")
        if isinstance(content, list) and any(b.get("type") == "text" and not b.get("text") for b in content):
            problems.append(f"messages.{i}: text content blocks must be non-empty")
        if isinstance(content, list) and not content and i < len(body["messages"]) - 1:
            problems.append(f"messages.{i}: all messages must have non-empty content")
    problems += _pairing_problems(body["messages"])
    problems += _thinking_problems(body, headers)
    return problems


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="A fake Anthropic Messages API server on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=8012)
    sys.exit(
        serve_by_hand(
            FakeMessagesServer(port=parser.parse_args().port),
            "fake Messages API server on {url} (ANTHROPIC_BASE_URL={url}; Ctrl-C stops it)",
        )
    )
