"""The compact budget: how many input tokens a request may hold before compaction.

    budget = (context_window − max_output_tokens) × ratio

The context window is `compact.context_window` when set, else the model's entry in
the model table (`agents.providers._catalog`: known models plus the `models` setting). A model
with no known window is refused with one line asking for `compact.context_window` (or a
`models` entry), and naming the table's model it was likely meant to be when one is close.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agents.errors import ConfigError, PromptTooLong
from agents.providers import ModelEntry, model_info, nearest_known
from agents.settings import CompactSettings

__all__ = ["compact_budget", "context_window_for", "check_budget_fits", "refusal_budget", "summary_room"]


def context_window_for(model: Any, override: int | None = None, models: Mapping[str, ModelEntry] | None = None) -> int:
    """The window for a ModelClient, spec or name; a ConfigError when nobody knows it."""
    if override is not None:
        return override
    window = model_info(model, models).context_window
    if window is None:
        name = model if isinstance(model, str) else getattr(model, "name", "?")
        declare = (
            "set compact.context_window (e.g. WORKINGSET_COMPACT__CONTEXT_WINDOW=32768) or give the model a "
            "`models` entry with its context_window"
        )
        meant = nearest_known(name)
        if meant is not None:
            raise ConfigError(
                f"unknown model '{name}'; did you mean {meant}? If not, it is a model the table does not "
                f"know: {declare}"
            )
        raise ConfigError(f"the context window of {name} is not known; {declare}")
    return window


def compact_budget(
    model: Any, max_output_tokens: int, settings: CompactSettings, models: Mapping[str, ModelEntry] | None = None
) -> int:
    window = context_window_for(model, settings.context_window, models)
    if max_output_tokens >= window:
        raise ConfigError(
            f"max output tokens ({max_output_tokens}) leave no room in the context window of {window}; "
            "lower agent.max_output_tokens or raise compact.context_window"
        )
    return int((window - max_output_tokens) * settings.ratio)


def check_budget_fits(budget_tokens: int, overhead_tokens: int) -> None:
    """The system prompt and tool schemas alone must fit, or no compaction can help."""
    if overhead_tokens >= budget_tokens:
        raise ConfigError(
            f"the compact budget ({budget_tokens} tokens) is smaller than the system prompt and tool "
            f"schemas ({overhead_tokens} tokens); raise compact.ratio or compact.context_window"
        )


REFUSAL_SAFETY = 0.9  # aim a little under the provider's limit after a refusal


def refusal_budget(estimated: int, refusal: PromptTooLong, budget_tokens: int, fixed: int = 0) -> int:
    """The provider counted more than we estimated: aim below what it would accept,
    scaled by its own numbers when it gave them, else at the fixed part (`fixed`: the
    system prompt and tool schemas, which no compaction shrinks) and half of the rest —
    half of the whole would leave the conversation nothing once the fixed part is large."""
    if refusal.actual_tokens and refusal.limit_tokens:
        target = int(estimated * refusal.limit_tokens / refusal.actual_tokens * REFUSAL_SAFETY)
    else:
        target = fixed + max(estimated - fixed, 0) // 2
    return min(budget_tokens, target)


def summary_room(room_tokens: int, reserve_tokens: int) -> int:
    """The room a summary keeps when recent messages are fitted after a refusal: the
    configured reserve, but never more than a quarter of the room there is, so a small
    budget (a refusal of a short conversation) still keeps most of it for recent messages
    rather than leaving them a negative room."""
    return max(0, min(reserve_tokens, room_tokens // 4))
