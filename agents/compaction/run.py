"""`CompactionRun`: one compaction, step by step — the one ledger and failure path.

Every strategy runs its steps through one of these. It holds the conversation as the
steps rewrite it and adds one priced ledger event per applied step. Pricing is the
same for every strategy: invalidation is measured against `request.messages`, which
the cache holds, and `tokens_before` is what the step started from (after any
earlier step). Failures too are reported one way: an event with `applied=False`
plus `CompactionResult.failure`; auto keeps what earlier steps made, manual and
prompt-too-long return the original history unchanged.

Also the steps several strategies share — drop a span behind a trim note, summarize
a span — and the two prompt-too-long fallbacks: drop-to-fit and summarize-to-fit; and
`BudgetGated`, the opening that the budget-triggered strategies share.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import ClassVar, Literal

from agents.compaction.boundaries import clean_boundaries, head_end, split_largest_fitting_suffix
from agents.compaction.budget import summary_room
from agents.compaction.clearing import is_placeholder, restore_placeholders
from agents.compaction.ledger import CompactionEvent, priced_event, unchanged_prefix_tokens
from agents.compaction.notes import bridge, is_synthetic, trim_note
from agents.compaction.protocol import (
    CompactionEnv,
    CompactionRequest,
    CompactionResult,
    with_setting_parameters,
)
from agents.compaction.summary import SummaryFailed, summarize_older, with_summary
from agents.compaction.trimming import drop_span
from agents.messages import ElidedBody, Message, ToolResultBlock

__all__ = ["BudgetGated", "CompactionRun", "EventKind"]

EventKind = Literal["clear", "summary", "prompt_too_long"]


class CompactionRun:
    """The conversation as one compaction rewrites it, and the events of its steps."""

    def __init__(self, strategy: str, request: CompactionRequest, env: CompactionEnv):
        self.strategy = strategy
        self.request = request
        self.env = env
        self.messages = list(request.messages)
        self.events: list[CompactionEvent] = []
        self._tokens: int | None = None

    def total(self, messages: Sequence[Message]) -> int:
        return self.env.total(self.request.overhead_tokens, messages)

    def tokens(self) -> int:
        """Tokens of the request as it stands now (the caller's estimate until a step applies)."""
        if self._tokens is None:
            self._tokens = self.request.current_tokens(self.env) if not self.events else self.total(self.messages)
        return self._tokens

    def clean(self) -> list[bool]:
        return clean_boundaries(self.messages)

    # -- the ledger and the failure path ----------------------------------------------------

    def apply(self, kind: EventKind, messages: list[Message], **counts) -> None:
        """Make `messages` the conversation and record the step as one priced event."""
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
            if not is_placeholder(block.marker):
                self.env.artifacts.put(block.tool_use_id, block.content)

    def done(self) -> CompactionResult:
        return CompactionResult(self.messages, self.events)

    def fail(self, reason: str, kind: EventKind, calls: int = 0) -> CompactionResult:
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

    # -- shared steps -----------------------------------------------------------------------

    def drop(self, start: int, end: int, kind: EventKind = "clear") -> bool:
        """Drop messages[start:end] behind one trim note; False when it holds nothing real."""
        middle = self.messages[start:end]
        if all(is_synthetic(m) for m in middle):
            return False
        dropped = [b for m in middle for b in m.tool_results_in]
        self.store(dropped)
        self.apply(kind, drop_span(self.messages, start, end, self.strategy), results_cleared=len(dropped))
        return True

    def stored_body(self, tool_use_id: str) -> str | None:
        """The full body the artifact store keeps for a result (None without a store)."""
        return self.env.artifacts.get(tool_use_id) if self.env.artifacts is not None else None

    async def summarize(
        self, start: int, end: int, kind: EventKind = "summary", *, unmasked: bool = False
    ) -> str | None:
        """Summarize messages[start:end] in place; the failure reason, or None when done.
        `unmasked`: the summarizer reads elided bodies as they were (from the store)."""
        env = self.env
        span = self.messages[start:end]
        if unmasked:
            span = restore_placeholders(span, self.stored_body, ElidedBody)
        try:
            outcome = await summarize_older(
                env.summarizer,
                span,
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

    # -- prompt too long ----------------------------------------------------------------------

    def _fit_split(self, first: int, reserve: int) -> tuple[int, int] | None:
        """(head end, tail start): keep the first messages if anything then fits, else none."""
        clean = self.clean()
        for head in dict.fromkeys((head_end(self.messages, first, clean), 0)):
            available = self.request.budget_tokens - self.total(self.messages[:head])
            room = available - summary_room(available, reserve)
            start = split_largest_fitting_suffix(self.messages, room, self.env.counter, after=head, clean=clean)
            if start is not None:
                return head, start
        return None

    def _already_fits(self) -> CompactionResult:
        """Earlier steps made it fit: done. Nothing was changed: say so, remove nothing."""
        if self.events:
            return self.done()
        return self.fail(
            f"the conversation already fits the budget of {self.request.budget_tokens} tokens", "prompt_too_long"
        )

    def drop_to_fit(self, first: int) -> CompactionResult:
        """prompt_too_long without a summarizer: keep the first messages and the largest
        clean suffix that fits; drop the rest behind a trim note."""
        if self.tokens() <= self.request.budget_tokens:
            return self._already_fits()
        reserve = self.env.counter.count_message(Message(role="user", content=(trim_note(10**9, self.strategy),)))
        reserve += self.env.counter.count_message(bridge())
        split = self._fit_split(first, reserve)
        if split is None or not self.drop(*split, kind="prompt_too_long"):
            return self.fail("no recent part of the conversation fits in the budget", "prompt_too_long")
        return self.done()

    async def summarize_to_fit(self, first: int, reserve_tokens: int, *, unmasked: bool = False) -> CompactionResult:
        """prompt_too_long with a summarizer: keep the first messages and the largest clean
        suffix that fits next to a summary of `reserve_tokens`; the middle → summary."""
        if self.tokens() <= self.request.budget_tokens:
            return self._already_fits()
        reserve = reserve_tokens + 2 * self.env.counter.count_message(bridge())
        split = self._fit_split(first, reserve)
        if split is None:
            return self.fail("no recent part of the conversation fits in the budget", "prompt_too_long")
        failure = await self.summarize(*split, kind="prompt_too_long", unmasked=unmasked)
        return self.fail(failure, "prompt_too_long") if failure else self.done()


class BudgetGated:
    """The opening of a strategy that acts only over its budget: an auto call under it
    (`starts_over`) returns the history as it is, so the cached prefix stays
    byte-identical; else the spec's setting parameters (`SETTINGS`: parameter → compact
    setting) apply, and a manual call summarizes keeping `compact.manual_keep_messages`.
    The rest — auto over the budget and prompt-too-long — is the strategy's `over_budget`."""

    name: ClassVar[str]
    SETTINGS: ClassVar[Mapping[str, str]]

    async def compact(self, request: CompactionRequest, env: CompactionEnv) -> CompactionResult:
        if request.trigger == "auto" and request.current_tokens(env) <= self.starts_over(request, env):
            return CompactionResult(list(request.messages))
        env = with_setting_parameters(env, self, self.SETTINGS)
        run = CompactionRun(self.name, request, env)
        if request.trigger == "manual":
            return await self.summarize_keeping(run, env.settings.manual_keep_messages)
        return await self.over_budget(run)

    def starts_over(self, request: CompactionRequest, env: CompactionEnv) -> int:
        """Tokens above which an auto call compacts (the budget, unless the strategy says)."""
        return request.budget_tokens

    async def summarize_keeping(self, run: CompactionRun, keep: int) -> CompactionResult:
        raise NotImplementedError

    async def over_budget(self, run: CompactionRun) -> CompactionResult:
        raise NotImplementedError
