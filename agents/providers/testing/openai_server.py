"""A real local HTTP server speaking OpenAI Chat Completions, for tests.

`POST /v1/chat/completions` (streamed as `data:` chunks ending in `[DONE]` when the
request asks, else one JSON completion) and `GET /v1/models`. Answers come from a queue
(`push_text`, `push_tool_calls`, `push_error`, ...); an empty queue answers "ok". An
error message holding `PRESENTED_KEY` echoes the request's key (see _server).

Each answer can play a compatible server's quirk (`Quirks`): no usage at all, usage on
the last choice chunk, reasoning in `reasoning_content` or `reasoning`, tool calls
without ids or with ids reused from earlier replies, finish_reason `stop` for tool
calls, arguments cut in pieces of any size — and fail mid-stream (`StreamFault`).

What it receives is checked as OpenAI checks it, and a mistake is answered with the
real 400 shape (`{"error": {"message", "type", "param", "code"}}`), kept in `problems`:
an assistant message's tool_calls are each answered by the `tool` messages right after
it, and a `tool` message answers a call of the assistant message before it.

Like a server that predates a request parameter, it can refuse one by name with the 400
older servers give ("Unrecognized request argument supplied: stream_options"): set
`refused_params` (cleared by `reset`), or `--refuse-param NAME` by hand.

Run by hand, it serves a fixed port for a `workingset run` against it (a port already
taken is one line and exit 2):

    python3 -m agents.providers.testing.openai_server --port 8011 [--replies replies.json] [--refuse-param stream_options]

`replies.json` is a list of answers ({"text", "tool_calls": [{"name", "input"}],
"reasoning", "finish_reason", "usage"}), given in order; then every answer is "ok".
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
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
    retry_after,
    serve_by_hand,
    sse_response,
    with_presented_key,
)

__all__ = ["FakeOpenAIServer", "Quirks", "RecordedRequest", "ScriptedCompletion", "StreamFault", "openai_error"]

DEFAULT_TEXT = "ok"


@dataclass(frozen=True)
class Quirks:
    usage: str = "final_chunk"  # final_chunk | last_choice | none
    reasoning_field: str = "reasoning_content"  # or "reasoning"
    omit_tool_ids: bool = False
    reuse_tool_ids: bool = False  # call_0, call_1, ... on every reply
    finish_reason: str | None = None  # override (e.g. "stop" with tool calls)
    no_index: bool = False  # tool-call pieces without `index`
    argument_chars: int = 7


@dataclass(frozen=True)
class ScriptedCompletion:
    status: int = 200
    body: dict[str, Any] | None = None  # an error body
    text: str | None = None
    reasoning: str | None = None
    refusal: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # {"name", "arguments" (str) or "input", "id"?}
    finish_reason: str = "stop"
    usage: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    fault: StreamFault | None = None
    quirks: Quirks = field(default_factory=Quirks)
    chunk_chars: int = 8


def openai_error(
    message: str, *, type: str = "invalid_request_error", code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


class FakeOpenAIServer(FakeApiServer):
    name = "fake-openai-server"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.refused_params: set[str] = set()  # request parameters answered with an older server's 400

    def reset(self) -> None:
        super().reset()
        self.refused_params = set()

    def routes(self) -> list[Route]:
        return [
            Route("/v1/chat/completions", self._completions, methods=["POST"]),
            Route("/v1/models", self._models, methods=["GET"]),
        ]

    # ---------------------------------------------------------------- scripting

    def push_text(self, text: str = DEFAULT_TEXT, **fields: Any) -> None:
        self.push(ScriptedCompletion(text=text, **fields))

    def push_tool_calls(self, calls: list[dict[str, Any]], *, text: str | None = None, **fields: Any) -> None:
        fields.setdefault("finish_reason", "tool_calls")
        self.push(ScriptedCompletion(text=text, tool_calls=list(calls), **fields))

    def push_error(
        self,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        code: str | None = None,
        headers: dict[str, str] | None = None,
        body: dict[str, Any] | None = None,
    ) -> None:
        payload = body if body is not None else openai_error(message, type=type, code=code)
        self.push(ScriptedCompletion(status=status, body=payload, headers=dict(headers or {})))

    def push_rate_limit(self, retry_after_s: float = 0.001, *, header: str = "retry-after-ms") -> None:
        """A 429 asking to wait `retry_after_s`, in `retry-after-ms` or `retry-after` (seconds)."""
        self.push_error(
            429,
            "Rate limit reached",
            type="requests",
            code="rate_limit_exceeded",
            headers={header: retry_after(retry_after_s, header)},
        )

    def push_server_error(self) -> None:
        self.push_error(500, "The server had an error", type="server_error", headers={"retry-after-ms": "1"})

    def push_context_length(self, actual: int, limit: int) -> None:
        self.push_error(
            400,
            f"This model's maximum context length is {limit} tokens. However, your messages "
            f"resulted in {actual} tokens. Please reduce the length of the messages.",
            code="context_length_exceeded",
        )

    # ------------------------------------------------------------------ serving

    async def _models(self, request: Request) -> Response:
        await self.record(request)
        return JSONResponse({"object": "list", "data": [{"id": "fake-model", "object": "model", "owned_by": "fake"}]})

    async def _completions(self, request: Request) -> Response:
        recorded = await self.record(request)
        body = recorded.body if isinstance(recorded.body, dict) else {}
        refused = sorted(self.refused_params & body.keys())
        if refused:
            return json_error(
                400, openai_error(f"Unrecognized request argument supplied: {refused[0]}", param=refused[0])
            )
        problems = self.refuse(check_request(body))
        if problems:
            return json_error(400, openai_error(problems[0]))
        scripted = self.next_answer(ScriptedCompletion(text=DEFAULT_TEXT))
        if scripted.body is not None:
            return json_error(scripted.status, with_presented_key(scripted.body, recorded.headers), scripted.headers)
        model = body.get("model", "fake-model")
        calls = self._calls(scripted)
        if body.get("stream"):
            usage_asked = bool((body.get("stream_options") or {}).get("include_usage"))
            chunks = _chunks(model, scripted, calls, usage_asked)
            return sse_response(
                [(None, c) for c in chunks] + [(None, "[DONE]")],
                fault=scripted.fault,
                headers=scripted.headers,
                error_event=None,
            )
        return JSONResponse(_completion(model, scripted, calls), headers=scripted.headers)

    def _calls(self, scripted: ScriptedCompletion) -> list[dict[str, Any]]:
        calls = []
        for n, call in enumerate(scripted.tool_calls):
            arguments = call["arguments"] if "arguments" in call else json.dumps(call.get("input", {}))
            if scripted.quirks.omit_tool_ids:
                call_id = None
            elif scripted.quirks.reuse_tool_ids:
                call_id = f"call_{n}"
            else:
                call_id = call.get("id") or f"call_fake_{next(self.ids):04d}"
            calls.append({"id": call_id, "name": call["name"], "arguments": arguments})
        return calls


def _usage(scripted: ScriptedCompletion) -> dict[str, Any]:
    return {"prompt_tokens": 20, "completion_tokens": 6, "total_tokens": 26, **scripted.usage}


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
    }


def _call_pieces(calls: list[dict[str, Any]], quirks: Quirks) -> list[dict[str, Any]]:
    deltas = []
    for index, call in enumerate(calls):
        for k, part in enumerate(pieces(call["arguments"], quirks.argument_chars)):
            piece: dict[str, Any] = {"function": {"arguments": part}}
            if not quirks.no_index:
                piece["index"] = index
            if k == 0:
                piece["function"]["name"] = call["name"]
                piece["type"] = "function"
                if call["id"] is not None:
                    piece["id"] = call["id"]
            deltas.append({"tool_calls": [piece]})
    return deltas


def _chunks(
    model: str, scripted: ScriptedCompletion, calls: list[dict[str, Any]], usage_asked: bool
) -> list[dict[str, Any]]:
    quirks = scripted.quirks
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    if scripted.reasoning:
        deltas += [{quirks.reasoning_field: p} for p in pieces(scripted.reasoning, scripted.chunk_chars)]
    if scripted.text:
        deltas += [{"content": p} for p in pieces(scripted.text, scripted.chunk_chars)]
    if scripted.refusal:
        deltas += [{"refusal": p} for p in pieces(scripted.refusal, scripted.chunk_chars)]
    deltas += _call_pieces(calls, quirks)
    chunks = [_chunk(model, d) for d in deltas]
    final = _chunk(model, {}, quirks.finish_reason or scripted.finish_reason)
    if quirks.usage == "last_choice":
        final["usage"] = _usage(scripted)
    chunks.append(final)
    if usage_asked and quirks.usage == "final_chunk":
        chunks.append(
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [],
                "usage": _usage(scripted),
            }
        )
    return chunks


def _completion(model: str, scripted: ScriptedCompletion, calls: list[dict[str, Any]]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": scripted.text, "refusal": scripted.refusal}
    if calls:
        message["tool_calls"] = [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in calls
        ]
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": scripted.finish_reason, "logprobs": None}],
        "usage": _usage(scripted),
    }


# -------------------------------------------------------------------- what the API checks


def check_request(body: dict[str, Any]) -> list[str]:
    """What OpenAI would refuse in this request body."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return ["'messages' is a required property"]
    problems = []
    for i, message in enumerate(messages):
        calls = [c["id"] for c in message.get("tool_calls") or []] if message.get("role") == "assistant" else []
        if calls:
            answers = []
            for following in messages[i + 1 :]:
                if following.get("role") != "tool":
                    break
                answers.append(following.get("tool_call_id"))
            missing = [c for c in calls if c not in answers]
            if missing:
                problems.append(
                    "An assistant message with 'tool_calls' must be followed by tool messages responding "
                    f"to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
                    f"{', '.join(missing)}"
                )
        if message.get("role") == "tool":
            before: dict[str, Any] = next((m for m in reversed(messages[:i]) if m.get("role") != "tool"), {})
            offered = {c["id"] for c in before.get("tool_calls") or []}
            if message.get("tool_call_id") not in offered:
                problems.append(
                    f"Invalid parameter: messages with role 'tool' must be a response to a preceeding "
                    f"message with 'tool_calls'. (messages.[{i}])"
                )
    return problems


def _serve_by_hand(port: int, replies_path: str | None, refused: list[str]) -> int:
    server = FakeOpenAIServer(port=port)
    server.refused_params = set(refused)
    for reply in json.loads(Path(replies_path).read_text(encoding="utf-8")) if replies_path else []:
        reply.setdefault("finish_reason", "tool_calls" if reply.get("tool_calls") else "stop")
        server.push(ScriptedCompletion(**reply))
    return serve_by_hand(
        server, "fake OpenAI-compatible server on {url}/v1 (OPENAI_BASE_URL={url}/v1; Ctrl-C stops it)"
    )


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="A fake OpenAI-compatible Chat Completions server on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=8011)
    parser.add_argument("--replies", help="JSON list of scripted answers, used in order")
    parser.add_argument(
        "--refuse-param",
        action="append",
        default=[],
        metavar="NAME",
        help="answer requests carrying this parameter with a 400, as an older server does",
    )
    args = parser.parse_args()
    sys.exit(_serve_by_hand(args.port, args.replies, args.refuse_param))
