"""One replay priced under one pricing: its calls through the provider's cache rule, then its
summarizer calls as requests of their own (rules: `cache_model`, `auto_cache`)."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from agents.tokens import TokenCounter
from benchmarks.replay import ReplayResult

from .auto_cache import AutoPrefixCache, NoCache
from .cache_cost import SummarizerCall
from .cache_model import ApiCallCost, CacheSettings, PromptCache, call_times
from .pricing import AUTO_CACHE_RULES, AutoCacheRule, ModelPrice, Pricing

__all__ = ["PricedRun", "cache_for", "price_replay"]


class PricedRun(BaseModel):
    """What the calls and summarizer calls of one replay cost under one pricing."""

    pricing: str
    priced_as: str
    cache_rule: str  # explicit, automatic (provider) or none
    input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    plain_input_tokens: int = 0
    output_tokens: int = 0
    main_cost_usd: float = 0.0
    output_cost_usd: float = 0.0
    summarizer_cost_usd: float = 0.0
    cost_usd: float = 0.0

    @property
    def cached_share(self) -> float | None:
        return self.cache_read_tokens / self.input_tokens if self.input_tokens else None


def auto_rule(provider: str, settings: CacheSettings) -> AutoCacheRule:
    rule = AUTO_CACHE_RULES[provider]
    return rule.model_copy(update=settings.auto.get(provider, {})) if provider in settings.auto else rule


def cache_for(model: ModelPrice, counter: TokenCounter, settings: CacheSettings):
    if model.kind == "explicit":
        return PromptCache(counter, model, settings)
    if model.kind == "automatic":
        return AutoPrefixCache(counter, model, auto_rule(model.provider, settings))
    return NoCache(counter, model)


def price_replay(
    replay: ReplayResult,
    measured: Sequence[tuple[int, int]],
    outputs: Sequence[int],
    summarizer_calls: Sequence[SummarizerCall],
    pricing: Pricing,
    counter: TokenCounter,
    settings: CacheSettings,
) -> PricedRun:
    """`measured`: (request index, message index) of each recorded call; `outputs`: its
    output tokens."""
    model = pricing.price
    cache = cache_for(model, counter, settings)
    times = call_times([replay.trace.call_record(k).timestamp for k, _ in measured], settings.default_gap_s)
    calls: list[ApiCallCost] = [
        cache.call(replay.requests[k], now, out) for (k, _), now, out in zip(measured, times, outputs, strict=True)
    ]
    summaries = [cache.fresh_call(c.input_tokens, c.output_tokens) for c in summarizer_calls]
    main = sum(c.cost_usd for c in calls)
    summ = sum(c.cost_usd for c in summaries)
    rule = model.kind if model.kind != "automatic" else f"automatic ({model.provider})"
    return PricedRun(
        pricing=pricing.label,
        priced_as=pricing.priced_as,
        cache_rule=rule,
        input_tokens=sum(c.tokens for c in calls),
        cache_read_tokens=sum(c.cache_read for c in calls),
        cache_write_tokens=sum(c.cache_write for c in calls),
        plain_input_tokens=sum(c.plain for c in calls),
        output_tokens=sum(c.output for c in calls),
        main_cost_usd=main,
        output_cost_usd=sum(c.output for c in calls) * model.output / 1_000_000,
        summarizer_cost_usd=summ,
        cost_usd=main + summ,
    )
