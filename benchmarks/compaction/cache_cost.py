"""Cache-aware cost of a sequence of requests, and of the summarizer calls that shaped them.

A request's cached prefix is its longest common prefix with the previous request, in
tokens: the system prompt and tool schemas first (all or nothing), then whole messages
while they are equal. That prefix is read at 0.1x the base input price; the rest is
written at 1.25x (`agents.compaction.ledger`). Output tokens are not counted: the replay
sends every strategy the same recorded replies.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from agents.compaction import (
    CACHE_READ_MULTIPLIER,
    CACHE_WRITE_MULTIPLIER,
    OUTPUT_PRICE_MULTIPLIER,
    SUMMARIZER_SYSTEM,
    handoff_messages,
    input_price_per_mtok,
)
from agents.messages import Message
from agents.ports import ModelRequest, Summarizer
from agents.tokens import TokenCounter, estimate_messages_tokens, estimate_prefix_tokens

__all__ = [
    "CallCost",
    "MeteredSummarizer",
    "SummarizerCall",
    "call_cost_usd",
    "common_prefix_tokens",
    "request_costs",
    "request_tokens",
    "summarizer_cost_usd",
]


def request_tokens(request: ModelRequest, counter: TokenCounter) -> int:
    return estimate_prefix_tokens(counter, system=request.system, tools=request.tools) + estimate_messages_tokens(
        counter, request.messages
    )


def common_prefix_tokens(previous: ModelRequest | None, current: ModelRequest, counter: TokenCounter) -> int:
    """Tokens of `current` a cache written by `previous` would serve."""
    if previous is None or previous.system != current.system or previous.tools != current.tools:
        return 0
    same = estimate_prefix_tokens(counter, system=current.system, tools=current.tools)
    for a, b in zip(previous.messages, current.messages, strict=False):
        if a is not b and a != b:
            break
        same += counter.count_message(a)
    return same


def call_cost_usd(total_tokens: int, cached_tokens: int, price_per_mtok: float) -> float:
    cached = min(cached_tokens, total_tokens)
    billed = CACHE_READ_MULTIPLIER * cached + CACHE_WRITE_MULTIPLIER * (total_tokens - cached)
    return billed * price_per_mtok / 1_000_000


@dataclass(frozen=True)
class CallCost:
    tokens: int
    cached_tokens: int
    cost_usd: float


def request_costs(requests: Sequence[ModelRequest], counter: TokenCounter, model_name: str) -> list[CallCost]:
    """One CallCost per request, each cached against the one before it (the first: none)."""
    price = input_price_per_mtok(model_name)
    costs, previous = [], None
    for request in requests:
        total = request_tokens(request, counter)
        cached = min(common_prefix_tokens(previous, request, counter), total)
        costs.append(CallCost(total, cached, call_cost_usd(total, cached, price)))
        previous = request
    return costs


@dataclass(frozen=True)
class SummarizerCall:
    input_tokens: int
    output_tokens: int
    failed: bool = False


def summarizer_cost_usd(call: SummarizerCall, model_name: str) -> float:
    """Input at 1x, output at 5x the base input price (no caching)."""
    billed = call.input_tokens + OUTPUT_PRICE_MULTIPLIER * call.output_tokens
    return billed * input_price_per_mtok(model_name) / 1_000_000


@dataclass
class MeteredSummarizer:
    """The Summarizer port, counting what each call would read and write: the older
    history plus the handoff request and summarizer system prompt (what a model summarizer
    is sent), and the summary returned. Any summarizer (extractive included) is metered
    as if a model did the work."""

    inner: Summarizer
    counter: TokenCounter
    calls: list[SummarizerCall] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"metered:{getattr(self.inner, 'name', type(self.inner).__name__)}"

    async def summarize(self, messages: list[Message], *, focus: str | None = None) -> str:
        sent = self.counter.count_text(SUMMARIZER_SYSTEM) + estimate_messages_tokens(
            self.counter, handoff_messages(list(messages), focus)
        )
        try:
            text = await self.inner.summarize(messages, focus=focus)
        except Exception:
            self.calls.append(SummarizerCall(sent, 0, failed=True))
            raise
        self.calls.append(SummarizerCall(sent, self.counter.count_text(text or "")))
        return text
