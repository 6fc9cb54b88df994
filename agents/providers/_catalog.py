"""What is known about a model: its context window and its list prices.

One small table of models whose figures are published (Anthropic and OpenAI), plus
the `models` setting for everything else (an open model behind vLLM, a new
release). A model that neither names is *unknown*: its window must be given
(`compact.context_window`) and its calls are reported as unpriced, never as dollars
at someone else's price.

    lookup order:  settings `models` entry (by full spec, then by bare model name)
                   > the client's own `model_info` attribute, if it has one
                   > `scripted:` models: a 200K window, no price
                   > the table below (longest matching name; a date or `-latest` may follow)
                   > a client whose prefix is no installed provider (an in-process fake
                     or replay, never a spec a user gave): like scripted
                   > unknown

Prices are USD per million tokens. Anthropic bills a cache write (5-minute) at 1.25x
and a cache read at 0.1x the input price; OpenAI bills no cache write and a cached
input at its own listed price.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from agents.ports import Usage
from agents.providers._names import installed_providers

__all__ = [
    "KNOWN_MODELS",
    "ModelEntry",
    "ModelInfo",
    "Prices",
    "REFERENCE_INPUT_PRICE",
    "SelfDescribingClient",
    "cost_usd",
    "input_price_per_mtok",
    "model_info",
    "nearest_known",
    "usage_cost_usd",
]

Pricing = Literal["list", "configured", "scripted", "unknown"]

REFERENCE_INPUT_PRICE = 3.0
"""Input price used only for *estimates* of what a compaction saves when the model's
price is unknown (compaction events); never for what a run cost."""


@dataclass(frozen=True)
class Prices:
    input: float
    output: float
    cache_write: float
    cache_read: float


@dataclass(frozen=True)
class ModelInfo:
    """The figures for one model. `context_window` None: not known."""

    context_window: int | None
    prices: Prices | None
    pricing: Pricing


@runtime_checkable
class SelfDescribingClient(Protocol):
    """A ModelClient that states its own figures, for a model the table would not know;
    None: look its name up (an optional capability: agents.ports lists them)."""

    name: str
    model_info: ModelInfo | None


class ModelEntry(BaseModel):
    """A model the table does not know, or a correction to it (setting `models`)."""

    model_config = ConfigDict(extra="forbid")
    context_window: int | None = Field(None, ge=1_000, description="Tokens the model accepts, input + output.")
    input_usd_per_mtok: float | None = Field(None, ge=0, description="Uncached input price, USD per million tokens.")
    output_usd_per_mtok: float | None = Field(None, ge=0, description="Output price (reasoning included).")
    cache_read_usd_per_mtok: float | None = Field(
        None, ge=0, description="Cached input price (default: the input price)."
    )
    cache_write_usd_per_mtok: float | None = Field(
        None, ge=0, description="Cache write price (default: the input price)."
    )

    def prices(self) -> Prices | None:
        if self.input_usd_per_mtok is None or self.output_usd_per_mtok is None:
            return None
        read = self.cache_read_usd_per_mtok
        write = self.cache_write_usd_per_mtok
        return Prices(
            input=self.input_usd_per_mtok,
            output=self.output_usd_per_mtok,
            cache_write=self.input_usd_per_mtok if write is None else write,
            cache_read=self.input_usd_per_mtok if read is None else read,
        )


def _claude(input_price: float, output_price: float) -> Prices:
    return Prices(input_price, output_price, round(input_price * 1.25, 4), round(input_price * 0.1, 4))


def _openai(input_price: float, output_price: float, cached: float) -> Prices:
    return Prices(input_price, output_price, input_price, cached)


# (name, context window, prices). A name matches a model id that equals it or adds a
# date, `-latest` or a version after it, so `claude-opus-4` never prices `claude-opus-4-6`.
KNOWN_MODELS: tuple[tuple[str, int, Prices], ...] = (
    ("claude-opus-4-5", 200_000, _claude(5.0, 25.0)),
    ("claude-opus-4-1", 200_000, _claude(15.0, 75.0)),
    ("claude-opus-4", 200_000, _claude(15.0, 75.0)),
    ("claude-sonnet-4-5", 200_000, _claude(3.0, 15.0)),
    ("claude-sonnet-4", 200_000, _claude(3.0, 15.0)),
    ("claude-haiku-4-5", 200_000, _claude(1.0, 5.0)),
    ("claude-3-7-sonnet", 200_000, _claude(3.0, 15.0)),
    ("claude-3-5-sonnet", 200_000, _claude(3.0, 15.0)),
    ("claude-3-5-haiku", 200_000, _claude(0.8, 4.0)),
    ("claude-3-opus", 200_000, _claude(15.0, 75.0)),
    ("claude-3-haiku", 200_000, _claude(0.25, 1.25)),
    ("gpt-5", 400_000, _openai(1.25, 10.0, 0.125)),
    ("gpt-5-mini", 400_000, _openai(0.25, 2.0, 0.025)),
    ("gpt-5-nano", 400_000, _openai(0.05, 0.4, 0.005)),
    ("gpt-4.1", 1_047_576, _openai(2.0, 8.0, 0.5)),
    ("gpt-4.1-mini", 1_047_576, _openai(0.4, 1.6, 0.1)),
    ("gpt-4.1-nano", 1_047_576, _openai(0.1, 0.4, 0.025)),
    ("gpt-4o", 128_000, _openai(2.5, 10.0, 1.25)),
    ("gpt-4o-mini", 128_000, _openai(0.15, 0.6, 0.075)),
    ("o1", 200_000, _openai(15.0, 60.0, 7.5)),
    ("o3", 200_000, _openai(2.0, 8.0, 0.5)),
    ("o3-mini", 200_000, _openai(1.1, 4.4, 0.55)),
    ("o4-mini", 200_000, _openai(1.1, 4.4, 0.275)),
)

_VERSION_SUFFIX = re.compile(r"(?:[-@](?:\d{8}|\d{4}-\d{2}-\d{2}|latest|v\d+(?::\d+)?))*")
_SCRIPTED = ModelInfo(context_window=200_000, prices=None, pricing="scripted")
_UNKNOWN = ModelInfo(context_window=None, prices=None, pricing="unknown")


def _bare(name: str) -> str:
    """`anthropic:claude-x` → `claude-x`; a provider path such as `openai/gpt-4o` → `gpt-4o`."""
    return name.partition(":")[2].rsplit("/", 1)[-1] if ":" in name else name.rsplit("/", 1)[-1]


def _from_table(name: str) -> ModelInfo | None:
    bare = _bare(name)
    matches = [e for e in KNOWN_MODELS if bare.startswith(e[0]) and _VERSION_SUFFIX.fullmatch(bare[len(e[0]) :])]
    best = max(matches, key=lambda e: len(e[0]), default=None)
    if best is None:
        return None
    return ModelInfo(context_window=best[1], prices=best[2], pricing="list")


_TRAILING_VERSION = re.compile(r"(?:[-@](?:\d{8}|\d{4}-\d{2}-\d{2}|latest))+$")
_DIGITS = re.compile(r"\d+")
_MORE_NUMBERS = re.compile(r"(?:[-.]\d+)+")


def _another_version(bare: str, known: str) -> bool:
    """`claude-opus-4-6` beside `claude-opus-4-5` or `claude-opus-4`: a newer model, not a typo."""
    if _DIGITS.sub("#", bare) == _DIGITS.sub("#", known):
        return True
    return bare.startswith(known) and _MORE_NUMBERS.fullmatch(bare[len(known) :]) is not None


def nearest_known(name: str) -> str | None:
    """The table's model a misspelt `name` most likely meant (`anthropic:claude-sonet-4-5`
    → `claude-sonnet-4-5`), among the same family's (Claude, or OpenAI's); None when
    nothing is close or the name is one the table knows."""
    if _from_table(name) is not None:
        return None
    bare = _TRAILING_VERSION.sub("", _bare(name))
    claude = bare.startswith("claude")
    candidates = [
        entry[0]
        for entry in KNOWN_MODELS
        if entry[0].startswith("claude") == claude and not _another_version(bare, entry[0])
    ]
    found = difflib.get_close_matches(bare, candidates, n=1, cutoff=0.8)
    return found[0] if found else None


def _offline(name: str) -> bool:
    prefix, sep, _ = name.partition(":")
    if not sep:
        return False
    return prefix not in installed_providers()


def _configured(entry: ModelEntry, fallback: ModelInfo) -> ModelInfo:
    prices = entry.prices()
    return ModelInfo(
        context_window=entry.context_window or fallback.context_window,
        prices=prices or fallback.prices,
        pricing="configured" if prices is not None else fallback.pricing,
    )


def model_info(model: Any, models: Mapping[str, ModelEntry] | None = None) -> ModelInfo:
    """The figures for a ModelClient (or a spec or name), per the lookup order above."""
    name = model if isinstance(model, str) else getattr(model, "name", "")
    own = model.model_info if isinstance(model, SelfDescribingClient) else None
    if own is not None:
        base = own
    elif name.startswith("scripted:"):
        base = _SCRIPTED
    else:
        base = _from_table(name) or (_SCRIPTED if _offline(name) else _UNKNOWN)
    table = models or {}
    entry = next((table[k] for k in (name, name.partition(":")[2], _bare(name)) if k in table), None)
    return _configured(entry, base) if entry is not None else base


def cost_usd(usage: Usage, prices: Prices | None) -> float | None:
    """What a call's usage costs at these prices; None when the prices are unknown."""
    if prices is None:
        return None
    billed = (
        usage.input_tokens * prices.input
        + usage.cache_creation_input_tokens * prices.cache_write
        + usage.cache_read_input_tokens * prices.cache_read
        + usage.output_tokens * prices.output
    )
    return billed / 1_000_000


def usage_cost_usd(usage: Usage, model: Any, models: Mapping[str, ModelEntry] | None = None) -> float | None:
    return cost_usd(usage, model_info(model, models).prices)


def input_price_per_mtok(model: Any) -> float:
    """The model's input price, or the reference price for estimates when it is unknown."""
    prices = model_info(model).prices
    return prices.input if prices is not None else REFERENCE_INPUT_PRICE
