"""Baselines that drop whole messages: `window` and `amortized`.

They never call the summarizer and never rewrite a message they keep: the kept head
and tail are the original objects. The dropped middle is replaced by one trim note
(`[Context trimmed] N earlier messages were dropped …`, N counting the messages of
earlier trims too), with a short assistant bridge where roles would not alternate.
Every split is at a clean boundary, so no tool_use is separated from its tool_result.
Dropped tool result bodies are put in the artifact store first (Recall).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from agents.compaction.baselines_common import (
    check,
    first_clean_at_or_after,
    head_end,
    tail_start,
)
from agents.compaction.baselines_steps import Steps
from agents.compaction.strategy import CompactionEnv, CompactionRequest, CompactionResult

__all__ = ["AmortizedForgetting", "SlidingWindow"]


@dataclass(frozen=True)
class SlidingWindow:
    """`window`: the first messages and a sliding window of the last ones.

    Rule: on every call, whatever the budget, keep the first `first` messages (extended
    to the next clean boundary; the default 1 keeps the task message) and the last
    `last` messages (extended back to a clean boundary); drop everything between behind
    one trim note saying how many messages were dropped in total. Nothing is dropped
    while the middle holds only an earlier trim note.

    Triggers: auto → the rule. manual → the rule; nothing to drop is a failure with the
    history unchanged. prompt_too_long → the rule, then, if still over the budget,
    drop-to-fit (keep the first messages and the largest clean suffix that fits).

    Parameters: first: int = 1 (≥ 0), last: int = 20 (≥ 1).
    """

    name: ClassVar[str] = "window"
    first: int = 1
    last: int = 20

    def __post_init__(self) -> None:
        check(self.first >= 0, "first must be >= 0")
        check(self.last >= 1, "last must be >= 1")

    async def compact(self, request: CompactionRequest, env: CompactionEnv) -> CompactionResult:
        steps = Steps(self.name, request, env)
        clean, n = steps.clean(), len(steps.messages)
        head, tail = head_end(clean, n, self.first), tail_start(clean, n, self.last)
        dropped = tail is not None and tail > head and steps.drop(head, tail)
        if request.trigger == "prompt_too_long":
            return steps.drop_to_fit(self.first)
        if request.trigger == "manual" and not dropped:
            return steps.fail(
                f"nothing to drop outside the first {self.first} and last {self.last} messages",
                "clear",
            )
        return steps.done()


@dataclass(frozen=True)
class AmortizedForgetting:
    """`amortized`: forget the older half when over the limit.

    Rule: when the request's tokens exceed `max_tokens` (None: the compact budget), drop
    the oldest half of the messages after the first `first` (the task message by
    default): the cut is the first clean boundary at or after the midpoint of what
    follows the head. One halving per call: if the conversation is still over the limit,
    the next call halves again. No summary. Under the limit nothing changes, so the
    cached prefix survives between halvings (the cost of forgetting is amortized).

    Triggers: auto → the rule. manual → halve regardless of the limit; nothing to drop
    is a failure with the history unchanged. prompt_too_long → drop-to-fit (keep the
    first messages and the largest clean suffix that fits).

    Parameters: first: int = 1 (≥ 0), max_tokens: int | None = None (≥ 1).
    """

    name: ClassVar[str] = "amortized"
    first: int = 1
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        check(self.first >= 0, "first must be >= 0")
        check(
            self.max_tokens is None or self.max_tokens >= 1,
            "max_tokens must be >= 1 (or none for the compact budget)",
        )

    async def compact(self, request: CompactionRequest, env: CompactionEnv) -> CompactionResult:
        steps = Steps(self.name, request, env)
        if request.trigger == "prompt_too_long":
            return steps.drop_to_fit(self.first)
        limit = request.budget_tokens if self.max_tokens is None else self.max_tokens
        if request.trigger == "auto" and steps.tokens() <= limit:
            return steps.done()
        if not self._halve(steps) and request.trigger == "manual":
            return steps.fail("nothing older than the task message to drop", "clear")
        return steps.done()

    def _halve(self, steps: Steps) -> bool:
        clean, n = steps.clean(), len(steps.messages)
        head = head_end(clean, n, self.first)
        cut = first_clean_at_or_after(clean, n, head + (n - head) // 2)
        return cut is not None and cut > head and steps.drop(head, cut)
