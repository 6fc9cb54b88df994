"""What a trace's calls cost: each recorded model's list prices and its provider's cache rule.

`--pricing per-trace` (the default) prices every trace as its own model's provider bills
it; `--pricing NAME` prices every trace as model NAME. Both are always computed (the
verdict is given under each); `--pricing` picks the one the tables and figures show.
A trace whose model is not in the table (or not recorded) is priced as the fixed model
(`--pricing-model`), and says so (`Pricing.priced_as`).

Cache rules (`kind`):
- `explicit`  Anthropic: entries only at `cache_control` breakpoints; a write costs 1.25x
              the input price with the 5-minute TTL and 2x with the 1-hour TTL, a read
              0.1x (`cache_model.PromptCache`).
- `automatic` OpenAI, DeepSeek, Gemini: every prefix the provider saw is cached, no write
              premium; cached input at the model's own cached price
              (`auto_cache.AutoPrefixCache`; minimum, step and lifetime per provider,
              `AUTO_CACHE_RULES`).
- `none`      no prompt cache (GPT-4, Llama 4 Maverick as recorded: 0 cached tokens).

Prices are USD per million tokens, read from each provider's pricing page (the `source`
of each row); Anthropic and OpenAI rows come from Workingset's own table
(`agents.providers._catalog`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from agents.errors import ConfigError
from agents.providers import model_info

__all__ = [
    "AUTO_CACHE_RULES",
    "PER_TRACE",
    "TRACE_MODELS",
    "AutoCacheRule",
    "ModelPrice",
    "Pricing",
    "model_price",
    "pricing_for",
]

PER_TRACE = "per-trace"
CacheKind = Literal["explicit", "automatic", "none"]
Provider = Literal["anthropic", "openai", "deepseek", "gemini", "none"]


class AutoCacheRule(BaseModel):
    """An automatic prefix cache: a prefix of at least `min_tokens` is served from the
    cache in whole `step`s, if some request sent it at most `ttl_s` seconds before."""

    min_tokens: int = Field(ge=1)
    step: int = Field(ge=1)
    ttl_s: float = Field(gt=0)
    source: str = ""


# Documented minimum and step; the lifetime is an assumption where no provider states one.
AUTO_CACHE_RULES: dict[str, AutoCacheRule] = {
    "openai": AutoCacheRule(
        min_tokens=1024,
        step=128,
        ttl_s=300,
        source="OpenAI prompt-caching guide: prompts of 1,024 tokens or more, hits in 128-token increments; "
        "cached prefixes stay for 5-10 minutes of inactivity (the lower end assumed)",
    ),
    "deepseek": AutoCacheRule(
        min_tokens=64,
        step=64,
        ttl_s=3600,
        source="DeepSeek context-caching guide: on-disk cache on by default, 64-token storage units, unused "
        "entries cleared within hours to days (1 hour assumed)",
    ),
    "gemini": AutoCacheRule(
        min_tokens=4096,
        step=1,
        ttl_s=300,
        source="Gemini API caching guide: implicit caching on by default for Gemini 2.5 and newer, minimum "
        "4,096 tokens for Gemini 3 Pro; no step or lifetime is documented (1 token and 5 minutes assumed)",
    ),
}


class ModelPrice(BaseModel):
    """One model's list prices (USD per million tokens) and how its provider caches."""

    name: str
    provider: Provider
    kind: CacheKind
    input: float
    output: float
    cached_input: float  # the read price (explicit: 0.1x input)
    min_cacheable_tokens: int | None = None  # explicit and automatic; None: the provider's rule
    source: str


