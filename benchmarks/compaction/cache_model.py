"""A model of what the Anthropic Messages API bills for a sequence of requests with prompt
caching (the `explicit` cache rule; automatic prefix caches are `auto_cache.py`, the
earlier longest-common-prefix model is `lcp`, in `cache_cost.py`).

The prompt is a sequence of blocks in the API's order: each tool schema, the system
prompt, then every content block of every message. A breakpoint is a block carrying
`cache_control`; Workingset's Anthropic provider puts them on the last tool schema, the
system prompt, the last block of the last message, and the last block of the latest
earlier message holding a compaction marker (`compacted`,
`agents/compaction/cache_points.py`), which is the default `breakpoints`. For each
request, at time t:

1. Read: for every breakpoint p, the blocks p, p-1, ..., p-lookback+1 are checked for a
   live cache entry of the prefix ending there; the longest prefix found is read
   (`cache_read` tokens = its length). An entry is live if it was written or read at
   most `ttl_s` seconds before t.
2. Write: every breakpoint after the read prefix whose prefix is at least the model's
   minimum cacheable length writes an entry for its prefix; `cache_write` tokens = from
   the end of the read prefix to the furthest such breakpoint.
3. The rest of the prompt is plain input. The read entry (and every entry of a shorter
   breakpoint prefix it covers) is refreshed to t.

Cost = input price x (read x read_multiplier + write x write_multiplier + plain) + output
x the model's output price. A write costs 1.25x the input price with the 5-minute TTL
and 2x with the 1-hour TTL (Anthropic's prompt-caching prices; `write_multiplier` None
picks it from `ttl_s`); a read 0.1x, whatever the TTL. Times come from the trace's own
call timestamps; a trace without them is replayed with `default_gap_s` between calls
(None: entries never expire). Summarizer calls are priced as requests of their own: they
read nothing (their system prompt is not the agent's, so no cached prefix matches), and
their input is written at the write price when it reaches the minimum cacheable length,
since Workingset's Anthropic provider marks the last message of every request, a
summarizer's too; otherwise it is plain input.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field, model_validator

from agents.compaction import CACHE_READ_MULTIPLIER, CACHE_WRITE_MULTIPLIER, compacted_breakpoint
from agents.messages import ContentBlock, Message, TextBlock, ToolResultBlock, ToolUseBlock
from agents.ports import ModelRequest
from agents.tokens import TOOL_SCHEMA_OVERHEAD_TOKENS, TokenCounter

from .pricing import ModelPrice, model_price
from .tokenizers import message_block_tokens

__all__ = [
    "MIN_CACHEABLE_TOKENS",
    "ApiCallCost",
    "CacheSettings",
    "PromptCache",
    "RequestLayout",
    "min_cacheable_tokens",
    "write_multiplier_for",
]

Breakpoint = Literal["tools", "system", "compacted", "last_message"]

# Minimum cacheable prompt length by model name substring (first match), from Anthropic's
# prompt-caching documentation; anything else (Sonnet 3.7-4.6, Opus 3-4.1) is 1,024.
MIN_CACHEABLE_TOKENS: tuple[tuple[str, int], ...] = (
    ("opus-4-6", 4096),
    ("opus-4-5", 4096),
    ("haiku-4-5", 4096),
    ("haiku", 2048),  # Haiku 3 and 3.5
)
DEFAULT_MIN_CACHEABLE_TOKENS = 1024
FIVE_MINUTES, ONE_HOUR = 300.0, 3600.0
ONE_HOUR_WRITE_MULTIPLIER = 2.0  # Anthropic: a 1-hour cache write costs 2x the input price


def min_cacheable_tokens(model_name: str) -> int:
    for needle, tokens in MIN_CACHEABLE_TOKENS:
        if needle in model_name:
            return tokens
    return DEFAULT_MIN_CACHEABLE_TOKENS


def write_multiplier_for(ttl_s: float) -> float:
    """Anthropic's cache-write price for an entry lifetime: 5 minutes 1.25x, 1 hour 2x."""
    if ttl_s <= FIVE_MINUTES:
        return CACHE_WRITE_MULTIPLIER
    if ttl_s <= ONE_HOUR:
        return ONE_HOUR_WRITE_MULTIPLIER
    raise ValueError(f"no Anthropic cache lives {ttl_s:g} s: the TTLs are 300 (5 minutes) and 3600 (1 hour)")


