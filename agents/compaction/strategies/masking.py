"""Strategies that rewrite tool result bodies only: `mask` and `clear-tool-uses`.

None of them calls the summarizer or touches user or assistant text. Bodies they
hide are put in the artifact store first, so `Recall` still returns them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

from agents.compaction.clearing import (
    clear_old_tool_results,
    clear_tool_inputs,
    elide_old_results,
    is_cleared,
    restore_placeholders,
)
from agents.compaction.protocol import CompactionEnv, CompactionRequest, CompactionResult, check
from agents.compaction.run import CompactionRun
from agents.compaction.units import check_unit, results_in_last_events
from agents.messages import ClearedBody, Message, completed_tool_interactions

__all__ = ["ClearToolUses", "MaskUnit", "ObservationMasking", "mask_old_results"]

MaskUnit = Literal["results", "events"]


def mask_old_results(run: CompactionRun, keep: int) -> int:
    """`mask`'s rule as one step (`elide_old_results`): every tool_result body but the
    last `keep` becomes a placeholder naming its Recall id. Returns how many were
    elided; an applied change is one "clear" event."""
    outcome = elide_old_results(run.messages, keep=keep)
    if not outcome.cleared:
        return 0
    run.store(item.block for item in outcome.cleared)
    run.apply("clear", outcome.messages, results_cleared=len(outcome.cleared))
    return len(outcome.cleared)


def results_to_keep(messages: Sequence[Message], keep: int, polling: int = 1, unit: MaskUnit = "results") -> int:
    """How many of the latest tool results `mask` keeps verbatim (see ObservationMasking)."""
    if unit == "events":
        return results_in_last_events(messages, keep)
    if polling == 1:
        return keep
    results = sum(len(m.tool_results_in) for m in messages if m.role == "user")
    observations = results + 1  # SWE-agent counts its task message as the first observation
    elided = max((observations // polling) * polling - 1 - keep, 0)
    return results - elided


@dataclass(frozen=True)
class ObservationMasking:
    """`mask`: observation masking (as described for SWE-agent).

    Rule: on every call, whatever the budget, the last `keep` tool results (counted by
    result block, so a parallel batch counts each) stay verbatim; every older result body
    becomes `[observation elided: N chars; Recall(id="<tool_use_id>")]` (N = the body's
    length). Tool uses, user and assistant text are untouched. A body no longer than its
    placeholder is left as is (eliding it would add tokens). Idempotent.

    Triggers: auto → the rule. manual → the rule; nothing to elide is a failure with the
    history unchanged. prompt_too_long → the rule, then, if still over the budget,
    drop-to-fit: keep the task message and the largest clean recent suffix that fits,
    the middle replaced by one trim note.

    Units. unit=results (the default) counts tool result blocks, as SWE-agent counts
    observations. unit=events counts events (`agents.compaction.units`), as OpenHands'
    ObservationMaskingCondenser counts its attention window: a result stays verbatim when
    it is among the last `keep` events of the conversation (each tool use, each tool
    result and each text message is one), so where a step makes one call, keep=2k events
    holds about k results.

    Polling (SWE-agent's `polling`, unit=results only): the elision boundary moves only
    every `polling` results, so the cached prefix survives between moves. SWE-agent
    counts its task message as the first observation and never elides it; of T results,
    ⌊(T+1)/polling⌋·polling − 1 − keep (at least 0) are elided, so the last keep to
    keep+polling−1 stay verbatim. polling=1 is the plain rule.

    Parameters: keep: int = 5 (≥ 0), polling: int = 1 (≥ 1),
    unit: results|events = results.
    """

    name: ClassVar[str] = "mask"
    keep: int = 5
    polling: int = 1
    unit: MaskUnit = "results"

    def __post_init__(self) -> None:
        check(self.keep >= 0, "keep must be >= 0")
        check(self.polling >= 1, "polling must be >= 1")
        check_unit(self.unit, ("results", "events"))
        check(self.polling == 1 or self.unit == "results", "polling applies to unit=results only")

    async def compact(self, request: CompactionRequest, env: CompactionEnv) -> CompactionResult:
        run = CompactionRun(self.name, request, env)
        masked = mask_old_results(run, results_to_keep(run.messages, self.keep, self.polling, self.unit))
        if request.trigger == "prompt_too_long":
            return run.drop_to_fit(first=1)
        if request.trigger == "manual" and not masked:
            if self.unit == "events":
                return run.fail(
                    f"nothing to mask: no result older than the last {self.keep} events is unmasked", "clear"
                )
            return run.fail(f"nothing to mask: at most {self.keep} tool results are not masked yet", "clear")
        return run.done()


def uncleared_tokens(run: CompactionRun) -> int:
    """The request's tokens with every cleared result body counted as it was."""
    restored = restore_placeholders(run.messages, run.stored_body, ClearedBody)
    tokens = run.total(restored)
    counter = run.env.counter
    for block in (b for m in restored if m.role == "user" for b in m.tool_results_in):
        marker = block.marker
        if not isinstance(marker, ClearedBody):
            continue
        body = run.stored_body(block.tool_use_id)
        if body:  # clipped before it was cleared: the clipped view's share of the whole
            shown = counter.count_text(body) * marker.original_chars / len(body)
            tokens += round(shown) - counter.count_text(block.content)
    return tokens


@dataclass(frozen=True)
class ClearToolUses:
    """`clear-tool-uses`: an emulation of the Messages API context-management edit
    `clear_tool_uses` (client side, on our conversation).

    Rule: when the request's input tokens exceed `trigger`, every completed tool result
    except those of the last `keep` tool uses (by use order) and those of tools named in
    `exclude_tools` becomes `[cleared N chars of tool output; Recall(id=…) returns it]`
    (shared with clear-then-summarize's clearing step). With `clear_tool_inputs`, the
    tool_use input of every cleared interaction is also replaced by `{}` (name and id
    stay) — the API's option; our default strategy keeps inputs. If the edit would free
    fewer than `clear_at_least` tokens, or none, nothing is changed. Under the trigger,
    nothing is changed.

    Counting what was cleared: the API edits each request server-side while the client
    keeps its full history, so its trigger sees the history as if nothing had been
    cleared, and once past it every request keeps only the last `keep` results. Ours
    rewrites the conversation itself; with count_cleared the trigger counts each cleared
    body as it was (from the artifact store; a body clipped before it was cleared counts
    its clipped share), which reproduces the API's rule. Without it (the default) the
    trigger counts the conversation as sent, so after a clear it waits until the cleared
    conversation passes the trigger again. Cleared inputs are not counted back.

    Triggers: auto → the rule. manual → the rule without the `trigger` threshold;
    nothing cleared is a failure with the history unchanged. prompt_too_long → the rule
    without the threshold, then drop-to-fit if still over the budget.

    Parameters:
      trigger: int | None = None   input-token threshold; None = the compact budget
      keep: int = 3                most recent tool uses whose results stay
      clear_at_least: int = 0      minimum tokens an edit must free, else no edit
      exclude_tools: tuple[str, ...] = ()   tool names never cleared ("Read|Grep")
      clear_tool_inputs: bool = False       also clear the inputs of cleared uses
      count_cleared: bool = False           the trigger counts cleared bodies as they were
    """

    name: ClassVar[str] = "clear-tool-uses"
    trigger: int | None = None
    keep: int = 3
    clear_at_least: int = 0
    exclude_tools: tuple[str, ...] = ()
    clear_tool_inputs: bool = False
    count_cleared: bool = False

    def __post_init__(self) -> None:
        check(
            self.trigger is None or self.trigger >= 1,
            "trigger must be >= 1 (or none for the compact budget)",
        )
        check(self.keep >= 0, "keep must be >= 0")
        check(self.clear_at_least >= 0, "clear_at_least must be >= 0")
        object.__setattr__(self, "exclude_tools", tuple(self.exclude_tools))

    async def compact(self, request: CompactionRequest, env: CompactionEnv) -> CompactionResult:
        run = CompactionRun(self.name, request, env)
        if request.trigger == "auto":
            threshold = request.budget_tokens if self.trigger is None else self.trigger
            if (uncleared_tokens(run) if self.count_cleared else run.tokens()) > threshold:
                self._clear(run)
            return run.done()
        cleared = self._clear(run)
        if request.trigger == "prompt_too_long":
            return run.drop_to_fit(first=1)
        if not cleared:
            return run.fail(f"nothing to clear that frees at least {self.clear_at_least} tokens", "clear")
        return run.done()

    def _clear(self, run: CompactionRun) -> int:
        outcome = clear_old_tool_results(
            run.messages,
            keep_recent_messages=0,
            keep_recent_tool_uses=self.keep,
            exclude_tools=self.exclude_tools,
        )
        if not outcome.cleared:
            return 0
        messages = outcome.messages
        if self.clear_tool_inputs:
            ids = {
                i.use.id
                for i in completed_tool_interactions(messages)
                if is_cleared(i.result) and i.use.name not in self.exclude_tools
            }
            messages = clear_tool_inputs(messages, ids)
        freed = run.total(run.messages) - run.total(messages)
        if freed <= 0 or freed < self.clear_at_least:
            return 0
        run.store(item.block for item in outcome.cleared)
        run.apply("clear", messages, results_cleared=len(outcome.cleared))
        return len(outcome.cleared)
