"""The cost models: Anthropic's explicit cache reads only at a breakpoint within the lookback,
writes only above the minimum cacheable length at its TTL's price, forgets after the TTL;
the automatic caches (OpenAI, DeepSeek, Gemini) read the longest prefix sent before, in
their steps and above their minimum; each trace is priced as its own model."""

from __future__ import annotations

import pytest

from agents.errors import ConfigError
from agents.messages import Message, TextBlock
from agents.ports import ModelRequest
from agents.tokens import CharRatioEstimator
from benchmarks.compaction.auto_cache import AutoPrefixCache
from benchmarks.compaction.cache_cost import request_costs
from benchmarks.compaction.cache_model import (
    CacheSettings,
    PromptCache,
    call_times,
    min_cacheable_tokens,
)
from benchmarks.compaction.costing import cache_for
from benchmarks.compaction.pricing import PER_TRACE, ModelPrice, model_price, pricing_for

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


# -- each provider's rule, on hand-made prompts with known answers ------------------------------

GPT_4O = ModelPrice(
    name="gpt-4o", provider="openai", kind="automatic", input=2.5, output=10.0, cached_input=1.25, source="test"
)
DEEPSEEK = model_price("deepseek/deepseek-chat")
GEMINI = model_price("google/gemini-3-pro-preview")


def _auto(model: ModelPrice) -> AutoPrefixCache:
    return cache_for(model, COUNTER, CacheSettings())


def test_a_one_hour_cache_writes_at_twice_the_input_price_and_reads_at_a_tenth():
    history = _messages(5)
    cache = PromptCache(COUNTER, "claude-sonnet-4-5", CacheSettings(ttl_s=3600))
    first = cache.call(_request(history[:3]), 0.0, output_tokens=0)
    second = cache.call(_request(history), 3000.0, output_tokens=0)  # 50 minutes later: still live
    assert first.cost_usd == pytest.approx(2.0 * (2_000 + 3 * BLOCK) * PRICE)
    assert second.cost_usd == pytest.approx((0.1 * (2_000 + 3 * BLOCK) + 2.0 * 2 * BLOCK) * PRICE)


def test_an_anthropic_ttl_other_than_five_minutes_or_an_hour_is_refused():
    with pytest.raises(ValueError, match="300 .* and 3600"):
        CacheSettings(ttl_s=7200)


def test_openai_reads_the_previous_prompt_in_whole_128_token_steps_at_its_cached_price():
    history = _messages(5)
    cache = _auto(GPT_4O)
    first = cache.call(_request(history[:3]), 0.0, output_tokens=100)
    second = cache.call(_request(history), 10.0, output_tokens=0)
    sent = 2_000 + 3 * BLOCK  # 2,321 tokens sent before: 18 steps of 128 = 2,304 cached
    assert (first.cache_read, first.cost_usd) == (0, pytest.approx((sent * 2.5 + 100 * 10.0) / 1e6))
    assert (second.cache_read, second.cache_write) == (2_304, 0)
    assert second.cost_usd == pytest.approx((2_304 * 1.25 + (second.tokens - 2_304) * 2.5) / 1e6)


def test_openai_caches_nothing_under_1024_tokens():
    cache = _auto(GPT_4O)
    small = _messages(4)
    for t in (0.0, 1.0):
        cost = cache.call(_request(small, system="short"), t, output_tokens=0)
    assert cost.cache_read == 0 and cost.plain == cost.tokens


def test_an_automatic_cache_forgets_a_prefix_unused_past_its_lifetime():
    history = _messages(5)
    cache = _auto(GPT_4O)  # 300 s assumed for OpenAI
    cache.call(_request(history[:3]), 0.0, 0)
    assert cache.call(_request(history), 301.0, 0).cache_read == 0
    assert cache.call(_request(history), 600.0, 0).cache_read == (2_000 + 5 * BLOCK) // 128 * 128


