"""The typed conversation to and from the Anthropic Messages API, as pure functions.

Request (`to_anthropic_params`):
  - cache breakpoints on the system block, the last tool schema, the last cacheable
    block of the last message, and the end of the compacted history
    (`agents.compaction.cache_points`): the stable prefix, the part the next compaction
    leaves alone, and the newest turn (the 4 allowed);
  - thinking and redacted_thinking blocks go back verbatim with their signatures while
    thinking is on; unsigned reasoning (from another provider) never goes;
  - thinking is left off for a request that cannot hold it (max_tokens not above the
    budget, e.g. the judge's short call) and for a tool loop whose last assistant
    message was made without thinking (the API requires such a message to start with
    a thinking block), so switching thinking on mid-loop never produces a 400;
  - empty text blocks are dropped (the API rejects them); a tool_use whose arguments
    did not parse goes back with an empty input.

Reply (`AnthropicReply`): the raw stream events accumulated into a ModelResponse. Tool
input JSON is parsed once at the end (not re-parsed on every delta), and input that
does not parse — a call cut off at max_tokens — is kept as `raw_input` for the loop to
answer with an error the model can fix. Server-tool and citation blocks are not used
by Workingset and are not kept.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, get_args

from agents.compaction import compacted_breakpoint
from agents.messages import (
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from agents.ports import ModelRequest, ModelResponse, ReplyBlock, StopReason, Usage
from agents.tokens import estimated_usage

__all__ = [
    "CACHE_CONTROL",
    "INTERLEAVED_THINKING_BETA",
    "AnthropicReply",
    "ThinkingOptions",
    "parse_prompt_too_long",
    "to_anthropic_params",
]

CACHE_CONTROL: dict[str, str] = {"type": "ephemeral"}
INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14"
_TOKEN_COUNTS = re.compile(r"(\d[\d,]*)\s*tokens?\s*>\s*(\d[\d,]*)", re.IGNORECASE)
_KNOWN_STOP_REASONS: dict[str, StopReason] = {r: r for r in get_args(StopReason)}
_UNCACHEABLE = ("thinking", "redacted_thinking")


@dataclass(frozen=True)
class ThinkingOptions:
    mode: str = "off"  # off | enabled | adaptive
    budget_tokens: int = 8_000
    interleaved: bool = True
    effort: str | None = None


# --------------------------------------------------------------------------- request


def _block_param(block: Any, *, thinking: bool) -> dict[str, Any] | None:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text} if block.text else None
    if isinstance(block, ToolUseBlock):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    if isinstance(block, ToolResultBlock):
        return {
            "type": "tool_result",
            "tool_use_id": block.tool_use_id,
            "content": block.content,
            "is_error": block.is_error,
        }
    if isinstance(block, ThinkingBlock):
        if not thinking or not block.signature:
            return None
        return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
    if isinstance(block, RedactedThinkingBlock):
        return {"type": "redacted_thinking", "data": block.data} if thinking else None
    if isinstance(block, ImageBlock):
        source = block.source
        if source.type == "url":
            return {"type": "image", "source": {"type": "url", "url": source.url}}
        return {"type": "image", "source": {"type": "base64", "media_type": source.media_type, "data": source.data}}
    return None


def _messages_param(messages: Sequence[Message], *, thinking: bool) -> list[dict[str, Any]]:
    """The messages as API params; the message at the `compacted` breakpoint (when it
    is not the last one sent) gets its cache_control here, the last one by the caller."""
    out: list[dict[str, Any]] = []
    anchor = compacted_breakpoint(messages)
    for i, message in enumerate(messages):
        content = [p for p in (_block_param(b, thinking=thinking) for b in message.content) if p is not None]
        if content:
            if i == anchor:
                _mark_last_cacheable(content)
            out.append({"role": message.role, "content": content})
    return out


def _mark_last_cacheable(content: list[dict[str, Any]]) -> None:
    for i in range(len(content) - 1, -1, -1):
        if content[i]["type"] not in _UNCACHEABLE:
            content[i] = {**content[i], "cache_control": dict(CACHE_CONTROL)}
            return


def _open_tool_loop_without_thinking(messages: Sequence[Message]) -> bool:
    """The last assistant message is still waiting on its tool results' answer and was
    made without thinking: the API refuses thinking for such a request."""
    for message in reversed(messages):
        if message.role == "assistant":
            if not message.tool_uses:
                return False
            first = message.content[0] if message.content else None
            signed = isinstance(first, ThinkingBlock) and bool(first.signature)
            return not (signed or isinstance(first, RedactedThinkingBlock))
        if not message.tool_results_in:
            return False
    return False


def thinking_param(request: ModelRequest, options: ThinkingOptions) -> dict[str, Any] | None:
    if options.mode == "off" or _open_tool_loop_without_thinking(request.messages):
        return None
    if options.mode == "adaptive":
        return {"type": "adaptive"}
    if request.max_tokens <= options.budget_tokens:
        return None
    return {"type": "enabled", "budget_tokens": options.budget_tokens}


def to_anthropic_params(request: ModelRequest, model: str, thinking: ThinkingOptions | None = None) -> dict[str, Any]:
    """Keyword arguments for `messages.create` (without `stream`)."""
    options = thinking or ThinkingOptions()
    params: dict[str, Any] = {"model": model, "max_tokens": request.max_tokens}
    if request.system:
        params["system"] = [{"type": "text", "text": request.system, "cache_control": dict(CACHE_CONTROL)}]
    if request.tools:
        tools = [{"name": t.name, "description": t.description, "input_schema": t.input_schema} for t in request.tools]
        tools[-1] = {**tools[-1], "cache_control": dict(CACHE_CONTROL)}
        params["tools"] = tools
    config = thinking_param(request, options)
    if config is not None:
        params["thinking"] = config
        if config["type"] == "enabled" and options.interleaved and request.tools:
            params["extra_headers"] = {"anthropic-beta": INTERLEAVED_THINKING_BETA}
    if options.effort is not None:
        params["output_config"] = {"effort": options.effort}
    messages = _messages_param(request.messages, thinking=config is not None)
    if messages:
        _mark_last_cacheable(messages[-1]["content"])
    params["messages"] = messages
    return params


def parse_prompt_too_long(message: str) -> tuple[int | None, int | None]:
    """(actual, limit) from e.g. "prompt is too long: 210000 tokens > 200000 maximum"."""
    match = _TOKEN_COUNTS.search(message)
    if match is None:
        return None, None
    return int(match.group(1).replace(",", "")), int(match.group(2).replace(",", ""))


# -------------------------------------------------------------------------- response


class AnthropicReply:
    """Accumulates the raw events of one streamed reply (`feed`), then `response()`."""

    def __init__(self) -> None:
        self._blocks: dict[int, dict[str, Any]] = {}
        self._parts: dict[int, list[str]] = {}
        self._usage: dict[str, int] = {}
        self._stop_reason: str | None = None
        self._stop_details: str | None = None
        self.model = ""
        self.started = False  # message_start seen: the body is a Messages API stream
        self.complete = False  # message_stop seen: nothing of the reply is missing

    def feed(self, event: Any) -> None:
        kind = event.type
        if kind == "content_block_delta":
            delta = event.delta
            dtype = delta.type
            if dtype == "text_delta":
                self._parts[event.index].append(delta.text)
            elif dtype == "input_json_delta":
                self._parts[event.index].append(delta.partial_json)
            elif dtype == "thinking_delta":
                self._parts[event.index].append(delta.thinking)
            elif dtype == "signature_delta":
                self._blocks[event.index]["signature"] = delta.signature
        elif kind == "content_block_start":
            self._blocks[event.index] = event.content_block.to_dict()
            self._parts[event.index] = []
        elif kind == "message_start":
            self.started = True
            self.model = event.message.model or ""
            self._take_usage(event.message.usage)
        elif kind == "message_stop":
            self.complete = True
        elif kind == "message_delta":
            self._stop_reason = event.delta.stop_reason
            self._stop_details = _describe_stop_details(getattr(event.delta, "stop_details", None))
            self._take_usage(event.usage)

    def _take_usage(self, usage: Any) -> None:
        if usage is None:
            return
        # Counts in message_delta are cumulative; a field it leaves out keeps its start value.
        for key in ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
            value = getattr(usage, key, None)
            if value is not None:
                self._usage[key] = value

    def missing(self) -> str | None:
        """What makes the body received so far not a whole reply (None: it is one)."""
        if not self.started:
            return "the answer was not a Messages API stream (no message_start event)"
        if not self.complete:
            return "the stream ended before the reply was complete (no message_stop event)"
        return None

    def response(self, request: ModelRequest) -> ModelResponse:
        blocks = [(self._blocks[i].get("type"), self._block(i)) for i in sorted(self._blocks)]
        content = tuple(b for _, b in blocks if b is not None)
        # A stream with no usage at all (some proxies and compatible servers) is estimated,
        # never counted as free: a token budget must still trip.
        reported = bool(self._usage)
        return ModelResponse(
            content=content,
            stop_reason=_stop_reason(self._stop_reason, content),
            usage=Usage(**self._usage) if reported else estimated_usage(request, content),
            model=self.model,
            stop_details=self._stop_details,
            unknown_blocks=tuple(str(kind) for kind, b in blocks if b is None),
            usage_reported=reported,
        )

    def _block(self, index: int) -> ReplyBlock | None:
        raw, text = self._blocks[index], "".join(self._parts[index])
        kind = raw.get("type")
        if kind == "text":
            return TextBlock(text=raw.get("text", "") + text)
        if kind == "thinking":
            return ThinkingBlock(thinking=raw.get("thinking", "") + text, signature=raw.get("signature") or "")
        if kind == "redacted_thinking":
            return RedactedThinkingBlock(data=raw.get("data", ""))
        if kind == "tool_use":
            return _tool_use(raw, text)
        return None


def _tool_use(raw: dict[str, Any], arguments: str) -> ToolUseBlock:
    if not arguments:
        start = raw.get("input")
        return ToolUseBlock(id=raw["id"], name=raw["name"], input=start if isinstance(start, dict) else {})
    try:
        value = json.loads(arguments)
    except ValueError:
        value = None
    if isinstance(value, dict):
        return ToolUseBlock(id=raw["id"], name=raw["name"], input=value)
    return ToolUseBlock(id=raw["id"], name=raw["name"], raw_input=arguments)


def _describe_stop_details(details: Any) -> str | None:
    if details is None:
        return None
    category = getattr(details, "category", None)
    explanation = getattr(details, "explanation", None)
    text = ": ".join(str(p) for p in (category, explanation) if p)
    return text or None


def _stop_reason(raw: str | None, content: tuple[ReplyBlock, ...]) -> StopReason:
    if raw is not None and raw in _KNOWN_STOP_REASONS:
        return _KNOWN_STOP_REASONS[raw]
    if raw == "model_context_window_exceeded":
        return "max_tokens"  # cut off by the window rather than by max_tokens: still cut off
    return "tool_use" if any(isinstance(b, ToolUseBlock) for b in content) else "end_turn"
