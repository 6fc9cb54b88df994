"""Compaction strategies: the policy that orders the pure steps.

A strategy gets the conversation, the request overhead (system prompt + tool
schemas), the budget and the trigger, and returns the conversation to send plus
ledger events. The loop never knows which strategy runs; new baselines register
by name (`register_strategy`) without touching it.

`clear-then-summarize` (the default, from the design):
  auto    — under budget: nothing. Else clear old tool results (unless it frees less
            than min_gain_tokens); under budget now: done. Else summarize older at a
            clean boundary keeping the last N messages; still over: keep fewer recent
            messages, down to the protocol minimum. Failure keeps the cleared conversation.
  manual  — summarize, keeping the last `manual_keep_messages`; failure changes nothing.
  prompt_too_long — keep the largest clean suffix that fits next to a summary; older → summary.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from agents.compaction.boundaries import split_keeping_recent, split_largest_fitting_suffix
from agents.compaction.clearing import clear_old_tool_results
from agents.compaction.ledger import CompactionEvent, priced_event, unchanged_prefix_tokens
from agents.compaction.summary import SummaryFailed, summarize_older, summarized_conversation
from agents.config import CompactSettings, SummarizerSettings
from agents.errors import ConfigError
from agents.messages import Message
from agents.ports import Summarizer
from agents.tokens import TokenCounter, estimate_messages_tokens
from tools.artifacts import ArtifactStore

__all__ = [
    "ClearThenSummarize",
    "CompactionEnv",
    "CompactionRequest",
    "CompactionResult",
    "CompactionStrategy",
    "NoCompaction",
    "STRATEGIES",
    "make_strategy",
    "register_strategy",
]

Trigger = Literal["auto", "manual", "prompt_too_long"]


@dataclass
class CompactionEnv:
    """What strategies may use: the counter, the summarizer port, the record of bodies."""

    counter: TokenCounter
    summarizer: Summarizer
    artifacts: ArtifactStore | None
    settings: CompactSettings
    summarizer_settings: SummarizerSettings
    model_name: str = ""


@dataclass(frozen=True)
class CompactionRequest:
    messages: Sequence[Message]
    overhead_tokens: int
    budget_tokens: int
    trigger: Trigger = "auto"
    focus: str | None = None
    total_tokens: int | None = None  # the caller's running estimate of overhead + messages, if known

    def current_tokens(self, env: CompactionEnv) -> int:
        if self.total_tokens is not None:
            return self.total_tokens
        return _total(env, self.overhead_tokens, self.messages)


@dataclass
class CompactionResult:
    messages: list[Message]
    events: list[CompactionEvent] = field(default_factory=list)
    failure: str | None = None

    @property
    def changed(self) -> bool:
        return any(e.applied for e in self.events)


class CompactionStrategy(Protocol):
    name: str

    async def compact(self, request: CompactionRequest, env: CompactionEnv) -> CompactionResult: ...


class NoCompaction:
    """`raw`: send the whole conversation; only the per-result budget applies."""

    name = "raw"

    async def compact(self, request: CompactionRequest, env: CompactionEnv) -> CompactionResult:
        if request.trigger == "auto":
            return CompactionResult(list(request.messages))
        return CompactionResult(list(request.messages), failure=f"strategy '{self.name}' never compacts")


def _total(env: CompactionEnv, overhead: int, messages: Sequence[Message]) -> int:
    return overhead + estimate_messages_tokens(env.counter, messages)


class ClearThenSummarize:
    name = "clear-then-summarize"

    async def compact(self, request: CompactionRequest, env: CompactionEnv) -> CompactionResult:
        if request.trigger == "manual":
            return await self._summarize_keeping(request, env, list(request.messages), env.settings.manual_keep_messages)
        if request.trigger == "prompt_too_long":
            return await self._summarize_to_fit(request, env)
        if request.current_tokens(env) <= request.budget_tokens:
            return CompactionResult(list(request.messages))
        cleared = self._clear(request, env)
        messages = cleared.messages
        if _total(env, request.overhead_tokens, messages) <= request.budget_tokens:
            return cleared
        summarized = await self._summarize_keeping(request, env, messages, env.settings.preserve_recent_messages)
        summarized.events[:0] = cleared.events
        return summarized

    # -- steps --------------------------------------------------------------------------

    def _clear(self, request: CompactionRequest, env: CompactionEnv) -> CompactionResult:
        outcome = clear_old_tool_results(
            request.messages,
            keep_recent_messages=env.settings.preserve_recent_messages,
            keep_recent_tool_uses=env.settings.preserve_recent_tool_uses,
        )
        if not outcome.cleared:
            return CompactionResult(list(request.messages))
        before = _total(env, request.overhead_tokens, request.messages)
        after = _total(env, request.overhead_tokens, outcome.messages)
        if before - after < env.settings.min_gain_tokens:
            return CompactionResult(list(request.messages))
        if env.artifacts is not None:
            for item in outcome.cleared:
                env.artifacts.put(item.tool_use_id, item.original)
        event = self._event(
            request, env, "clear", request.messages, outcome.messages, results_cleared=len(outcome.cleared)
        )
        return CompactionResult(outcome.messages, [event])

    async def _summarize_keeping(
        self, request: CompactionRequest, env: CompactionEnv, messages: list[Message], keep: int
    ) -> CompactionResult:
        """Summarize older history keeping `keep` recent messages; if the result is still
        over budget, keep fewer (auto only), down to the smallest clean suffix."""
        calls = 0
        while True:
            split = split_keeping_recent(messages, keep)
            if split is None:
                return self._failed(request, env, messages, "nothing older than the kept messages to summarize", calls)
            try:
                summary = await summarize_older(
                    env.summarizer,
                    messages[:split],
                    window_tokens=env.summarizer_settings.window_tokens,
                    counter=env.counter,
                    focus=request.focus,
                )
            except SummaryFailed as exc:
                return self._failed(request, env, messages, str(exc), calls)
            calls += summary.calls
            result = summarized_conversation(summary.text, messages[split:], summarized_count=split)
            total = _total(env, request.overhead_tokens, result)
            if request.trigger == "manual" or total <= request.budget_tokens:
                event = self._event(
                    request, env, "summary", messages, result, messages_summarized=split, summarizer_calls=calls
                )
                return CompactionResult(result, [event])
            if len(messages) - split <= 1 or split == split_keeping_recent(messages, 1):  # no smaller clean suffix
                reason = f"still {total} tokens after summarizing, over the budget of {request.budget_tokens}"
                return self._failed(request, env, messages, reason, calls)
            keep = max((len(messages) - split) // 2, 1)

    async def _summarize_to_fit(self, request: CompactionRequest, env: CompactionEnv) -> CompactionResult:
        messages = list(request.messages)
        room = request.budget_tokens - request.overhead_tokens - env.settings.summary_reserve_tokens
        split = split_largest_fitting_suffix(messages, max(room, 0), env.counter)
        if split is None:
            return self._failed(request, env, messages, f"no recent part of the conversation fits in {room} tokens", 0)
        try:
            summary = await summarize_older(
                env.summarizer,
                messages[:split],
                window_tokens=env.summarizer_settings.window_tokens,
                counter=env.counter,
            )
        except SummaryFailed as exc:
            return self._failed(request, env, messages, str(exc), 0)
        result = summarized_conversation(summary.text, messages[split:], summarized_count=split)
        event = self._event(
            request, env, "prompt_too_long", messages, result, messages_summarized=split, summarizer_calls=summary.calls
        )
        return CompactionResult(result, [event])

    # -- ledger -------------------------------------------------------------------------

    def _event(self, request, env, kind, before, after, **counts) -> CompactionEvent:
        """`before` is what this step started from (after any earlier step); the cache
        was written for `request.messages`, so invalidation is measured against that."""
        return priced_event(
            tokens_before=_total(env, request.overhead_tokens, before),
            tokens_after=_total(env, request.overhead_tokens, after),
            unchanged_prefix=unchanged_prefix_tokens(request.messages, after, request.overhead_tokens, env.counter),
            cached_tokens=_total(env, request.overhead_tokens, request.messages),
            model_name=env.model_name,
            kind=kind,
            trigger=request.trigger,
            strategy=self.name,
            **counts,
        )

    def _failed(self, request, env, kept: list[Message], reason: str, calls: int) -> CompactionResult:
        """Auto keeps what it has (e.g. the cleared conversation); manual and
        prompt-too-long keep the original history unchanged."""
        keep = kept if request.trigger == "auto" else list(request.messages)
        tokens = _total(env, request.overhead_tokens, keep)
        event = CompactionEvent(
            kind="prompt_too_long" if request.trigger == "prompt_too_long" else "summary",
            trigger=request.trigger,
            strategy=self.name,
            tokens_before=tokens,
            tokens_after=tokens,
            summarizer_calls=calls,
            failed=reason,
            applied=False,
        )
        return CompactionResult(keep, [event], failure=reason)


STRATEGIES: dict[str, Callable[[], CompactionStrategy]] = {
    ClearThenSummarize.name: ClearThenSummarize,
    NoCompaction.name: NoCompaction,
}


def register_strategy(name: str, factory: Callable[[], CompactionStrategy]) -> None:
    if name in STRATEGIES:
        raise ValueError(f"a compaction strategy named {name!r} is already registered")
    STRATEGIES[name] = factory


def make_strategy(name: str) -> CompactionStrategy:
    factory = STRATEGIES.get(name)
    if factory is None:
        raise ConfigError(f"unknown compaction strategy '{name}'; known: {', '.join(sorted(STRATEGIES))}")
    return factory()
