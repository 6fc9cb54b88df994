"""`clear-then-summarize`, the default strategy (from the design).

  auto    — under budget: nothing. Else clear old tool results outside the last `last`
            messages and the last `keep` tool interactions (unless it frees less than
            `min_gain` tokens); under budget now: done. Else summarize older at a clean
            boundary keeping the last `last` messages; still over: keep fewer recent
            messages, down to the protocol minimum. Failure keeps the cleared conversation.
  manual  — summarize, keeping the last `manual_keep` messages; failure changes nothing.
  prompt_too_long — keep the largest clean suffix that fits next to a summary of
            `summary_reserve` tokens; older → summary.

Parameters (each defaults to its compact setting; a value in the spec wins):
  last: int | None             compact.preserve_recent_messages (12, >= 1)
  keep: int | None             compact.preserve_recent_tool_uses (3, >= 0)
  manual_keep: int | None      compact.manual_keep_messages (2, >= 1)
  min_gain: int | None         compact.min_gain_tokens (1024, >= 0)
  summary_reserve: int | None  compact.summary_reserve_tokens (4000, >= 100)
e.g. `clear-then-summarize:last=3,keep=1`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from agents.compaction.boundaries import split_keeping_recent, split_largest_fitting_suffix
from agents.compaction.budget import summary_room
from agents.compaction.clearing import clear_old_tool_results
from agents.compaction.protocol import CompactionResult, check_setting_parameters
from agents.compaction.run import BudgetGated, CompactionRun
from agents.compaction.summary import SummaryFailed, summarize_older, summarized_conversation
from agents.settings import MIN_SUMMARY_TOKENS

__all__ = ["ClearThenSummarize"]


@dataclass(frozen=True)
class ClearThenSummarize(BudgetGated):
    name: ClassVar[str] = "clear-then-summarize"
    SETTINGS: ClassVar[Mapping[str, str]] = {
        "last": "preserve_recent_messages",
        "keep": "preserve_recent_tool_uses",
        "manual_keep": "manual_keep_messages",
        "min_gain": "min_gain_tokens",
        "summary_reserve": "summary_reserve_tokens",
    }
    last: int | None = None
    keep: int | None = None
    manual_keep: int | None = None
    min_gain: int | None = None
    summary_reserve: int | None = None

    def __post_init__(self) -> None:
        check_setting_parameters(self, self.SETTINGS)

    async def over_budget(self, run: CompactionRun) -> CompactionResult:
        if run.request.trigger == "prompt_too_long":
            return await self._summarize_to_fit(run)
        self._clear(run)
        if run.total(run.messages) <= run.request.budget_tokens:
            return run.done()
        return await self.summarize_keeping(run, run.env.settings.preserve_recent_messages)

    def _clear(self, run: CompactionRun) -> None:
        settings = run.env.settings
        outcome = clear_old_tool_results(
            run.messages,
            keep_recent_messages=settings.preserve_recent_messages,
            keep_recent_tool_uses=settings.preserve_recent_tool_uses,
        )
        if not outcome.cleared or run.total(run.messages) - run.total(outcome.messages) < settings.min_gain_tokens:
            return
        run.store(item.block for item in outcome.cleared)
        run.apply("clear", outcome.messages, results_cleared=len(outcome.cleared))

    async def summarize_keeping(self, run: CompactionRun, keep: int) -> CompactionResult:
        """Summarize older history keeping `keep` recent messages; if the result is still
        over budget, keep fewer (auto only), down to the smallest clean suffix."""
        request, env, messages = run.request, run.env, run.messages
        calls = 0
        while True:
            split = split_keeping_recent(messages, keep)
            if split is None:
                return run.fail("nothing older than the kept messages to summarize", "summary", calls)
            try:
                summary = await summarize_older(
                    env.summarizer,
                    messages[:split],
                    window_tokens=env.summarizer_settings.window_tokens,
                    counter=env.counter,
                    focus=request.focus,
                )
            except SummaryFailed as exc:
                return run.fail(str(exc), "summary", calls)
            calls += summary.calls
            result = summarized_conversation(summary.text, messages[split:], summarized_count=split)
            total = run.total(result)
            if request.trigger == "manual" or total <= request.budget_tokens:
                run.apply("summary", result, messages_summarized=split, summarizer_calls=calls)
                return run.done()
            if len(messages) - split <= 1 or split == split_keeping_recent(messages, 1):  # no smaller clean suffix
                reason = f"still {total} tokens after summarizing, over the budget of {request.budget_tokens}"
                return run.fail(reason, "summary", calls)
            keep = max((len(messages) - split) // 2, 1)

    async def _summarize_to_fit(self, run: CompactionRun) -> CompactionResult:
        request, env = run.request, run.env
        available = request.budget_tokens - request.overhead_tokens
        reserve = summary_room(available, env.settings.summary_reserve_tokens)
        room = available - reserve
        split = split_largest_fitting_suffix(run.messages, max(room, 0), env.counter)
        if split is None and reserve < MIN_SUMMARY_TOKENS:
            return run.fail(f"no recent part of the conversation fits in {room} tokens", "prompt_too_long")
        if split is None:  # not even the last message fits beside a summary: the summary carries all
            split = len(run.messages)
        failure = await run.summarize(0, split, kind="prompt_too_long")
        return run.fail(failure, "prompt_too_long") if failure else run.done()
