"""`Steps`: one compaction by a baseline strategy, step by step.

Holds the conversation as the strategy's steps rewrite it and adds one priced ledger
event per applied step (the cost model of clear-then-summarize: invalidation measured
against `request.messages`, which the cache holds). Also the shared steps — drop a
middle behind a trim note, summarize a middle — the failure policy, and the two
prompt-too-long fallbacks: drop-to-fit and summarize-to-fit.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from agents.compaction.baselines_common import (
    bridge,
    dropped_count,
    head_end,
    is_elided,
    is_synthetic,
    joined,
    trim_note,
    with_summary,
)
from agents.compaction.boundaries import clean_boundaries
from agents.compaction.clearing import is_cleared
from agents.compaction.ledger import CompactionEvent, priced_event, unchanged_prefix_tokens
from agents.compaction.strategy import CompactionEnv, CompactionRequest, CompactionResult
from agents.compaction.summary import SummaryFailed, summarize_older
from agents.messages import Message, ToolResultBlock
from agents.tokens import estimate_messages_tokens

__all__ = ["Steps"]


class Steps:
    """The conversation as one compaction rewrites it. Each applied step adds one event;
    invalidation is always measured against `request.messages`, which the cache holds."""

    def __init__(self, strategy: str, request: CompactionRequest, env: CompactionEnv):
        self.strategy = strategy
        self.request = request
        self.env = env
        self.messages = list(request.messages)
        self.events: list[CompactionEvent] = []
        self._tokens: int | None = None

    def total(self, messages: Sequence[Message]) -> int:
        return self.request.overhead_tokens + estimate_messages_tokens(self.env.counter, messages)

    def tokens(self) -> int:
        if self._tokens is None:
            self._tokens = (
                self.request.current_tokens(self.env)
                if not self.events
                else self.total(self.messages)
            )
        return self._tokens

    def clean(self) -> list[bool]:
        return clean_boundaries(self.messages)

    def apply(self, kind: str, messages: list[Message], **counts) -> None:
        after = self.total(messages)
        self.events.append(
            priced_event(
                tokens_before=self.total(self.messages),
                tokens_after=after,
                unchanged_prefix=unchanged_prefix_tokens(
                    self.request.messages, messages, self.request.overhead_tokens, self.env.counter
                ),
                cached_tokens=self.total(self.request.messages),
                model_name=self.env.model_name,
                kind=kind,
                trigger=self.request.trigger,
                strategy=self.strategy,
                **counts,
            )
        )
        self.messages = messages
        self._tokens = after

    def store(self, bodies: Iterable[ToolResultBlock]) -> None:
        """Keep full bodies for Recall (write-once: an earlier, fuller body wins)."""
        if self.env.artifacts is None:
            return
        for block in bodies:
            if not is_elided(block) and not is_cleared(block):
                self.env.artifacts.put(block.tool_use_id, block.content)

    def done(self) -> CompactionResult:
        return CompactionResult(self.messages, self.events)

    def fail(self, reason: str, kind: str, calls: int = 0) -> CompactionResult:
        """Auto keeps what earlier steps made; manual and prompt-too-long return the
        original history unchanged. The failed step is an event with applied=False."""
        auto = self.request.trigger == "auto"
        keep = self.messages if auto else list(self.request.messages)
        tokens = self.total(keep)
        failed = CompactionEvent(
            kind=kind,
            trigger=self.request.trigger,
            strategy=self.strategy,
            tokens_before=tokens,
            tokens_after=tokens,
            summarizer_calls=calls,
            failed=reason,
            applied=False,
        )
        return CompactionResult(keep, [*(self.events if auto else []), failed], failure=reason)

    # -- shared steps ---------------------------------------------------------------------

    def drop(self, start: int, end: int, kind: str = "clear") -> bool:
        """Drop messages[start:end] behind one trim note; False when it holds nothing real."""
        middle = self.messages[start:end]
        if not any(not is_synthetic(m) for m in middle):
            return False
        dropped = [b for m in middle for b in m.tool_results_in]
        self.store(dropped)
        note = trim_note(dropped_count(middle), self.strategy)
        self.apply(
            kind,
            joined(self.messages[:start], note, self.messages[end:]),
            results_cleared=len(dropped),
        )
        return True

    async def summarize(self, start: int, end: int, kind: str = "summary") -> str | None:
        """Summarize messages[start:end] in place; the failure reason, or None when done."""
        env = self.env
        try:
            outcome = await summarize_older(
                env.summarizer,
                self.messages[start:end],
                window_tokens=env.summarizer_settings.window_tokens,
                counter=env.counter,
                focus=self.request.focus,
            )
        except SummaryFailed as exc:
            return str(exc)
        count = end - start
        result = with_summary(self.messages[:start], outcome.text, self.messages[end:], count)
        self.apply(kind, result, messages_summarized=count, summarizer_calls=outcome.calls)
        return None

    def fit_start(self, head: int, reserve: int) -> int | None:
        """Start of the largest clean suffix after `head` that fits next to the head and
        `reserve` tokens inside the budget; None when none does."""
        room = self.request.budget_tokens - self.total(self.messages[:head]) - reserve
        clean, counter, best, size = self.clean(), self.env.counter, None, 0
        for i in range(len(self.messages) - 1, head, -1):
            size += counter.count_message(self.messages[i])
            if size > room:
                break
            if clean[i]:
                best = i
        return best

    def _fit_split(self, first: int, reserve: int) -> tuple[int, int] | None:
        """(head end, tail start): keep the first messages if anything then fits, else none."""
        clean, n = self.clean(), len(self.messages)
        for head in dict.fromkeys((head_end(clean, n, first), 0)):
            start = self.fit_start(head, reserve)
            if start is not None:
                return head, start
        return None

    def _already_fits(self) -> CompactionResult:
        """Earlier steps made it fit: done. Nothing was changed: say so, remove nothing."""
        if self.events:
            return self.done()
        return self.fail(
            f"the conversation already fits the budget of {self.request.budget_tokens} tokens",
            "prompt_too_long",
        )

    def drop_to_fit(self, first: int) -> CompactionResult:
        """prompt_too_long without a summarizer: keep the first messages and the largest
        clean suffix that fits; drop the rest behind a trim note."""
        if self.tokens() <= self.request.budget_tokens:
            return self._already_fits()
        reserve = self.env.counter.count_message(Message.user(trim_note(10**9, self.strategy)))
        reserve += self.env.counter.count_message(bridge())
        split = self._fit_split(first, reserve)
        if split is None or not self.drop(*split, kind="prompt_too_long"):
            return self.fail(
                "no recent part of the conversation fits in the budget", "prompt_too_long"
            )
        return self.done()

    async def summarize_to_fit(self, first: int) -> CompactionResult:
        """prompt_too_long with a summarizer: keep the first messages and the largest clean
        suffix that fits next to a summary (summary_reserve_tokens); the middle → summary."""
        if self.tokens() <= self.request.budget_tokens:
            return self._already_fits()
        reserve = self.env.settings.summary_reserve_tokens + 2 * self.env.counter.count_message(
            bridge()
        )
        split = self._fit_split(first, reserve)
        if split is None:
            return self.fail(
                "no recent part of the conversation fits in the budget", "prompt_too_long"
            )
        failure = await self.summarize(*split, kind="prompt_too_long")
        return self.fail(failure, "prompt_too_long") if failure else self.done()
