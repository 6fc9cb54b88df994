"""The compact budget: how many input tokens a request may hold before compaction.

    budget = (context_window − max_output_tokens) × ratio

Context windows come from a per-model table (matched by name substring) unless the
`compact.context_window` setting overrides it.
"""

from __future__ import annotations

from agents.config import CompactSettings
from agents.errors import ConfigError, PromptTooLong

__all__ = ["CONTEXT_WINDOWS", "DEFAULT_CONTEXT_WINDOW", "compact_budget", "context_window_for", "check_budget_fits", "refusal_budget"]

CONTEXT_WINDOWS: tuple[tuple[str, int], ...] = (
    ("claude", 200_000),
    ("scripted", 200_000),
)
DEFAULT_CONTEXT_WINDOW = 200_000


def context_window_for(model_name: str, override: int | None = None) -> int:
    if override is not None:
        return override
    for needle, window in CONTEXT_WINDOWS:
        if needle in model_name:
            return window
    return DEFAULT_CONTEXT_WINDOW


def compact_budget(model_name: str, max_output_tokens: int, settings: CompactSettings) -> int:
    window = context_window_for(model_name, settings.context_window)
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


def refusal_budget(estimated: int, refusal: PromptTooLong, budget_tokens: int) -> int:
    """The provider counted more than we estimated: aim below what it would accept,
    scaled by its own numbers when it gave them, else at half of what was refused."""
    if refusal.actual_tokens and refusal.limit_tokens:
        target = int(estimated * refusal.limit_tokens / refusal.actual_tokens * REFUSAL_SAFETY)
    else:
        target = estimated // 2
    return min(budget_tokens, target)
