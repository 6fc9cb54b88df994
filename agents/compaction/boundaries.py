"""Where a conversation may be split: clean boundaries and the split points built on them.

A boundary at index i is clean when no tool interaction straddles it: no tool_use
before i has its tool_result at or after i. Every compaction path splits only at
clean boundaries, so a tool_result never loses its tool_use.

Each split function takes the messages and, optionally, their boundary map
(`clean_boundaries(messages)`) when the caller already has it.
"""

from __future__ import annotations

from collections.abc import Sequence

from agents.messages import Message, completed_tool_interactions
from agents.tokens import TokenCounter

__all__ = [
    "clean_boundaries",
    "first_clean_split_at_or_after",
    "head_end",
    "split_keeping_recent",
    "split_largest_fitting_suffix",
]


def clean_boundaries(messages: Sequence[Message]) -> list[bool]:
    """clean[i] says whether messages[:i] / messages[i:] is a clean split (0 < i < len)."""
    n = len(messages)
    clean = [0 < i < n for i in range(n + 1)]
    for interaction in completed_tool_interactions(messages):
        for i in range(interaction.use_index + 1, interaction.result_index + 1):
            clean[i] = False
    return clean


def split_keeping_recent(messages: Sequence[Message], keep: int, clean: Sequence[bool] | None = None) -> int | None:
    """Index of the latest clean split that keeps at least `keep` recent messages;
    None when nothing would be left to call "older"."""
    clean = clean_boundaries(messages) if clean is None else clean
    n = len(messages)
    return next((i for i in range(min(n - keep, n - 1), 0, -1) if clean[i]), None)


def split_largest_fitting_suffix(
    messages: Sequence[Message],
    budget_tokens: int,
    counter: TokenCounter,
    *,
    after: int = 0,
    clean: Sequence[bool] | None = None,
) -> int | None:
    """Index of the clean split whose recent part is the largest that fits the budget,
    splitting after index `after` (so at least one older message, and messages[:after]
    stay out of the suffix); None when even the smallest clean suffix does not fit."""
    clean = clean_boundaries(messages) if clean is None else clean
    suffix = 0
    best = None
    for i in range(len(messages) - 1, after, -1):
        suffix += counter.count_message(messages[i])
        if suffix > budget_tokens:
            break
        if clean[i]:
            best = i
    return best


def head_end(messages: Sequence[Message], first: int, clean: Sequence[bool] | None = None) -> int:
    """End of a kept head of `first` messages: the first clean boundary at or after
    `first` (0 keeps none; the whole conversation when there is none)."""
    if first <= 0:
        return 0
    clean = clean_boundaries(messages) if clean is None else clean
    n = len(messages)
    return next((i for i in range(first, n) if clean[i]), n)


def first_clean_split_at_or_after(
    messages: Sequence[Message], index: int, clean: Sequence[bool] | None = None
) -> int | None:
    clean = clean_boundaries(messages) if clean is None else clean
    return next((i for i in range(max(index, 1), len(messages)) if clean[i]), None)
