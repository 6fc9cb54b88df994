"""The `anthropic` cost model: reads only at a breakpoint within the lookback, writes only
above the minimum cacheable length, forgets after the TTL, prices output."""

from __future__ import annotations

import pytest

from agents.messages import Message, TextBlock
from agents.ports import ModelRequest
from agents.tokens import CharRatioEstimator
from benchmarks.compaction.cache_cost import request_costs
from benchmarks.compaction.cache_model import (
    CacheSettings,
    PromptCache,
    call_times,
    min_cacheable_tokens,
)

COUNTER = CharRatioEstimator()
PRICE = 3.0 / 1_000_000
SYSTEM = "S" * 8_000  # 2,000 tokens: cacheable on its own
BLOCK = 107  # a one-block message of 400 chars: 100 + 3 block + 4 message framing


def _messages(n: int, tag: str = "m") -> list[Message]:
    roles = ["user", "assistant"]
    return [Message(role=roles[i % 2], content=(TextBlock(text=f"{tag}{i:03d}" + "x" * 396),)) for i in range(n)]


def _request(messages: list[Message], system: str = SYSTEM) -> ModelRequest:
    return ModelRequest(system=system, messages=tuple(messages))


def test_a_growing_conversation_reads_the_last_prefix_and_writes_the_new_turn():
    cache = PromptCache(COUNTER, "claude-sonnet-4-5")
    history = _messages(5)
    first = cache.call(_request(history[:3]), 0.0, output_tokens=0)
    second = cache.call(_request(history), 10.0, output_tokens=0)
    assert (first.cache_read, first.cache_write, first.plain) == (0, 2_000 + 3 * BLOCK, 0)
    assert (second.cache_read, second.cache_write) == (2_000 + 3 * BLOCK, 2 * BLOCK)
    assert second.cost_usd == pytest.approx((0.1 * (2_000 + 3 * BLOCK) + 1.25 * 2 * BLOCK) * PRICE)


def test_a_rewrite_reads_only_up_to_a_breakpoint_where_lcp_credits_up_to_the_change():
    history = _messages(30)
    rewritten = [*history[:25], *_messages(5, tag="r")[:1], *history[26:]]  # message 25 changed
    cache = PromptCache(COUNTER, "claude-sonnet-4-5")
    cache.call(_request(history), 0.0, 0)
    api = cache.call(_request(rewritten), 1.0, 0)
    # Entries exist only at breakpoints: the system prompt and the end of the first request.
    # The latter no longer matches, so the read falls back to the system prompt.
    assert api.cache_read == 2_000
    lcp = request_costs([_request(history), _request(rewritten)], COUNTER, "claude-sonnet-4-5")[1]
    assert lcp.cached_tokens == 2_000 + 25 * BLOCK  # the legacy model is kinder


def test_a_turn_longer_than_the_lookback_misses_the_previous_prefix():
    history = _messages(40)
    cache = PromptCache(COUNTER, "claude-sonnet-4-5")
    cache.call(_request(history[:5]), 0.0, 0)
    grown = cache.call(_request(history), 1.0, 0)  # 35 new blocks: the entry is 35 blocks back
    assert grown.cache_read == 2_000  # only the system breakpoint's own entry
    wide = PromptCache(COUNTER, "claude-sonnet-4-5", CacheSettings(lookback_blocks=40))
    wide.call(_request(history[:5]), 0.0, 0)
    assert wide.call(_request(history), 1.0, 0).cache_read == 2_000 + 5 * BLOCK


def test_below_the_minimum_cacheable_length_nothing_is_written_or_read():
    cache = PromptCache(COUNTER, "claude-sonnet-4-5")
    small = _messages(3)
    for t in (0.0, 1.0):
        cost = cache.call(_request(small, system="short"), t, output_tokens=10)
        assert (cost.cache_read, cost.cache_write) == (0, 0)
        assert cost.cost_usd == pytest.approx((cost.tokens + 5 * 10) * PRICE)


def test_the_minimum_cacheable_length_follows_the_model_family():
    assert min_cacheable_tokens("claude-sonnet-4-5") == 1024
    assert min_cacheable_tokens("claude-opus-4-5") == 4096
    assert min_cacheable_tokens("claude-haiku-4-5") == 4096
    assert min_cacheable_tokens("claude-3-5-haiku-20241022") == 2048


def test_an_entry_older_than_the_ttl_is_gone():
    history = _messages(6)
    cache = PromptCache(COUNTER, "claude-sonnet-4-5")
    cache.call(_request(history[:4]), 0.0, 0)
    late = cache.call(_request(history), 301.0, 0)
    assert late.cache_read == 0 and late.cache_write == late.tokens
    soon = PromptCache(COUNTER, "claude-sonnet-4-5")
    soon.call(_request(history[:4]), 0.0, 0)
    assert soon.call(_request(history), 299.0, 0).cache_read == 2_000 + 4 * BLOCK


def test_a_read_refreshes_the_entry_it_read():
    history = _messages(8)
    cache = PromptCache(COUNTER, "claude-sonnet-4-5", CacheSettings(breakpoints=("system",)))
    for t in (0.0, 200.0, 400.0, 600.0):  # each call within 300 s of the one before
        last = cache.call(_request(history), t, 0)
    assert last.cache_read == 2_000  # only the system is ever cached with this breakpoint
    assert last.plain == 8 * BLOCK


def test_calls_without_recorded_times_use_the_default_gap():
    assert call_times([None, None, None], None) == [0.0, 0.0, 0.0]
    assert call_times([None, None, None], 400.0) == [0.0, 400.0, 800.0]
    assert call_times([100.0, None, 700.0], 30.0) == [100.0, 130.0, 700.0]


def test_a_summarizer_call_is_written_when_long_enough():
    cache = PromptCache(COUNTER, "claude-sonnet-4-5")
    assert cache.fresh_call(5_000, 300).cost_usd == pytest.approx((1.25 * 5_000 + 5 * 300) * PRICE)
    assert cache.fresh_call(500, 300).cost_usd == pytest.approx((500 + 5 * 300) * PRICE)
