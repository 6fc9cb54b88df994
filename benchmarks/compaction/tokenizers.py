"""Token counters the benchmark measures with (`--tokenizer`), and block-level counts.

The measuring counter decides what the tables, costs and the feasibility check count, and
(with `--harness-count calibrated`, the default) what the replayed model reports as its
usage: the replayed harness calibrates its own estimator (`agents/tokens.py`, characters / 4)
by it as it would by a provider's usage live, and compacts by the calibrated count. Every counter here frames messages the way the estimator does
(4 tokens a message, 3 a block, 8 a tool schema), so only the text counts differ.

- `real`      (default) real counts: `usage` on a trace that records its provider's
              usage, `tekken` on one that does not.
- `estimate`  the harness's estimator.
- `tekken`    Mistral's Tekken BPE (131k vocabulary), whose data ships inside the
              `mistral-common` wheel (the optional `bench` extra), so it runs offline. A
              real tokenizer of a current code model, not Claude's: use it to see how far
              chars/4 is from a BPE count.
- `usage`     the estimator scaled per trace by what the recorded model's API billed:
              scale = sum of recorded input tokens / sum of the estimator's count of the
              same contexts (system prompt + the messages before each call). A trace
              without recorded usage keeps scale 1 (named in the report).
- `anthropic` the estimator scaled per trace by Anthropic `count_tokens` on up to
              `ANTHROPIC_SAMPLES` recorded contexts; needs ANTHROPIC_API_KEY (never used
              in tests).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from functools import cache
from typing import Any

from agents.errors import ConfigError
from agents.messages import (
    ContentBlock,
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from agents.tokens import (
    BLOCK_OVERHEAD_TOKENS,
    IMAGE_TOKENS,
    MESSAGE_OVERHEAD_TOKENS,
    CharRatioEstimator,
    TokenCounter,
    estimate_messages_tokens,
    message_token_cache,
)
from benchmarks.traces import Trace, model_calls

__all__ = [
    "ANTHROPIC_SAMPLES",
    "TOKENIZERS",
    "ScaledCounter",
    "TekkenCounter",
    "block_tokens",
    "context_estimates",
    "make_counter",
    "trace_scale",
    "usage_scale",
]

TOKENIZERS = ("real", "estimate", "tekken", "usage", "anthropic")
ANTHROPIC_SAMPLES = 5
ANTHROPIC_COUNT_MODEL = "claude-sonnet-4-5"


def block_tokens(counter: TokenCounter, block: ContentBlock) -> int:
    """One content block as the estimator frames it (body + 3; agents.tokens)."""
    if isinstance(block, TextBlock):
        body = counter.count_text(block.text)
    elif isinstance(block, ToolUseBlock):
        body = counter.count_text(block.name) + counter.count_json(block.input)
    elif isinstance(block, ToolResultBlock):
        body = counter.count_text(block.content)
    elif isinstance(block, ThinkingBlock):
        if not block.signature:
            return 0  # unsigned reasoning is never sent
        body = counter.count_text(block.thinking)
    elif isinstance(block, RedactedThinkingBlock):
        body = counter.count_text(block.data)
    else:
        assert isinstance(block, ImageBlock)
        body = IMAGE_TOKENS
    return body + BLOCK_OVERHEAD_TOKENS


class _Framed:
    """count_message from count_text / count_json, cached on the message under `key`."""

    key: str

    def count_text(self, text: str) -> int:  # pragma: no cover - overridden
        raise NotImplementedError

    def count_json(self, value: Any) -> int:
        return self.count_text(json.dumps(value, separators=(",", ":"), ensure_ascii=False))

    def count_message(self, message: Message) -> int:
        cache_ = message_token_cache(message)
        cached = cache_.get(self.key)
        if cached is None:
            cached = MESSAGE_OVERHEAD_TOKENS + sum(block_tokens(self, b) for b in message.content)
            cache_[self.key] = cached
        return cached


@cache
def _tekken() -> Any:
    try:
        import mistral_common
        from mistral_common.tokens.tokenizers.tekken import Tekkenizer
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise ConfigError("--tokenizer tekken needs mistral-common: pip install -e '.[bench]'") from exc
    from pathlib import Path

    data = Path(mistral_common.__file__).parent / "data" / "tekken_240911.json"
    if not data.is_file():  # pragma: no cover - depends on the installed wheel
        raise ConfigError(f"--tokenizer tekken: {data} is missing from the mistral-common install")
    return Tekkenizer.from_file(str(data))


class TekkenCounter(_Framed):
    key = "tekken-240911"

    def __init__(self) -> None:
        self._tokenizer = _tekken()

    def count_text(self, text: str) -> int:
        return len(self._tokenizer.encode(text, bos=False, eos=False)) if text else 0


class ScaledCounter(_Framed):
    """Another counter's text counts times `scale` (rounded up); framing unscaled."""

    def __init__(self, base: TokenCounter, scale: float, label: str):
        if scale <= 0:
            raise ValueError("scale must be positive")
        self.base, self.scale = base, scale
        self.key = f"{base.key}x{scale:.6f}:{label}"

    def count_text(self, text: str) -> int:
        return math.ceil(self.base.count_text(text) * self.scale)

    def count_json(self, value: Any) -> int:
        return math.ceil(self.base.count_json(value) * self.scale)


