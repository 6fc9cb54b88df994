"""Baselines that rewrite tool result bodies only: `truncate`, `mask`, `clear-tool-uses`.

None of them calls the summarizer or touches user or assistant text. Bodies they
hide are put in the artifact store first, so `Recall` still returns them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from agents.compaction.baselines_common import (
    check,
    elided_placeholder,
    is_elided,
    rewrite_inputs,
    rewrite_results,
)
from agents.compaction.baselines_steps import Steps
from agents.compaction.clearing import clear_old_tool_results, is_cleared
from agents.compaction.strategy import CompactionEnv, CompactionRequest, CompactionResult
from agents.messages import completed_tool_interactions

__all__ = ["ClearToolUses", "ObservationMasking", "TruncateOnly", "mask_old_results"]


@dataclass(frozen=True)
class TruncateOnly:
    """`truncate`: the per-result budget only.

    Rule: history is never compacted, on any trigger. The loop still clips every tool
    result over `settings.result_max_tokens` when it enters the conversation (head +
    marker + tail, full body kept for Recall); that clipping is the loop's, not a
    strategy's, so it applies here as it does under every strategy.

    Differs from `raw` only in what a benchmark does around it: for `raw` the benchmark
    also sets result_max_tokens huge, so nothing at all is removed.

    Triggers: auto → unchanged, no event. manual and prompt_too_long → unchanged, with a
    failure saying this strategy never compacts (a second provider refusal is then the
    loop's clear error).

    Parameters: none.
    """

    name: ClassVar[str] = "truncate"

    async def compact(self, request: CompactionRequest, env: CompactionEnv) -> CompactionResult:
        if request.trigger == "auto":
            return CompactionResult(list(request.messages))
        reason = (
            f"strategy '{self.name}' never compacts history (only the per-result budget applies)"
        )
        return CompactionResult(list(request.messages), failure=reason)


def mask_old_results(steps: Steps, keep: int) -> int:
    """Replace every tool_result body except the last `keep` (by position, counting each
    block of a parallel batch) with a one-line placeholder naming its Recall id. Bodies
    already elided or cleared, and bodies no longer than their placeholder, stay as they
    are. Returns how many were elided; an applied change is one "clear" event."""
    blocks = [b for m in steps.messages if m.role == "user" for b in m.tool_results_in]
    older = blocks[: max(len(blocks) - keep, 0)]
    to_elide = {}
    for block in older:
        if is_elided(block) or is_cleared(block):
            continue
        placeholder = elided_placeholder(block.tool_use_id, len(block.content))
        if len(placeholder) < len(block.content):
            to_elide[block.tool_use_id] = (block, placeholder)
    if not to_elide:
        return 0
    steps.store(block for block, _ in to_elide.values())
    replacements = {use_id: placeholder for use_id, (_, placeholder) in to_elide.items()}
    steps.apply(
        "clear", rewrite_results(steps.messages, replacements), results_cleared=len(to_elide)
    )
    return len(to_elide)


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

    Parameters: keep: int = 5 (tool results kept verbatim, ≥ 0).
    """

    name: ClassVar[str] = "mask"
    keep: int = 5

    def __post_init__(self) -> None:
        check(self.keep >= 0, "keep must be >= 0")

    async def compact(self, request: CompactionRequest, env: CompactionEnv) -> CompactionResult:
        steps = Steps(self.name, request, env)
        masked = mask_old_results(steps, self.keep)
        if request.trigger == "prompt_too_long":
            return steps.drop_to_fit(first=1)
        if request.trigger == "manual" and not masked:
            return steps.fail(
                f"nothing to mask: at most {self.keep} tool results are not masked yet", "clear"
            )
        return steps.done()


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

    Triggers: auto → the rule. manual → the rule without the `trigger` threshold;
    nothing cleared is a failure with the history unchanged. prompt_too_long → the rule
    without the threshold, then drop-to-fit if still over the budget.

    Parameters:
      trigger: int | None = None   input-token threshold; None = the compact budget
      keep: int = 3                most recent tool uses whose results stay
      clear_at_least: int = 0      minimum tokens an edit must free, else no edit
      exclude_tools: tuple[str, ...] = ()   tool names never cleared ("Read|Grep")
      clear_tool_inputs: bool = False       also clear the inputs of cleared uses
    """

    name: ClassVar[str] = "clear-tool-uses"
    trigger: int | None = None
    keep: int = 3
    clear_at_least: int = 0
    exclude_tools: tuple[str, ...] = ()
    clear_tool_inputs: bool = False

    def __post_init__(self) -> None:
        check(
            self.trigger is None or self.trigger >= 1,
            "trigger must be >= 1 (or none for the compact budget)",
        )
        check(self.keep >= 0, "keep must be >= 0")
        check(self.clear_at_least >= 0, "clear_at_least must be >= 0")
        object.__setattr__(self, "exclude_tools", tuple(self.exclude_tools))

    async def compact(self, request: CompactionRequest, env: CompactionEnv) -> CompactionResult:
        steps = Steps(self.name, request, env)
        if request.trigger == "auto":
            threshold = request.budget_tokens if self.trigger is None else self.trigger
            if steps.tokens() > threshold:
                self._clear(steps)
            return steps.done()
        cleared = self._clear(steps)
        if request.trigger == "prompt_too_long":
            return steps.drop_to_fit(first=1)
        if not cleared:
            return steps.fail(
                f"nothing to clear that frees at least {self.clear_at_least} tokens", "clear"
            )
        return steps.done()

    def _clear(self, steps: Steps) -> int:
        outcome = clear_old_tool_results(
            steps.messages,
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
            messages = rewrite_inputs(messages, ids)
        freed = steps.total(steps.messages) - steps.total(messages)
        if freed <= 0 or freed < self.clear_at_least:
            return 0
        if steps.env.artifacts is not None:
            for item in outcome.cleared:
                steps.env.artifacts.put(item.tool_use_id, item.original)
        steps.apply("clear", messages, results_cleared=len(outcome.cleared))
        return len(outcome.cleared)
