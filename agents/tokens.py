"""Token estimation without a network call.

Method: characters / 4 (rounded up), plus a fixed per-message and per-block overhead
for the role and block framing the API adds. Calibration: on English prose and code,
Claude-family tokenizers land near 3.5–4.2 characters per token; JSON tool schemas and
inputs are denser (~3.2), so structured parts use 3.2. The estimate is meant to be
slightly generous, because an underestimate is what causes a prompt-too-long refusal.

Per-message estimates are cached on the immutable message, so the estimate of a
growing conversation only pays for the messages added since the last call.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from agents.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock

__all__ = [
    "CharRatioEstimator",
    "IncrementalEstimate",
    "TokenCounter",
    "estimate_messages_tokens",
    "estimate_request_tokens",
    "estimate_prefix_tokens",
]

MESSAGE_OVERHEAD_TOKENS = 4
BLOCK_OVERHEAD_TOKENS = 3
TOOL_SCHEMA_OVERHEAD_TOKENS = 8


class TokenCounter(Protocol):
    """Estimates tokens; `key` names the method so caches do not mix estimators."""

    key: str

    def count_text(self, text: str) -> int: ...

    def count_json(self, value: Any) -> int: ...

    def count_message(self, message: Message) -> int: ...


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

    def _count_block(self, block: TextBlock | ToolUseBlock | ToolResultBlock) -> int:
        if isinstance(block, TextBlock):
            body = self.count_text(block.text)
        elif isinstance(block, ToolUseBlock):
            body = self.count_text(block.name) + self.count_json(block.input)
        else:
            body = self.count_text(block.content)
        return body + BLOCK_OVERHEAD_TOKENS

    def count_message(self, message: Message) -> int:
        # Read the private dict directly: pydantic's attribute fallback costs ~3 µs a call,
        # which adds up when a turn walks a thousand messages.
        private = message.__pydantic_private__
        cache = private["_token_cache"]
        if cache is None:
            cache = private["_token_cache"] = {}
        cached = cache.get(self.key)
        if cached is None:
            cached = MESSAGE_OVERHEAD_TOKENS + sum(self._count_block(b) for b in message.content)
            cache[self.key] = cached
        return cached


def estimate_messages_tokens(counter: TokenCounter, messages: Iterable[Message]) -> int:
    return sum(counter.count_message(m) for m in messages)


class IncrementalEstimate:
    """Running token total of a conversation that mostly grows at the end.

    Remembers the messages it last saw (by identity) with cumulative sums; the next
    estimate re-walks only the identity check and counts just the new suffix. A
    compaction that rewrites the middle costs one recount from the first change.
    """

    def __init__(self, counter: TokenCounter):
        self.counter = counter
        self._seen: list[Message] = []
        self._cumulative: list[int] = []
        self._source: Sequence[Message] | None = None

    def total(self, messages: Sequence[Message]) -> int:
        seen, cumulative = self._seen, self._cumulative
        limit = min(len(seen), len(messages))
        if messages is self._source and limit == len(seen) and (not limit or messages[limit - 1] is seen[-1]):
            # The common case: the very list seen last time, grown at the end. (The loop
            # only appends to its list; a compaction hands it a new list.)
            keep = limit
        else:
            keep = 0
            while keep < limit and seen[keep] is messages[keep]:
                keep += 1
        del seen[keep:], cumulative[keep:]
        running = cumulative[-1] if cumulative else 0
        for message in messages[keep:]:
            running += self.counter.count_message(message)
            seen.append(message)
            cumulative.append(running)
        self._source = messages
        return running


def estimate_prefix_tokens(counter: TokenCounter, *, system: str, tools: Sequence[Any]) -> int:
    """The part of a request before the messages: system prompt and tool schemas."""
    tool_tokens = sum(
        TOOL_SCHEMA_OVERHEAD_TOKENS + counter.count_json(t.model_dump() if hasattr(t, "model_dump") else t)
        for t in tools
    )
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
