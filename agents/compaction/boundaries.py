"""Where a conversation may be split into "older" and "recent".

A boundary at index i is clean when no tool interaction straddles it: no tool_use
before i has its tool_result at or after i. Every compaction path splits only at
clean boundaries, so a tool_result never loses its tool_use.
"""

from __future__ import annotations

from collections.abc import Sequence

from agents.messages import Message, completed_tool_interactions
from agents.tokens import TokenCounter

__all__ = ["clean_boundaries", "split_keeping_recent", "split_largest_fitting_suffix"]


def clean_boundaries(messages: Sequence[Message]) -> list[bool]:
    """clean[i] says whether messages[:i] / messages[i:] is a clean split (0 < i < len)."""
    n = len(messages)
    clean = [0 < i < n for i in range(n + 1)]
    for interaction in completed_tool_interactions(messages):
        for i in range(interaction.use_index + 1, interaction.result_index + 1):
            clean[i] = False
    return clean


def split_keeping_recent(messages: Sequence[Message], keep: int) -> int | None:
    """Index of the latest clean split that keeps at least `keep` recent messages;
    None when nothing would be left to call "older"."""
    clean = clean_boundaries(messages)
    for i in range(min(len(messages) - keep, len(messages) - 1), 0, -1):
        if clean[i]:
            return i
    return None


def split_largest_fitting_suffix(messages: Sequence[Message], budget_tokens: int, counter: TokenCounter) -> int | None:
    """Index of the clean split whose recent part is the largest that fits the budget
    (at least one older message); None when even the smallest clean suffix does not fit."""
    clean = clean_boundaries(messages)
    suffix = 0
    best = None
    for i in range(len(messages) - 1, 0, -1):
        suffix += counter.count_message(messages[i])
        if suffix > budget_tokens:
            break
        if clean[i]:
            best = i
    return best
