"""Strategies that drop whole messages: `window` and `amortized`.

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

from agents.compaction.boundaries import (
    first_clean_split_at_or_after,
    head_end,
    split_keeping_recent,
)
from agents.compaction.protocol import CompactionEnv, CompactionRequest, CompactionResult, check
from agents.compaction.run import CompactionRun

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
        run = CompactionRun(self.name, request, env)
        clean = run.clean()
        head = head_end(run.messages, self.first, clean)
        tail = split_keeping_recent(run.messages, self.last, clean)
        dropped = tail is not None and tail > head and run.drop(head, tail)
        if request.trigger == "prompt_too_long":
            return run.drop_to_fit(self.first)
        if request.trigger == "manual" and not dropped:
            return run.fail(
                f"nothing to drop outside the first {self.first} and last {self.last} messages",
                "clear",
            )
        return run.done()


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
        run = CompactionRun(self.name, request, env)
        if request.trigger == "prompt_too_long":
            return run.drop_to_fit(self.first)
        limit = request.budget_tokens if self.max_tokens is None else self.max_tokens
        if request.trigger == "auto" and run.tokens() <= limit:
            return run.done()
        if not self._halve(run) and request.trigger == "manual":
            return run.fail("nothing older than the task message to drop", "clear")
        return run.done()

    def _halve(self, run: CompactionRun) -> bool:
        clean, n = run.clean(), len(run.messages)
        head = head_end(run.messages, self.first, clean)
        cut = first_clean_split_at_or_after(run.messages, head + (n - head) // 2, clean)
        return cut is not None and cut > head and run.drop(head, cut)