class CacheSettings(BaseModel):
    """Every parameter of the explicit (Anthropic) cost model (docs/benchmarks.md, "Cost"); the
    automatic caches' rules are `pricing.AUTO_CACHE_RULES`, overridden by `auto`."""

    breakpoints: tuple[Breakpoint, ...] = ("tools", "system", "compacted", "last_message")
    lookback_blocks: int = Field(20, ge=1)
    min_cacheable_tokens: int | None = Field(None, ge=0)  # None: by the pricing model's family
    ttl_s: float = Field(300.0, gt=0)
    default_gap_s: float | None = Field(None, ge=0)
    read_multiplier: float = CACHE_READ_MULTIPLIER
    write_multiplier: float | None = None  # None: by the TTL (write_multiplier_for)
    output_tokens: Literal["recorded", "estimate"] = "recorded"
    auto: dict[str, dict[str, float]] = Field(default_factory=dict)  # provider -> AutoCacheRule fields to override

    @model_validator(mode="after")
    def _known_ttl(self) -> CacheSettings:
        write_multiplier_for(self.ttl_s)
        return self

    @property
    def write_price_multiplier(self) -> float:
        return self.write_multiplier if self.write_multiplier is not None else write_multiplier_for(self.ttl_s)


@dataclass(frozen=True)
class ApiCallCost:
    tokens: int
    cache_read: int
    cache_write: int
    plain: int
    output: int
    cost_usd: float


def _digest(role: str, first: bool, block: ContentBlock) -> int:
    if isinstance(block, TextBlock):
        body: tuple = ("text", block.text)
    elif isinstance(block, ToolUseBlock):
        body = ("tool_use", block.id, block.name, json.dumps(block.input, sort_keys=True, default=str))
    elif isinstance(block, ToolResultBlock):
        body = ("tool_result", block.tool_use_id, block.content, block.is_error)
    else:  # thinking, redacted thinking, an image: the block as it would be sent
        body = (block.type, block.model_dump_json())
    return hash((role, first, body))


@dataclass
class _Blocks:
    """Digest and tokens of each block of each message seen, by message identity."""

    counter: TokenCounter
    _memo: dict[int, tuple[Message, list[int], list[int]]] = field(default_factory=dict)

    def of(self, message: Message) -> tuple[list[int], list[int]]:
        memo = self._memo.get(id(message))
        if memo is None or memo[0] is not message:
            digests = [_digest(message.role, j == 0, b) for j, b in enumerate(message.content)]
            memo = (message, digests, message_block_tokens(self.counter, [message]))
            self._memo[id(message)] = memo
        return memo[1], memo[2]


def _price_row(model: str | ModelPrice) -> ModelPrice:
    if isinstance(model, ModelPrice):
        return model
    row = model_price(model)
    if row is None:  # an unknown name: the reference price, as the ledger estimates
        return ModelPrice(
            name=model,
            provider="anthropic",
            kind="explicit",
            input=3.0,
            output=15.0,
            cached_input=0.3,
            source="reference price (model unknown)",
        )
    return row


