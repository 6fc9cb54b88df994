"""Strategies that summarize through the Summarizer port: `summarize` and `hybrid`.

The summarized part is always a clean middle: after the first messages (the task)
and before the kept recent messages, which stay the original objects. The result is
head + (assistant bridge) + summary boundary + the original recent messages
(`summarized_conversation`), roles alternating. A summarizer failure or an empty
summary never loses history.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from agents.compaction.notes import is_summary_boundary, is_synthetic
from agents.compaction.protocol import (
    CompactionEnv,
    CompactionRequest,
    CompactionResult,
    check,
    check_setting_parameters,
    with_setting_parameters,
)
from agents.compaction.run import CompactionRun
from agents.compaction.strategies.masking import mask_old_results
from agents.compaction.summary import turns_since_summary
from agents.compaction.units import (
    Unit,
    check_unit,
    first_in_messages,
    head_end,
    size,
    split_keeping_recent,
)

__all__ = ["HybridMaskSummarize", "SummarizeOlder"]

# Spec parameters that default to a compact setting (None: the setting).
_SETTINGS = {"manual_keep": "manual_keep_messages", "summary_reserve": "summary_reserve_tokens"}


async def _summarize_middle(
    run: CompactionRun, first: int, last: int, *, unit: Unit = "messages", quiet: bool = False, unmasked: bool = False
) -> CompactionResult:
    """Summarize everything between the first `first` and the last `last` units.
    Nothing between them is a failure, or (quiet) no change."""
    clean = run.clean()
    head = head_end(run.messages, first, unit, clean)
    tail = split_keeping_recent(run.messages, last, unit, clean)
    middle = run.messages[head:tail] if tail is not None else []
    if tail is None or all(is_synthetic(m) or is_summary_boundary(m) for m in middle):
        # Nothing, or only an earlier summary: summarizing it again would gain nothing.
        if quiet:
            return run.done()
        return run.fail(
            f"nothing new between the first {first} and the last {last} {unit} to summarize",
            "summary",
        )
    failure = await run.summarize(head, tail, unmasked=unmasked)
    return run.fail(failure, "summary") if failure else run.done()


@dataclass(frozen=True)
class SummarizeOlder:
    """`summarize`: a summarizing condenser (as described for OpenHands).

    Rule: when the conversation is over its size — more than `max_events` messages
    (when set), or more tokens than `max_tokens` (None: the compact budget) — everything
    except the first `first` messages (the task) and the last `last` messages (both
    extended to clean boundaries) goes to the summarizer, in chunks when it does not fit
    its window, and is replaced by one summary. An earlier summary in that part is
    summarized again with what followed it; a part holding nothing but an earlier
    summary is not summarized again (a failure: nothing new to summarize). Still over afterwards: nothing more this call. Failure (error,
    timeout, empty summary, nothing to summarize) keeps the conversation, with a failed
    event.

    Triggers: auto → the rule. manual → summarize regardless of size, keeping the first
    messages and the last `manual_keep`; failure leaves the history
    unchanged and says why. prompt_too_long → summarize-to-fit: keep the first messages
    and the largest clean suffix that fits next to `summary_reserve` tokens;
    the middle → summary.

    Units: `first`, `last` and `max_events` count messages by default; unit=events
    counts events (`agents.compaction.units`; the summary is one), as OpenHands'
    LLMSummarizingCondenser does: over max_size events it keeps keep_first events, then
    the summary, then the last max_size // 2 − keep_first − 1. `manual_keep` always
    counts messages.

    Parameters: first: int = 1 (≥ 0), last: int = 10 (≥ 1),
    max_events: int | None = None (≥ 1), max_tokens: int | None = None (≥ 1),
    manual_keep: int | None = None (compact.manual_keep_messages),
    summary_reserve: int | None = None (compact.summary_reserve_tokens),
    unit: messages|events = messages.
    """

    name: ClassVar[str] = "summarize"
    first: int = 1
    last: int = 10
    max_events: int | None = None
    max_tokens: int | None = None
    manual_keep: int | None = None
    summary_reserve: int | None = None
    unit: Unit = "messages"

    def __post_init__(self) -> None:
        check_setting_parameters(self, _SETTINGS)
        check(self.first >= 0, "first must be >= 0")
        check(self.last >= 1, "last must be >= 1")
        check_unit(self.unit)
        check(self.max_events is None or self.max_events >= 1, "max_events must be >= 1 (or none)")
        check(
            self.max_tokens is None or self.max_tokens >= 1,
            "max_tokens must be >= 1 (or none for the compact budget)",
        )

    def over_size(self, run: CompactionRun) -> bool:
        if self.max_events is not None and size(run.messages, self.unit) > self.max_events:
            return True
        limit = run.request.budget_tokens if self.max_tokens is None else self.max_tokens
        return run.tokens() > limit

    async def compact(self, request: CompactionRequest, env: CompactionEnv) -> CompactionResult:
        env = with_setting_parameters(env, self, _SETTINGS)
        run = CompactionRun(self.name, request, env)
        first = first_in_messages(run.messages, self.first, self.unit)
        if request.trigger == "prompt_too_long":
            return await run.summarize_to_fit(first, env.settings.summary_reserve_tokens)
        if request.trigger == "manual":
            return await _summarize_middle(run, first, env.settings.manual_keep_messages)
        if not self.over_size(run):
            return run.done()
        return await _summarize_middle(run, self.first, self.last, unit=self.unit)


@dataclass(frozen=True)
class HybridMaskSummarize:
    """`hybrid`: observation masking on every call plus a periodic summary.

    Rule: every call applies `mask`'s rule (the last `keep` tool results verbatim, older
    bodies → `[observation elided: …; Recall(id=…)]`). Then, when at least `every`
    assistant turns were taken since the latest summary (counted after the summary
    boundary and the `last` messages that summary kept; from the start when there is
    none), everything except the first `first` and the last `last` messages is
    summarized into one summary, regardless of the budget. Nothing between them to
    summarize: no summary this call. A failed summary keeps the masked conversation,
    with a failed event.

    Triggers: auto → the rule. manual → mask, then summarize keeping the first messages
    and the last `manual_keep`; a failed summary leaves the history
    unchanged. prompt_too_long → mask, then summarize-to-fit if still over the budget.

    Counting kept turns: with count_kept, `every` counts every unsummarized assistant
    turn, those the latest summary kept included — the Complexity Trap's rule (summarize
    when N + M turns are unsummarized, keeping the last M), so its N=21, M=10 is
    every=31, last=20 where a turn is one assistant and one result message. Without it
    (the default) the kept turns are not counted and a summary comes `every` turns
    after the kept ones.

    Summarizing unmasked: with summarize_unmasked, the summarizer reads each elided
    body as it was (from the artifact store; a body clipped before it was elided stays
    a placeholder, as the clipped view is not kept) — as in the Complexity Trap, whose
    summary runs on the unmasked history and masking after it. The conversation sent
    to the model is the same either way.

    Parameters: keep: int = 5 (≥ 0), every: int = 10 (≥ 1), first: int = 1 (≥ 0),
    last: int = 10 (≥ 1), manual_keep: int | None = None (compact.manual_keep_messages),
    summary_reserve: int | None = None (compact.summary_reserve_tokens),
    count_kept: bool = False, summarize_unmasked: bool = False.
    """

    name: ClassVar[str] = "hybrid"
    keep: int = 5
    every: int = 10
    first: int = 1
    last: int = 10
    manual_keep: int | None = None
    summary_reserve: int | None = None
    count_kept: bool = False
    summarize_unmasked: bool = False

    def __post_init__(self) -> None:
        check_setting_parameters(self, _SETTINGS)
        check(self.keep >= 0, "keep must be >= 0")
        check(self.every >= 1, "every must be >= 1")
        check(self.first >= 0, "first must be >= 0")
        check(self.last >= 1, "last must be >= 1")

    async def compact(self, request: CompactionRequest, env: CompactionEnv) -> CompactionResult:
        env = with_setting_parameters(env, self, _SETTINGS)
        run = CompactionRun(self.name, request, env)
        mask_old_results(run, self.keep)
        if request.trigger == "prompt_too_long":
            return await run.summarize_to_fit(
                self.first, env.settings.summary_reserve_tokens, unmasked=self.summarize_unmasked
            )
        if request.trigger == "manual":
            return await _summarize_middle(
                run, self.first, env.settings.manual_keep_messages, unmasked=self.summarize_unmasked
            )
        if turns_since_summary(run.messages, kept=0 if self.count_kept else self.last) < self.every:
            return run.done()
        return await _summarize_middle(run, self.first, self.last, quiet=True, unmasked=self.summarize_unmasked)
