"""Automatic prefix caching (OpenAI, DeepSeek, Gemini implicit) and no caching at all.

An automatic cache needs no breakpoints: every request the provider processes leaves its
prompt cached, and a later request whose prompt begins with a cached prefix reads that
prefix at the model's cached-input price. The rule (`pricing.AutoCacheRule`), for call k
at time t:

1. the longest prefix of the request, at block boundaries (a block that changed is
   re-read from its start), that an earlier request sent at most `ttl_s` seconds before
   t is the hit; under `min_tokens` it counts as none;
2. the cached tokens are the hit rounded down to a whole `step` (OpenAI: 128-token
   increments; DeepSeek: 64-token units);
3. the rest is plain input; no write premium. Every prefix of this request (at block
   boundaries) is then cached at t, and the ones it read are refreshed.

Only prompts are cached: the reply a call wrote is new input for the next call (a
provider that also caches its output, as DeepSeek's newest guide describes, would read
it too; left out, which makes automatic caching slightly worse for every strategy alike).
A summarizer call reads nothing (its prompt begins with its own system prompt) and
costs its input at the plain price.
"""

from __future__ import annotations

from agents.ports import ModelRequest
from agents.tokens import TokenCounter

from .cache_model import ApiCallCost, RequestLayout
from .pricing import AutoCacheRule, ModelPrice

__all__ = ["AutoPrefixCache", "NoCache"]


class AutoPrefixCache(RequestLayout):
    """The provider's automatic cache over one trace's requests (one instance per replay)."""

    def __init__(self, counter: TokenCounter, model: ModelPrice, rule: AutoCacheRule):
        super().__init__(counter)
        self.model, self.rule = model, rule
        self.price = model.input / 1_000_000
        self.read_price = model.cached_input / 1_000_000
        self.output_price = model.output / 1_000_000
        self.minimum = max(rule.min_tokens, model.min_cacheable_tokens or 0)
        self._seen: dict[int, float] = {}  # prefix hash -> last sent

    def call(self, request: ModelRequest, now: float, output_tokens: int) -> ApiCallCost:
        prefix, cumulative, _ = self.prefixes(request)
        hit = -1
        for q, key in enumerate(prefix):
            seen = self._seen.get(key)
            if seen is None or now - seen > self.rule.ttl_s:
                break  # prefixes nest: no longer one can have been sent either
            hit = q
        longest = cumulative[hit] if hit >= 0 else 0
        read = (longest // self.rule.step) * self.rule.step if longest >= self.minimum else 0
        for key in prefix:
            self._seen[key] = now
        total = cumulative[-1] if cumulative else 0
        return self._priced(total, read, output_tokens)

    def _priced(self, total: int, read: int, output: int) -> ApiCallCost:
        cost = read * self.read_price + (total - read) * self.price + output * self.output_price
        return ApiCallCost(total, read, 0, total - read, output, cost)

    def fresh_call(self, input_tokens: int, output_tokens: int) -> ApiCallCost:
        return self._priced(input_tokens, 0, output_tokens)


class NoCache:
    """A provider without a prompt cache: every input token at the input price."""

    def __init__(self, counter: TokenCounter, model: ModelPrice):
        self.layout = RequestLayout(counter)
        self.model = model
        self.price = model.input / 1_000_000
        self.output_price = model.output / 1_000_000

    def call(self, request: ModelRequest, now: float, output_tokens: int) -> ApiCallCost:
        _, cumulative, _ = self.layout.prefixes(request)
        return self.fresh_call(cumulative[-1] if cumulative else 0, output_tokens)

    def fresh_call(self, input_tokens: int, output_tokens: int) -> ApiCallCost:
        return ApiCallCost(
            input_tokens,
            0,
            0,
            input_tokens,
            output_tokens,
            input_tokens * self.price + output_tokens * self.output_price,
        )
