"""Strategies that drop whole messages: `window` and `amortized`.

They never call the summarizer and never rewrite a message they keep: the kept head
and tail are the original objects. The dropped middle is replaced by one trim note
(`[Context trimmed] N earlier messages were dropped …`, N counting the messages of
earlier trims too), with a short assistant bridge where roles would not alternate.
Every split is at a clean boundary, so no tool_use is separated from its tool_result.
Dropped tool result bodies are put in the artifact store first (Recall).

Both count messages by default; `unit=events` counts events as OpenHands' condensers
do (`agents.compaction.units`: each tool use, tool result and text message is one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from agents.compaction.boundaries import first_clean_split_at_or_after
from agents.compaction.protocol import CompactionEnv, CompactionRequest, CompactionResult, check
from agents.compaction.run import CompactionRun
from agents.compaction.units import (
    Unit,
    check_unit,
    first_in_messages,
    head_end,
    midpoint_after,
    size,
    split_keeping_recent,
)

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

    With unit=events, `first` and `last` count events (OpenHands' RecentEventsCondenser:
    keep_first events and the last max_events − keep_first; nothing is dropped while the
    conversation holds at most first + last events); an interaction a cut falls inside
    is dropped whole (`agents.compaction.units`).

    Parameters: first: int = 1 (≥ 0), last: int = 20 (≥ 1),
    unit: messages|events = messages.
    """

    name: ClassVar[str] = "window"
    first: int = 1
    last: int = 20
    unit: Unit = "messages"

    def __post_init__(self) -> None:
        check(self.first >= 0, "first must be >= 0")
        check(self.last >= 1, "last must be >= 1")
        check_unit(self.unit)

    async def compact(self, request: CompactionRequest, env: CompactionEnv) -> CompactionResult:
        run = CompactionRun(self.name, request, env)
        clean = run.clean()
        head = head_end(run.messages, self.first, self.unit, clean)
        tail = split_keeping_recent(run.messages, self.last, self.unit, clean)
        # In events the two cuts may both round inward: drop only when the window is exceeded.
        beyond = self.unit == "messages" or size(run.messages, self.unit) > self.first + self.last
        dropped = beyond and tail is not None and tail > head and run.drop(head, tail)
        if request.trigger == "prompt_too_long":
            return run.drop_to_fit(first_in_messages(run.messages, self.first, self.unit))
        if request.trigger == "manual" and not dropped:
            return run.fail(
                f"nothing to drop outside the first {self.first} and last {self.last} {self.unit}",
                "clear",
            )
        return run.done()


@dataclass(frozen=True)
class AmortizedForgetting:
    """`amortized`: forget the older part when over the limit.

    Rule: when the conversation is over its size — more than `max_events` units (when
    set), or more tokens than `max_tokens` (None: the compact budget) — drop the older
    part of what follows the first `first` units (the task message by default): with
    `keep_last` unset, the oldest half (the cut is the first clean boundary at or after
    the midpoint of what follows the head); with `keep_last`, everything but the last
    `keep_last` units (at a clean boundary, as `window` cuts). One cut per call: if the
    conversation is still over, the next call cuts again. No summary. Under the limit
    nothing changes, so the cached prefix survives between cuts (the cost of
    forgetting is amortized).

    Units: messages by default; unit=events counts events (`agents.compaction.units`),
    as OpenHands' AmortizedForgettingCondenser does (over max_size events it keeps
    keep_first events and the last max_size // 2 − keep_first).

    Triggers: auto → the rule. manual → cut regardless of the limit; nothing to drop
    is a failure with the history unchanged. prompt_too_long → drop-to-fit (keep the
    first messages and the largest clean suffix that fits).

    Parameters: first: int = 1 (≥ 0), max_tokens: int | None = None (≥ 1),
    max_events: int | None = None (≥ 1), keep_last: int | None = None (≥ 1),
    unit: messages|events = messages.
    """

    name: ClassVar[str] = "amortized"
    first: int = 1
    max_tokens: int | None = None
    max_events: int | None = None
    keep_last: int | None = None
    unit: Unit = "messages"

    def __post_init__(self) -> None:
        check(self.first >= 0, "first must be >= 0")
        check(
            self.max_tokens is None or self.max_tokens >= 1,
            "max_tokens must be >= 1 (or none for the compact budget)",
        )
        check(self.max_events is None or self.max_events >= 1, "max_events must be >= 1 (or none)")
        check(self.keep_last is None or self.keep_last >= 1, "keep_last must be >= 1 (or none to halve)")
        check_unit(self.unit)

    def over_size(self, run: CompactionRun) -> bool:
        if self.max_events is not None and size(run.messages, self.unit) > self.max_events:
            return True
        limit = run.request.budget_tokens if self.max_tokens is None else self.max_tokens
        return run.tokens() > limit

    async def compact(self, request: CompactionRequest, env: CompactionEnv) -> CompactionResult:
        run = CompactionRun(self.name, request, env)
        if request.trigger == "prompt_too_long":
            return run.drop_to_fit(first_in_messages(run.messages, self.first, self.unit))
        if request.trigger == "auto" and not self.over_size(run):
            return run.done()
        if not self._forget(run) and request.trigger == "manual":
            return run.fail("nothing older than the task message to drop", "clear")
        return run.done()

    def _forget(self, run: CompactionRun) -> bool:
        clean = run.clean()
        head = head_end(run.messages, self.first, self.unit, clean)
        if self.keep_last is not None:
            cut = split_keeping_recent(run.messages, self.keep_last, self.unit, clean)
        else:
            cut = first_clean_split_at_or_after(run.messages, midpoint_after(run.messages, head, self.unit), clean)
        return cut is not None and cut > head and run.drop(head, cut)