def context_estimates(trace: Trace, counter: TokenCounter) -> list[int]:
    """For each model call: `counter`'s tokens of the context it was sent (system prompt +
    the messages before it; the recorded agent's own tool schemas are not in the file)."""
    system = counter.count_text(trace.system)
    out, running, done = [], 0, 0
    for i in model_calls(trace):
        running += estimate_messages_tokens(counter, trace.messages[done:i])
        done = i
        out.append(system + running)
    return out


def usage_scale(trace: Trace, counter: TokenCounter | None = None) -> float | None:
    """Recorded input tokens / the estimator's count of the same contexts, pooled over the
    calls whose usage the file records; None when it records none."""
    counter = counter or CharRatioEstimator()
    pairs = [
        (c.input_tokens, e)
        for c, e in zip(trace.calls, context_estimates(trace, counter), strict=False)
        if c.input_tokens
    ]
    estimated = sum(e for _, e in pairs)
    return sum(r for r, _ in pairs) / estimated if estimated else None


def _anthropic_scale(trace: Trace, samples: int = ANTHROPIC_SAMPLES) -> float:
    import anthropic

    from benchmarks.traces import to_anthropic_messages

    client = anthropic.Anthropic()
    calls = model_calls(trace)
    picks = sorted({calls[round(j * (len(calls) - 1) / max(samples - 1, 1))] for j in range(min(samples, len(calls)))})
    counter, counted, estimated = CharRatioEstimator(), 0, 0
    for i in picks:
        cut = trace.model_copy(update={"messages": trace.messages[:i], "calls": []})
        doc = to_anthropic_messages(cut)
        system = trace.system or anthropic.omit  # an empty system prompt is not sent
        counted += client.messages.count_tokens(
            model=ANTHROPIC_COUNT_MODEL, messages=doc["messages"], system=system
        ).input_tokens
        estimated += counter.count_text(trace.system) + estimate_messages_tokens(counter, trace.messages[:i])
    return counted / estimated


def check_tokenizer(name: str) -> None:
    """A usage error before any replay starts: unknown name, missing key or package."""
    if name not in TOKENIZERS:
        raise ConfigError(f"--tokenizer {name}: unknown; known: {', '.join(TOKENIZERS)}")
    if name == "anthropic" and not os.environ.get("ANTHROPIC_API_KEY"):
        raise ConfigError("--tokenizer anthropic needs ANTHROPIC_API_KEY (count_tokens is an API call)")
    if name in ("tekken", "real"):
        _tekken()


def trace_scale(name: str, trace: Trace) -> float | None:
    """The per-trace scale of a scaled counter (`usage`, `anthropic`); None otherwise or
    when the trace has nothing to scale by. Computed once per trace, not per strategy."""
    if name in ("usage", "real"):
        return usage_scale(trace)
    if name == "anthropic":
        return _anthropic_scale(trace)
    return None


def make_counter(name: str, scale: float | None = None) -> TokenCounter:
    """The measuring counter: `scale` (from `trace_scale`) applies to usage / anthropic."""
    if name == "tekken" or (name == "real" and scale is None):
        return TekkenCounter()
    if name in ("usage", "anthropic", "real") and scale is not None:
        return ScaledCounter(CharRatioEstimator(), scale, name)
    if name in TOKENIZERS:
        return CharRatioEstimator()
    raise ConfigError(f"--tokenizer {name}: unknown; known: {', '.join(TOKENIZERS)}")


def message_block_tokens(counter: TokenCounter, messages: Sequence[Message]) -> list[int]:
    """Per content block of `messages`: its tokens, the message framing on its first block."""
    out = []
    for m in messages:
        for j, b in enumerate(m.content):
            out.append(block_tokens(counter, b) + (MESSAGE_OVERHEAD_TOKENS if j == 0 else 0))
    return out