# Models the corpus records that Workingset's own table does not price (match: the name
# after any provider path, exactly or with a date or version after it).
TRACE_MODELS: tuple[ModelPrice, ...] = (
    ModelPrice(
        name="gemini-3-pro-preview",
        provider="gemini",
        kind="automatic",
        input=2.0,
        output=12.0,
        cached_input=0.20,
        min_cacheable_tokens=4096,
        source="ai.google.dev/gemini-api/docs/pricing, Gemini 3 Pro Preview, prompts <= 200K tokens "
        "(input $2.00, output $12.00, context caching $0.20)",
    ),
    ModelPrice(
        name="deepseek-chat",
        provider="deepseek",
        kind="automatic",
        input=0.27,
        output=1.10,
        cached_input=0.07,
        source="api-docs.deepseek.com/quick_start/pricing-details-usd, deepseek-chat (cache miss $0.27, "
        "cache hit $0.07, output $1.10)",
    ),
    ModelPrice(
        name="deepseek-reasoner",
        provider="deepseek",
        kind="automatic",
        input=0.55,
        output=2.19,
        cached_input=0.14,
        source="api-docs.deepseek.com/quick_start/pricing-details-usd, deepseek-reasoner (cache miss "
        "$0.55, cache hit $0.14, output $2.19)",
    ),
    ModelPrice(
        name="gpt-4",
        provider="none",
        kind="none",
        input=30.0,
        output=60.0,
        cached_input=30.0,
        source="OpenAI pricing, gpt-4 (legacy) $30 / $60; automatic prompt caching applies to gpt-4o and newer only",
    ),
    ModelPrice(
        name="openrouter-llama-4-maverick",
        provider="none",
        kind="none",
        input=0.15,
        output=0.60,
        cached_input=0.15,
        source="openrouter.ai/meta-llama/llama-4-maverick ($0.15 / $0.60); the recorded usage shows no cached tokens",
    ),
)


_ALIASES = {"gpt4": "gpt-4"}  # SWE-agent's name for it


def _bare(name: str) -> str:
    return name.partition(":")[2] if ":" in name else name


def model_price(name: str | None) -> ModelPrice | None:
    """The price row of a model name (`google/gemini-3-pro-preview`, `claude-3-5-sonnet-20241022`,
    `anthropic:claude-sonnet-4-5`); None when no table knows it."""
    if not name:
        return None
    bare = _bare(name).rsplit("/", 1)[-1].lower()
    bare = _ALIASES.get(bare, bare)
    for row in TRACE_MODELS:
        if bare == row.name or (bare.startswith(row.name + "-") and bare[len(row.name) + 1 :][:1].isdigit()):
            return row
    info = model_info(bare)
    if info.prices is None:
        return None
    p = info.prices
    if bare.startswith("claude"):
        return ModelPrice(
            name=bare,
            provider="anthropic",
            kind="explicit",
            input=p.input,
            output=p.output,
            cached_input=p.cache_read,
            source="agents.providers._catalog (Anthropic list prices)",
        )
    return ModelPrice(
        name=bare,
        provider="openai",
        kind="automatic",
        input=p.input,
        output=p.output,
        cached_input=p.cache_read,
        source="agents.providers._catalog (OpenAI list prices)",
    )


class Pricing(BaseModel):
    """How one trace is priced: the row used, and under which name it was looked up."""

    label: str  # `per-trace` or the fixed model's name
    price: ModelPrice
    priced_as: str  # the recorded model, or "<fixed> (model unknown: <recorded>)"


def pricing_for(label: str, trace_model: str | None, fixed: str) -> Pricing:
    """`label` is PER_TRACE or a model name; unknown trace models fall back to `fixed`."""
    if label != PER_TRACE:
        row = model_price(label)
        if row is None:
            raise ConfigError(
                f"--pricing {label}: no price known for this model; known: {PER_TRACE}, "
                f"claude-*, gpt-*, {', '.join(r.name for r in TRACE_MODELS)}"
            )
        return Pricing(label=label, price=row, priced_as=label)
    row = model_price(trace_model)
    if row is not None:
        return Pricing(label=label, price=row, priced_as=trace_model or "")
    fallback = model_price(fixed)
    if fallback is None:
        raise ConfigError(f"--pricing-model {fixed}: no price known for this model")
    return Pricing(label=label, price=fallback, priced_as=f"{fixed} (model unknown: {trace_model or 'not recorded'})")
