"""The typed conversation to and from OpenAI Chat Completions, as pure functions.

Request (`to_openai_params`):
  system prompt        -> one `system` message
  user text / images   -> a `user` message (a string for one text block, else content parts;
                          images as `image_url` parts, base64 as a data: URL)
  tool_result blocks   -> one `tool` message per result, in the order of the blocks, before
                          any text of the same user message; `is_error` has no field in this
                          API, so an error result's content starts with "Error: "
  assistant            -> `content` (text blocks joined by a blank line, or null) and
                          `tool_calls` (id, name, the arguments as the model sent them)
  thinking blocks      -> not sent: Chat Completions takes no reasoning back

Reply (`OpenAIReply`), built from streamed chunks, with the quirks of compatible servers:
  - tool-call arguments arrive in pieces, keyed by `index` (a missing index counts as a
    new call when an id or name starts one); a whole call in one chunk works too;
  - a tool-call id that is missing, or one already used in the conversation (servers that
    number calls call_0, call_1 on every reply), is replaced by a fresh unique id;
  - arguments that are not a JSON object are kept as `raw_input` (answered with an error
    the model can fix); empty arguments are an empty object;
  - `reasoning_content` (vLLM, SGLang, DeepSeek, llama.cpp) and `reasoning` (newer vLLM,
    Ollama, OpenRouter) become one unsigned ThinkingBlock;
  - finish_reason `stop` with tool calls (some servers) is a tool_use stop; `length` is
    max_tokens; `content_filter`, or a `refusal` text, is a refusal;
  - usage may come in a final chunk with no choices, on the last choice chunk, or not at all
    (then it is estimated, `agents.tokens.estimated_usage`, and `usage_reported` is
    False); cached prompt tokens and reasoning tokens are read from the `*_details`
    objects when present.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from agents.messages import (
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from agents.ports import ModelRequest, ModelResponse, ReplyBlock, StopReason, Usage
from agents.tokens import CharRatioEstimator, estimated_usage

__all__ = ["OpenAIOptions", "OpenAIReply", "to_openai_params", "tool_call_arguments"]

_FINISH: dict[str, StopReason] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}


@dataclass(frozen=True)
class OpenAIOptions:
    max_tokens_param: str = "max_completion_tokens"
    stream_usage: bool = True
    reasoning_effort: str | None = None


# --------------------------------------------------------------------------- request


def tool_call_arguments(use: ToolUseBlock) -> str:
    return use.raw_input if use.raw_input is not None else json.dumps(use.input, ensure_ascii=False)


def _image_part(block: ImageBlock) -> dict[str, Any]:
    source = block.source
    url = source.url if source.type == "url" else f"data:{source.media_type};base64,{source.data}"
    return {"type": "image_url", "image_url": {"url": url}}


def _user_messages(message: Message) -> Iterable[dict[str, Any]]:
    for block in message.content:
        if isinstance(block, ToolResultBlock):
            content = f"Error: {block.content}" if block.is_error else block.content
            yield {"role": "tool", "tool_call_id": block.tool_use_id, "content": content}
    rest = [b for b in message.content if isinstance(b, TextBlock | ImageBlock)]
    if not rest:
        return
    if len(rest) == 1 and isinstance(rest[0], TextBlock):
        yield {"role": "user", "content": rest[0].text}
        return
    parts = [{"type": "text", "text": b.text} if isinstance(b, TextBlock) else _image_part(b) for b in rest]
    yield {"role": "user", "content": parts}


def _assistant_message(message: Message) -> dict[str, Any] | None:
    text = "\n\n".join(b.text for b in message.content if isinstance(b, TextBlock) and b.text)
    calls = [
        {"id": u.id, "type": "function", "function": {"name": u.name, "arguments": tool_call_arguments(u)}}
        for u in message.tool_uses
    ]
    if not text and not calls:
        return None
    out: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        out["tool_calls"] = calls
    return out


def to_openai_params(request: ModelRequest, model: str, options: OpenAIOptions | None = None) -> dict[str, Any]:
    """Keyword arguments for `chat.completions.create` (streamed)."""
    options = options or OpenAIOptions()
    messages: list[dict[str, Any]] = [{"role": "system", "content": request.system}] if request.system else []
    for message in request.messages:
        if message.role == "user":
            messages.extend(_user_messages(message))
        else:
            converted = _assistant_message(message)
            if converted is not None:
                messages.append(converted)
    params: dict[str, Any] = {"model": model, "messages": messages, options.max_tokens_param: request.max_tokens}
    if request.tools:
        params["tools"] = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": t.input_schema},
            }
            for t in request.tools
        ]
    if options.reasoning_effort is not None:
        params["reasoning_effort"] = options.reasoning_effort
    params["stream"] = True
    if options.stream_usage:
        params["stream_options"] = {"include_usage": True}
    return params


# -------------------------------------------------------------------------- response


@dataclass
class _Call:
    id: str | None
    name: str
    arguments: list[str]


class OpenAIReply:
    """Accumulates the chunks of one streamed completion (`feed`), then `response(request)`."""

    def __init__(self) -> None:
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._refusal: list[str] = []
        self._calls: dict[int, _Call] = {}
        self._finish: str | None = None
        self._usage: Any = None
        self.model = ""
        self._chunks = 0

    def missing(self) -> str | None:
        """What makes the body received so far not a whole reply (None: it is one)."""
        if not self._chunks:
            return "the answer was not a Chat Completions stream (no chunk)"
        if self._finish is None:
            return "the stream ended before the reply was complete (no finish_reason)"
        return None

    def feed(self, chunk: Any) -> None:
        # Declared fields are read directly and the extras from their dict: a missing
        # attribute on the SDK's models costs an exception, thousands of times a reply.
        self._chunks += 1
        if chunk.usage is not None:
            self._usage = chunk.usage
        if not self.model:
            self.model = chunk.model or ""
        for choice in chunk.choices or ():
            if choice.index not in (0, None):
                continue  # only the first choice is asked for
            delta = choice.delta
            if delta is not None:
                self._delta(delta)
            if choice.finish_reason is not None:
                self._finish = choice.finish_reason

    def _delta(self, delta: Any) -> None:
        if delta.content:
            self._text.append(delta.content)
        extra = delta.__pydantic_extra__
        if extra:
            reasoning = extra.get("reasoning_content") or extra.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                self._reasoning.append(reasoning)
        if delta.refusal:
            self._refusal.append(delta.refusal)
        if delta.tool_calls:
            for call in delta.tool_calls:
                self._tool_call_piece(call)

    def _tool_call_piece(self, piece: Any) -> None:
        function = getattr(piece, "function", None)
        name = getattr(function, "name", None) or ""
        arguments = getattr(function, "arguments", None) or ""
        call_id = getattr(piece, "id", None) or None
        index = getattr(piece, "index", None)
        if index is None:  # a server that sends no index: a new id or name starts a new call
            starts = bool(call_id or name) or not self._calls
            index = len(self._calls) if starts else max(self._calls)
        call = self._calls.get(index)
        if call is None:
            self._calls[index] = _Call(id=call_id, name=name, arguments=[arguments])
            return
        if call_id and not call.id:
            call.id = call_id
        if name and not call.name:
            call.name = name
        call.arguments.append(arguments)

    def response(self, request: ModelRequest) -> ModelResponse:
        content = self._content(request)
        stop = self._stop_reason(content)
        usage, reported = self._usage_of(request, content)
        details = "".join(self._refusal) or None
        return ModelResponse(
            content=content,
            stop_reason=stop,
            usage=usage,
            model=self.model,
            stop_details=details,
            usage_reported=reported,
        )

    def _content(self, request: ModelRequest) -> tuple[ReplyBlock, ...]:
        blocks: list[ReplyBlock] = []
        if self._reasoning:
            blocks.append(ThinkingBlock(thinking="".join(self._reasoning)))
        text = "".join(self._text)
        if text:
            blocks.append(TextBlock(text=text))
        used = {u.id for m in request.messages for u in m.tool_uses}
        for index in sorted(self._calls):
            call = self._calls[index]
            call_id = call.id if call.id and call.id not in used else f"call_{uuid.uuid4().hex[:16]}"
            used.add(call_id)
            blocks.append(_tool_use(call_id, call.name, "".join(call.arguments)))
        return tuple(blocks)

    def _stop_reason(self, content: tuple[ReplyBlock, ...]) -> StopReason:
        if self._refusal:
            return "refusal"
        stop = _FINISH.get(self._finish or "", "end_turn")
        has_calls = any(isinstance(b, ToolUseBlock) for b in content)
        if stop == "end_turn" and has_calls:
            return "tool_use"
        if stop == "tool_use" and not has_calls:
            return "end_turn"
        return stop

    def _usage_of(self, request: ModelRequest, content: tuple[ReplyBlock, ...]) -> tuple[Usage, bool]:
        u = self._usage
        if u is None:
            return estimated_usage(request, content), False
        prompt = getattr(u, "prompt_tokens", 0) or 0
        cached = getattr(getattr(u, "prompt_tokens_details", None), "cached_tokens", None) or 0
        completion = getattr(u, "completion_tokens", 0) or 0
        reasoning = getattr(getattr(u, "completion_tokens_details", None), "reasoning_tokens", None)
        if reasoning is None and self._reasoning:
            reasoning = min(CharRatioEstimator().count_text("".join(self._reasoning)), completion)
        usage = Usage(
            input_tokens=max(prompt - cached, 0),
            cache_read_input_tokens=min(cached, prompt),
            output_tokens=completion,
            reasoning_tokens=reasoning or 0,
        )
        return usage, True


def _tool_use(call_id: str, name: str, arguments: str) -> ToolUseBlock:
    if not arguments.strip():
        return ToolUseBlock(id=call_id, name=name, input={})
    try:
        value = json.loads(arguments)
    except ValueError:
        value = None
    if isinstance(value, dict):
        return ToolUseBlock(id=call_id, name=name, input=value)
    return ToolUseBlock(id=call_id, name=name, raw_input=arguments)