def test_deepseek_reads_in_64_token_units_at_its_hit_price():
    history = _messages(5)
    cache = _auto(DEEPSEEK)
    cache.call(_request(history[:3]), 0.0, 0)
    second = cache.call(_request(history), 10.0, 0)
    assert second.cache_read == (2_000 + 3 * BLOCK) // 64 * 64 == 2_304
    assert second.cost_usd == pytest.approx((2_304 * 0.07 + (second.tokens - 2_304) * 0.27) / 1e6)


def test_gemini_3_pro_caches_only_prefixes_of_4096_tokens_or_more():
    history = _messages(30)
    cache = _auto(GEMINI)
    cache.call(_request(history[:10]), 0.0, 0)  # 3,070 tokens: under Gemini 3 Pro's minimum
    assert cache.call(_request(history[:20]), 1.0, 0).cache_read == 0
    third = cache.call(_request(history), 2.0, 0)  # the 20-message prefix, 4,140 tokens, was sent
    assert third.cache_read == 2_000 + 20 * BLOCK
    assert third.cost_usd == pytest.approx((third.cache_read * 0.20 + 10 * BLOCK * 2.0) / 1e6)


def test_a_rewrite_in_the_middle_keeps_only_the_prefix_before_it_on_an_automatic_cache():
    history = _messages(30)
    rewritten = [*history[:25], *_messages(5, tag="r")[:1], *history[26:]]
    cache = _auto(DEEPSEEK)
    cache.call(_request(history), 0.0, 0)
    assert cache.call(_request(rewritten), 1.0, 0).cache_read == (2_000 + 25 * BLOCK) // 64 * 64


def test_a_model_without_a_cache_pays_every_input_token():
    gpt4 = model_price("gpt4")
    cache = cache_for(gpt4, COUNTER, CacheSettings())
    history = _messages(5)
    cache.call(_request(history), 0.0, 0)
    again = cache.call(_request(history), 1.0, 50)
    assert (again.cache_read, again.plain) == (0, again.tokens)
    assert again.cost_usd == pytest.approx((again.tokens * 30.0 + 50 * 60.0) / 1e6)


def test_a_summarizer_call_reads_nothing_and_pays_plain_input_on_an_automatic_cache():
    assert _auto(DEEPSEEK).fresh_call(5_000, 300).cost_usd == pytest.approx((5_000 * 0.27 + 300 * 1.10) / 1e6)


def test_a_summarizer_call_on_a_one_hour_anthropic_cache_is_written_at_twice_the_input_price():
    cache = PromptCache(COUNTER, "claude-sonnet-4-5", CacheSettings(ttl_s=3600))
    assert cache.fresh_call(5_000, 300).cost_usd == pytest.approx((2.0 * 5_000 + 5 * 300) * PRICE)


def test_output_is_priced_at_the_traces_own_models_output_price():
    assert _auto(GEMINI).fresh_call(0, 1_000).cost_usd == pytest.approx(1_000 * 12.0 / 1e6)
    assert _auto(DEEPSEEK).fresh_call(0, 1_000).cost_usd == pytest.approx(1_000 * 1.10 / 1e6)


def test_per_trace_pricing_follows_the_recorded_model_and_names_a_fallback():
    assert pricing_for(PER_TRACE, "deepseek/deepseek-reasoner", "claude-sonnet-4-5").price.provider == "deepseek"
    claude = pricing_for(PER_TRACE, "claude-3-5-sonnet-20241022", "claude-sonnet-4-5").price
    assert (claude.kind, claude.input, claude.output) == ("explicit", 3.0, 15.0)
    unknown = pricing_for(PER_TRACE, "replay", "claude-sonnet-4-5")
    assert unknown.price.name == "claude-sonnet-4-5" and "model unknown: replay" in unknown.priced_as
    assert (
        pricing_for("deepseek-chat", "google/gemini-3-pro-preview", "claude-sonnet-4-5").price.name == "deepseek-chat"
    )


def test_an_unknown_fixed_pricing_is_a_usage_error():
    with pytest.raises(ConfigError, match="--pricing nonesuch-7b: no price known"):
        pricing_for("nonesuch-7b", None, "claude-sonnet-4-5")
