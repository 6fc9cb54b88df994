"""Token estimation without a network call.

Method: characters / 4 (rounded up), plus a fixed per-message and per-block overhead
for the role and block framing the API adds. Calibration: on English prose and code,
Claude-family tokenizers land near 3.5–4.2 characters per token; JSON tool schemas and
inputs are denser (~3.2), so structured parts use 3.2. The estimate is meant to be
slightly generous, because an underestimate is what causes a prompt-too-long refusal.

Per-message estimates are cached on the immutable message, so the estimate of a
growing conversation only pays for the messages added since the last call.

Calibration: `CalibratedCounter` scales the estimate by what the provider reported
for earlier requests (their usage: input + cache reads + cache writes, or a
`count_tokens` answer), so a model whose tokenizer is denser than chars/4 is not
underestimated for the rest of the session.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from agents.messages import (
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    encodable_block,
    message_caches,
)
from agents.usage import Usage

__all__ = [
    "CalibratedCounter",
    "CharRatioEstimator",
    "estimated_usage",
    "IncrementalEstimate",
    "TokenCounter",
    "estimate_messages_tokens",
    "estimate_request_tokens",
    "estimate_prefix_tokens",
    "message_token_cache",
]

MESSAGE_OVERHEAD_TOKENS = 4
BLOCK_OVERHEAD_TOKENS = 3
TOOL_SCHEMA_OVERHEAD_TOKENS = 8
IMAGE_TOKENS = 1_600  # Anthropic's figure for a ~1.15 megapixel image, the largest it keeps unscaled


class TokenCounter(Protocol):
    """Estimates tokens; `key` names the method so caches do not mix estimators."""

    key: str

    def count_text(self, text: str) -> int: ...

    def count_json(self, value: Any) -> int: ...

    def count_message(self, message: Message) -> int: ...


def message_token_cache(message: Message) -> dict[str, int]:
    """The per-counter estimates cached on a (immutable) message, made on first use."""
    private = message_caches(message)
    cache = private["_token_cache"]
    if cache is None:
        cache = private["_token_cache"] = {}
    return cache


class CharRatioEstimator:
    """The default estimator: characters / ratio, structured data denser."""

    def __init__(self, chars_per_token: float = 4.0, json_chars_per_token: float = 3.2):
        if chars_per_token <= 0 or json_chars_per_token <= 0:
            raise ValueError("chars per token must be positive")
        self.chars_per_token = chars_per_token
        self.json_chars_per_token = json_chars_per_token
        self.key = f"chars/{chars_per_token}:{json_chars_per_token}"

    def count_text(self, text: str) -> int:
        return math.ceil(len(text) / self.chars_per_token)

    def count_json(self, value: Any) -> int:
        dumped = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        return math.ceil(len(dumped) / self.json_chars_per_token)

    def _count_block(self, block) -> int:
        if isinstance(block, TextBlock):
            body = self.count_text(block.text)
        elif isinstance(block, ToolUseBlock):
            arguments = (
                self.count_text(block.raw_input) if block.raw_input is not None else self.count_json(block.input)
            )
            body = self.count_text(block.name) + arguments
        elif isinstance(block, ToolResultBlock):
            body = self.count_text(block.content)
        elif isinstance(block, ThinkingBlock):
            # Unsigned reasoning is never sent to any provider; signed reasoning may be.
            return self.count_text(block.thinking) + BLOCK_OVERHEAD_TOKENS if block.signature else 0
        elif isinstance(block, RedactedThinkingBlock):
            body = self.count_text(block.data)
        elif isinstance(block, ImageBlock):
            body = IMAGE_TOKENS
        else:
            body = self.count_json(block.model_dump(mode="json"))
        return body + BLOCK_OVERHEAD_TOKENS

    def count_message(self, message: Message) -> int:
        cache = message_token_cache(message)
        cached = cache.get(self.key)
        if cached is None:
            cached = MESSAGE_OVERHEAD_TOKENS + sum(self._count_block(b) for b in message.content)
            cache[self.key] = cached
        return cached


class CalibratedCounter:
    """A counter scaled by what the provider reported for requests it estimated.

    Conservative, because an undercount is what sends a request over the window: the
    scale never falls below the latest observed ratio (provider's count ÷ the base
    estimate), rising to it at once, and falls only halfway towards a lower one. It
    moves in steps of 5 %, rounded up (so cached per-message estimates stay valid
    between steps), within [0.5, 4]. Until the first observation it is the base
    counter's estimate unchanged."""

    STEP = 0.05
    LOWEST, HIGHEST = 0.5, 4.0

    def __init__(self, base: TokenCounter | None = None):
        self.base = base or CharRatioEstimator()
        self.scale = 1.0
        self.observations = 0
        self.key = self.base.key

    def _scaled(self, tokens: int) -> int:
        return tokens if self.scale == 1.0 else math.ceil(tokens * self.scale)

    def count_text(self, text: str) -> int:
        return self._scaled(self.base.count_text(text))

    def count_json(self, value: Any) -> int:
        return self._scaled(self.base.count_json(value))

    def count_message(self, message: Message) -> int:
        if self.scale == 1.0:
            return self.base.count_message(message)
        cache = message_token_cache(message)
        cached = cache.get(self.key)
        if cached is None:
            cached = self._scaled(self.base.count_message(message))
            cache[self.key] = cached
        return cached

    def observe(self, estimated: int, actual: int) -> None:
        """`estimated` (made with this counter) was `actual` tokens by the provider's count."""
        if estimated <= 0 or actual <= 0:
            return
        unscaled = estimated / self.scale
        target = actual / unscaled
        blended = target if self.observations == 0 else max(target, (self.scale + target) / 2)
        # Rounded up to the step (less a hair of float error, so 1.4 stays 1.4).
        stepped = math.ceil(min(max(blended, self.LOWEST), self.HIGHEST) / self.STEP - 1e-9) * self.STEP
        self.observations += 1
        self.scale = round(stepped, 2)
        self.key = self.base.key if self.scale == 1.0 else f"{self.base.key}x{self.scale}"


