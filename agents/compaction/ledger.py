"""The compaction ledger: what each compaction freed and what it cost the cache.

Cost model (documented in docs/working-set-compiler.md, "Cache-aware cost"): prompt caching bills a
cache write at 1.25× the base input price and a cache read at 0.1×. Rewriting the
conversation from its first changed message invalidates the cached prefix from that
point, so the next call writes everything after it again.

    invalidated   = tokens_before − unchanged_prefix
    next_call_net = 1.25 × (tokens_after − unchanged_prefix) − 0.1 × invalidated
    per_call_save = 0.1 × (tokens_before − tokens_after)      (every later call)

Money = tokens × the model's input price per million tokens, from the model table
(`agents.providers._catalog`); a model of unknown price is estimated at the reference price
(`agents.providers._catalog.REFERENCE_INPUT_PRICE`) — these are estimates of relative cache cost,
not what a run cost (that is `agents.providers._catalog.usage_cost_usd`, None when unknown).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field

from agents.messages import Message
from agents.providers import input_price_per_mtok, usage_cost_usd
from agents.tokens import TokenCounter

__all__ = [
    "CACHE_READ_MULTIPLIER",
    "CACHE_WRITE_MULTIPLIER",
    "OUTPUT_PRICE_MULTIPLIER",
    "CompactionEvent",
    "input_price_per_mtok",
    "priced_event",
    "unchanged_prefix_tokens",
    "usage_cost_usd",
]

CACHE_WRITE_MULTIPLIER = 1.25
CACHE_READ_MULTIPLIER = 0.1
OUTPUT_PRICE_MULTIPLIER = 5.0  # output at 5x input, as Claude prices it (for estimates only)


class CompactionEvent(BaseModel):
    """One compaction, as it appears in the `--json` stream and the trace."""

    type: Literal["compaction"] = "compaction"
    session_id: str = ""
    ts: float = Field(default_factory=time.time)
    path: list[str] = Field(
        default_factory=list, description="The emitting session's place in its tree (see agents.events)."
    )
    kind: Literal["clear", "summary", "prompt_too_long"]
    trigger: Literal["auto", "manual", "prompt_too_long"]
    strategy: str
    tokens_before: int
    tokens_after: int
    results_cleared: int = 0
    messages_summarized: int = 0
    summarizer_calls: int = 0
    cached_prefix_invalidated_tokens: int = 0
    estimated_next_call_net_cost_usd: float = 0.0
    estimated_saving_per_later_call_usd: float = 0.0
    failed: str | None = Field(
        None, description="Why the step failed; the conversation it left is stated in `applied`."
    )
    applied: bool = True

    @property
    def tokens_freed(self) -> int:
        return self.tokens_before - self.tokens_after


def unchanged_prefix_tokens(
    before: Sequence[Message], after: Sequence[Message], overhead_tokens: int, counter: TokenCounter
) -> int:
    """Tokens of the request prefix (system, tools, messages) that a rewrite leaves identical."""
    same = 0
    for a, b in zip(before, after, strict=False):
        if a is not b and a != b:
            break
        same += counter.count_message(a)
    return overhead_tokens + same


def priced_event(
    *,
    tokens_before: int,
    tokens_after: int,
    unchanged_prefix: int,
    model_name: str,
    cached_tokens: int | None = None,
    **fields,
) -> CompactionEvent:
    """`cached_tokens`: what the previous call sent (and cached), when an earlier step
    in the same compaction already changed the conversation; default tokens_before."""
    price = input_price_per_mtok(model_name) / 1_000_000
    cached = tokens_before if cached_tokens is None else cached_tokens
    invalidated = max(cached - unchanged_prefix, 0)
    rewrite = max(tokens_after - unchanged_prefix, 0)
    net = (CACHE_WRITE_MULTIPLIER * rewrite - CACHE_READ_MULTIPLIER * invalidated) * price
    saving = CACHE_READ_MULTIPLIER * max(tokens_before - tokens_after, 0) * price
    return CompactionEvent(
        tokens_before=tokens_before,
        tokens_after=tokens_after,
        cached_prefix_invalidated_tokens=invalidated,
        estimated_next_call_net_cost_usd=round(net, 6),
        estimated_saving_per_later_call_usd=round(saving, 6),
        **fields,
    )