class RequestLayout:
    """A request as the API sees it: a digest and a token count per block (tool schemas,
    system prompt, message blocks) and where the breakpoints fall."""

    def __init__(self, counter: TokenCounter):
        self.counter = counter
        self._blocks = _Blocks(counter)

    def _layout(self, request: ModelRequest) -> tuple[list[int], list[int], dict[Breakpoint, int]]:
        digests: list[int] = []
        tokens: list[int] = []
        marks: dict[Breakpoint, int] = {}
        for tool in request.tools:
            schema = tool.model_dump() if hasattr(tool, "model_dump") else tool
            digests.append(hash(("tool", json.dumps(schema, sort_keys=True, default=str))))
            tokens.append(TOOL_SCHEMA_OVERHEAD_TOKENS + self.counter.count_json(schema))
        if request.tools:
            marks["tools"] = len(digests) - 1
        if request.system:
            digests.append(hash(("system", request.system)))
            tokens.append(self.counter.count_text(request.system))
            marks["system"] = len(digests) - 1
        anchor = compacted_breakpoint(request.messages)
        for i, message in enumerate(request.messages):
            d, t = self._blocks.of(message)
            digests.extend(d)
            tokens.extend(t)
            if i == anchor and d:
                marks["compacted"] = len(digests) - 1
        if request.messages:
            marks["last_message"] = len(digests) - 1
        return digests, tokens, marks

    def prefixes(self, request: ModelRequest) -> tuple[list[int], list[int], dict[Breakpoint, int]]:
        """(hash of the prefix ending at each block, cumulative tokens there, breakpoints)."""
        digests, tokens, marks = self._layout(request)
        prefix, cumulative, running, h = [], [], 0, 0
        for d, t in zip(digests, tokens, strict=True):
            h = hash((h, d))
            running += t
            prefix.append(h)
            cumulative.append(running)
        return prefix, cumulative, marks


class PromptCache(RequestLayout):
    """The API's explicit cache state over one trace's requests (one instance per replay)."""

    def __init__(self, counter: TokenCounter, pricing_model: str | ModelPrice, settings: CacheSettings | None = None):
        super().__init__(counter)
        self.settings = settings or CacheSettings()
        self.model = _price_row(pricing_model)
        self.price = self.model.input / 1_000_000
        self.output_price = self.model.output / 1_000_000
        self.minimum = (
            self.settings.min_cacheable_tokens
            if self.settings.min_cacheable_tokens is not None
            else self.model.min_cacheable_tokens or min_cacheable_tokens(self.model.name)
        )
        self._entries: dict[int, float] = {}  # prefix hash -> last written or read

    def _live(self, key: int, now: float) -> bool:
        seen = self._entries.get(key)
        return seen is not None and now - seen <= self.settings.ttl_s

    def call(self, request: ModelRequest, now: float, output_tokens: int) -> ApiCallCost:
        prefix, cumulative, marks = self.prefixes(request)
        running = cumulative[-1] if cumulative else 0
        points = sorted({marks[b] for b in self.settings.breakpoints if b in marks})
        hit = -1
        for p in points:
            for q in range(p, max(p - self.settings.lookback_blocks, -1), -1):
                if q <= hit:
                    break
                if self._live(prefix[q], now):
                    hit = q
                    break
        read = cumulative[hit] if hit >= 0 else 0
        for q in [hit, *(p for p in points if p < hit)]:
            if q >= 0 and prefix[q] in self._entries:
                self._entries[prefix[q]] = now
        written = [p for p in points if p > hit and cumulative[p] >= self.minimum]
        for p in written:
            self._entries[prefix[p]] = now
        write = cumulative[max(written)] - read if written else 0
        total = running
        return self._priced(total, read, write, output_tokens)

    def _priced(self, total: int, read: int, write: int, output: int) -> ApiCallCost:
        s = self.settings
        plain = total - read - write
        billed = read * s.read_multiplier + write * s.write_price_multiplier + plain
        return ApiCallCost(total, read, write, plain, output, billed * self.price + output * self.output_price)

    def fresh_call(self, input_tokens: int, output_tokens: int) -> ApiCallCost:
        """A request that can read nothing (a summarizer call): written if long enough."""
        write = input_tokens if input_tokens >= self.minimum else 0
        return self._priced(input_tokens, 0, write, output_tokens)


def call_times(recorded: Sequence[float | None], default_gap_s: float | None) -> list[float]:
    """A time for every call: the recorded one, else the previous plus `default_gap_s`
    (0 when None, so nothing expires between calls without a recorded time)."""
    gap = default_gap_s or 0.0
    out: list[float] = []
    for t in recorded:
        out.append(t if t is not None else (out[-1] + gap if out else 0.0))
    return out