def estimate_messages_tokens(counter: TokenCounter, messages: Iterable[Message]) -> int:
    return sum(counter.count_message(m) for m in messages)


class IncrementalEstimate:
    """Running token total of a conversation that mostly grows at the end.

    Remembers the messages it last saw (by identity) with cumulative sums; the next
    estimate re-walks only the identity check and counts just the new suffix. A
    compaction that rewrites the middle costs one recount from the first change, and
    so does a counter whose key changed (a calibrated counter's new scale): sums made
    at the old scale would mix two scales in one total.
    """

    def __init__(self, counter: TokenCounter):
        self.counter = counter
        self._seen: list[Message] = []
        self._cumulative: list[int] = []
        self._source: Sequence[Message] | None = None
        self._key = counter.key

    def total(self, messages: Sequence[Message]) -> int:
        if self.counter.key != self._key:
            self._key = self.counter.key
            self._seen.clear()
            self._cumulative.clear()
        seen, cumulative = self._seen, self._cumulative
        limit = min(len(seen), len(messages))
        if messages is self._source and limit == len(seen) and (not limit or messages[limit - 1] is seen[-1]):
            # The common case: the very list seen last time, grown at the end. (The loop
            # only appends to its list; a compaction hands it a new list.)
            keep = limit
        else:
            keep = _seen_prefix(seen, messages, limit)
        del seen[keep:], cumulative[keep:]
        running = cumulative[-1] if cumulative else 0
        for message in messages[keep:]:
            running += self.counter.count_message(message)
            seen.append(message)
            cumulative.append(running)
        self._source = messages
        return running


def _seen_prefix(seen: list[Message], messages: Sequence[Message], limit: int) -> int:
    """How many leading messages were seen. The usual case, the messages seen plus new
    ones in another sequence (a request's tuple), is checked at C speed: list equality
    tests identity first, so the very messages seen are not compared by value (another
    message equal by value counts as seen too: it has the same tokens)."""
    if limit and messages[limit - 1] is seen[limit - 1] and seen[:limit] == list(messages[:limit]):
        return limit
    keep = 0
    while keep < limit and seen[keep] is messages[keep]:
        keep += 1
    return keep


# id(schema) -> (the schema, its tokens per counter key). An entry holds its schema, so
# the id cannot be reused while it is here; only frozen models are kept (their content
# cannot change), and a counter whose scale changes has a new key.
_SCHEMA_TOKENS: dict[int, tuple[Any, dict[str, int]]] = {}
_SCHEMA_TOKENS_MAX = 4096


def _schema_tokens(counter: TokenCounter, tool: Any) -> int:
    if not hasattr(tool, "model_dump"):
        return counter.count_json(tool)
    if not tool.model_config.get("frozen"):
        return counter.count_json(tool.model_dump())
    entry = _SCHEMA_TOKENS.get(id(tool))
    if entry is None or entry[0] is not tool:
        if len(_SCHEMA_TOKENS) >= _SCHEMA_TOKENS_MAX:
            _SCHEMA_TOKENS.clear()
        entry = _SCHEMA_TOKENS[id(tool)] = (tool, {})
    tokens = entry[1].get(counter.key)
    if tokens is None:
        tokens = entry[1][counter.key] = counter.count_json(tool.model_dump())
    return tokens


def estimate_prefix_tokens(counter: TokenCounter, *, system: str, tools: Sequence[Any]) -> int:
    """The part of a request before the messages: system prompt and tool schemas."""
    tool_tokens = sum(TOOL_SCHEMA_OVERHEAD_TOKENS + _schema_tokens(counter, t) for t in tools)
    return counter.count_text(system) + tool_tokens


def estimate_request_tokens(
    counter: TokenCounter,
    *,
    system: str,
    tools: Sequence[Any],
    messages: Iterable[Message],
) -> int:
    """Everything the request sends: system prompt, tool schemas and messages."""
    prefix = estimate_prefix_tokens(counter, system=system, tools=tools)
    return prefix + estimate_messages_tokens(counter, messages)


def estimated_usage(request: Any, content: Sequence[Any]) -> Usage:
    """The usage of a reply whose provider reported none: the request's tokens in and the
    reply's blocks out, by the character-ratio estimator. Never zero, so a token budget
    still trips; the caller marks it estimated (`usage_reported=False`: not used to
    calibrate)."""
    counter = CharRatioEstimator()
    prompt = estimate_request_tokens(counter, system=request.system, tools=request.tools, messages=request.messages)
    output = sum(counter.count_text(encodable_block(block).model_dump_json()) for block in content)
    return Usage(input_tokens=prompt, output_tokens=output)
