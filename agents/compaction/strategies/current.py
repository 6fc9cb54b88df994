"""`current`, the default strategy: a current, evidence-preserving, cache-aware working set.

  auto    — while the request fits the window (less the output reserve and `headroom`):
            nothing, so a conversation that fits is sent exactly as it is (no harm where
            nothing is needed) and the cached prefix stays byte-identical between
            compactions. The count is the session's, calibrated by provider usage and
            rounded up (`agents.tokens.CalibratedCounter`). Past it, one compaction in a
            large step, down to `target` × the budget:
            1. currentness: every result a later call made stale (re-run, file rewritten
               or re-read whole; partial edits too with `edits`) becomes a `superseded`
               note naming the call that superseded it (all but the latest result).
               With `pay` (off by default), stop there if that alone brings the request
               under the budget and this small step pays for the cache it breaks better
               than a fold would;
            2. fold: the oldest turns after the task (and after earlier digests) are
               replaced by a digest — one line per tool call with the residue of its
               output — until the request is under the target, never folding the last
               `keep` tool calls. Digests are append-only: a later fold adds its own
               after the earlier ones, so the prefix up to the last digest stays cached
               (the provider puts a cache breakpoint there). When the digests outgrow
               `digest` × the budget they are merged into one, oldest lines first out;
            3. hard fit: still over the budget (never by construction, unless recent
               results are huge): clear the bodies of the kept tool results oldest first
               (each keeping its residue), fold up to the last message, drop digest
               lines, clip what remains. A request is never left over the budget while
               anything can still be removed.
  manual  — summarize through the Summarizer port, keeping the last `manual_keep`
            messages (as clear-then-summarize); failure changes nothing.
  prompt_too_long — steps 1–3 with the lowered budget as the target.

Parameters (each switchable, for the benchmark's ablation):
  target: float = 0.6        a compaction brings the request to target × budget (0 < t ≤ 1)
  headroom: float = 0.05     an auto compaction starts once the request passes (1 − headroom) ×
                             the window minus the output reserve (budget ÷ ratio): the share kept
                             for what the calibrated count may still miss (new content denser than
                             the last measured request)
  start: float | None = None instead, start once the request passes start × budget (≥ target;
                             never past the window minus the output reserve). 1.0 was the default
                             before the count was calibrated: it compacted conversations that fit
  keep: int = 3              most recent tool calls never folded (>= 0)
  currentness: bool = True   clear superseded results first
  edits: bool = False        a partial edit also supersedes earlier reads of its file
  residue: int = 300         chars of extractive residue kept per cleared or folded result (0: none)
  digest: float = 0.25       share of the budget the digests may hold before they are merged
  pay: bool = False          stop after step 1 when that small step, left between the target
                             and the budget, costs less per call in cache than the fold
                             (`agents.compaction.scheduling`); False: always on to the target.
                             Off: with the trigger at the window, pay=true changed no request
                             of the 53 shared traces at 16K, 32K or 64K (ablation, branch ws-fit)
  append: bool = True        append digests (False: every fold rewrites one merged digest)
  first: int = 1             messages at the start never folded (the task)
  manual_keep: int | None    compact.manual_keep_messages (2, >= 1)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from agents.compaction.boundaries import clean_boundaries, head_end, split_keeping_recent
from agents.compaction.currentness import Supersession, clear_superseded, superseded_results
from agents.compaction.fitting import clear_kept_results, clip_to_fit
from agents.compaction.folding import (
    compacted_end,
    digest_text,
    fold_span,
    merged_digest,
    message_lines,
)
from agents.compaction.ledger import unchanged_prefix_tokens
from agents.compaction.notes import bridge, digest_message, is_digest
from agents.compaction.protocol import (
    CompactionEnv,
    CompactionRequest,
    CompactionResult,
    check,
    check_setting_parameters,
)
from agents.compaction.run import BudgetGated, CompactionRun, EventKind
from agents.compaction.scheduling import Step, small_step_pays
from agents.messages import Message, ToolResultBlock, completed_tool_interactions

__all__ = ["CurrentWorkingSet"]


@dataclass(frozen=True)
class CurrentWorkingSet(BudgetGated):
    name: ClassVar[str] = "current"
    SETTINGS: ClassVar[Mapping[str, str]] = {"manual_keep": "manual_keep_messages"}
    target: float = 0.6
    headroom: float = 0.05
    start: float | None = None
    keep: int = 3
    currentness: bool = True
    edits: bool = False
    residue: int = 300
    digest: float = 0.25
    append: bool = True
    pay: bool = False
    first: int = 1
    manual_keep: int | None = None

    def __post_init__(self) -> None:
        check_setting_parameters(self, self.SETTINGS)
        check(0 < self.target <= 1, "target must be > 0 and <= 1 (a share of the budget)")
        check(0 <= self.headroom < 1, "headroom must be >= 0 and < 1 (a share of the window)")
        check(self.start is None or self.target <= self.start, "start must be >= target (a share of the budget)")
        check(self.keep >= 0, "keep must be >= 0")
        check(self.residue >= 0, "residue must be >= 0")
        check(0 < self.digest <= 1, "digest must be > 0 and <= 1 (a share of the budget)")
        check(self.first >= 0, "first must be >= 0")

    def starts_over(self, request: CompactionRequest, env: CompactionEnv) -> int:
        limit = int(request.budget_tokens / env.settings.ratio)  # the window minus the output reserve
        if self.start is None:
            return int(limit * (1 - self.headroom))
        return min(int(request.budget_tokens * self.start), limit)

    async def over_budget(self, run: CompactionRun) -> CompactionResult:
        request = run.request
        budget = request.budget_tokens
        if request.trigger == "prompt_too_long" and run.tokens() <= budget:
            return run.fail(f"the conversation already fits the budget of {budget} tokens", "prompt_too_long")
        kind: EventKind = "clear" if request.trigger == "auto" else "prompt_too_long"
        goal = int(budget * self.target) if request.trigger == "auto" else budget
        if self.currentness:
            self._clear_superseded(run, kind)
        if run.tokens() > goal and not (request.trigger == "auto" and self._small_step_pays(run, goal)):
            self._fold(run, goal, limit=self._protect_limit(run.messages), kind=kind)
        # An auto step may stop between the budget and its start (a start over 1).
        ceiling = max(budget, self.starts_over(request, run.env)) if request.trigger == "auto" else budget
        if run.tokens() > ceiling:
            self._fit(run, budget, kind)
        if run.tokens() > ceiling:
            return run.fail(
                f"still {run.tokens()} tokens with nothing left to remove, over the budget of {ceiling}", kind
            )
        return run.done()

    # -- 1. currentness ---------------------------------------------------------------------

    def _stale(self, messages: list[Message]) -> dict[str, Supersession]:
        return superseded_results(messages, edits=self.edits) if self.currentness else {}

    def _clear_superseded(self, run: CompactionRun, kind: EventKind) -> None:
        messages = run.messages
        start = compacted_end(messages, head_end(messages, self.first))
        outcome = clear_superseded(messages, self._stale(messages), start=start)
        if outcome.cleared:
            run.store(item.block for item in outcome.cleared)
            run.apply(kind, outcome.messages, results_cleared=len(outcome.cleared))

    def _small_step_pays(self, run: CompactionRun, goal: int) -> bool:
        """After step 1 changed something: is stopping there (under the budget, over the
        goal) cheaper per call in cache than folding down to the goal?"""
        if not (self.pay and run.events):
            return False
        request, counter = run.request, run.env.counter
        unchanged = unchanged_prefix_tokens(request.messages, run.messages, request.overhead_tokens, counter)
        small = Step(after=run.tokens(), rewritten=max(run.tokens() - unchanged, 0))
        end = compacted_end(run.messages, head_end(run.messages, self.first))
        settled = request.overhead_tokens + sum(counter.count_message(m) for m in run.messages[:end])
        large = Step(after=goal, rewritten=max(goal - settled, 0))
        return small_step_pays(small, large, self.starts_over(request, run.env), _growth(run.messages[end:], counter))

    # -- 2. fold -------------------------------------------------------------------------------

    def _protect_limit(self, messages: list[Message]) -> int:
        """The latest index a fold may end at: before the last `keep` tool calls, and
        before the last message."""
        limit = len(messages) - 1
        interactions = completed_tool_interactions(messages)
        if self.keep and interactions:
            limit = min(limit, interactions[-min(self.keep, len(interactions))].use_index)
        return limit

    def _fold(self, run: CompactionRun, goal: int, *, limit: int, kind: EventKind) -> None:
        """Fold the oldest turns after the compacted region until the request is at most
        `goal` tokens, ending at a clean boundary no later than `limit`."""
        messages = run.messages
        clean = clean_boundaries(messages)
        start = compacted_end(messages, head_end(messages, self.first, clean))
        cut = self._cut(run, messages, clean, start, min(limit, len(messages) - 1), goal)
        if cut is None:
            return
        stale = self._stale(messages)
        folded = fold_span(messages, start, cut, stale, self.residue)
        run.store(b for m in messages[start:cut] for b in m.tool_results_in)
        run.apply(kind, folded, results_cleared=sum(len(m.tool_results_in) for m in messages[start:cut]))
        self._bound_digests(run, kind)

    def _cut(
        self, run: CompactionRun, messages: list[Message], clean: list[bool], start: int, limit: int, goal: int
    ) -> int | None:
        """The first clean cut after `start` (at most `limit`) whose fold brings the request
        to `goal` or under; the latest allowed cut when none does; None when there is none."""
        counter = run.env.counter
        stale = self._stale(messages)
        results = {b.tool_use_id: b for m in messages for b in m.tool_results_in}
        total = run.tokens()
        fixed = 2 * counter.count_message(bridge()) + counter.count_message(digest_message(0, ""))
        removed, digest, cut = 0, 0, None
        for i in range(start, limit):
            removed += counter.count_message(messages[i])
            digest += sum(
                counter.count_text(line) + 1 for line in message_lines(messages[i], results, stale, self.residue)
            )
            if clean[i + 1]:
                cut = i + 1
                if total - removed + digest + fixed <= goal:
                    break
        return cut

    def _bound_digests(self, run: CompactionRun, kind: EventKind) -> None:
        """Merge the digests into one when they outgrow their share (or always, without
        `append`): the newest lines that fit in half the share stay."""
        messages = run.messages
        head = head_end(messages, self.first)
        end = compacted_end(messages, head)
        digests = [m for m in messages[head:end] if is_digest(m)]
        allowance = int(run.request.budget_tokens * self.digest)
        size = sum(run.env.counter.count_message(m) for m in digests)
        if len(digests) < 2 and size <= allowance:
            return
        if self.append and size <= allowance:
            return
        lines = [line for m in digests for line in digest_text(m).split("\n") if line]
        keep = _lines_within(lines, allowance // 2 if size > allowance else allowance, run.env.counter)
        run.apply(kind, merged_digest(messages, head, end, keep))

    # -- 3. hard fit -------------------------------------------------------------------------

    def _fit(self, run: CompactionRun, budget: int, kind: EventKind) -> None:
        """Everything left that can go, in this order, until the request fits the budget."""
        self._replace(run, kind, clear_kept_results(run.messages, run.tokens() - budget, run.env.counter, self.residue))
        if run.tokens() > budget:
            self._fold(run, budget, limit=len(run.messages) - 1, kind=kind)
        if run.tokens() > budget:
            head = head_end(run.messages, self.first)
            end = compacted_end(run.messages, head)
            if any(is_digest(m) for m in run.messages[head:end]):
                run.apply(kind, merged_digest(run.messages, head, end, 0))
        if run.tokens() > budget:
            self._replace(run, kind, clip_to_fit(run.messages, run.tokens() - budget, run.env.counter))
        if run.tokens() > budget:
            excess = run.tokens() - budget
            self._replace(
                run, kind, clear_kept_results(run.messages, excess, run.env.counter, self.residue, latest=True)
            )

    @staticmethod
    def _replace(
        run: CompactionRun, kind: EventKind, outcome: tuple[list[Message], list[ToolResultBlock]] | None
    ) -> None:
        if outcome is not None:
            run.store(outcome[1])
            run.apply(kind, outcome[0], results_cleared=len(outcome[1]))

    # -- manual --------------------------------------------------------------------------------

    async def summarize_keeping(self, run: CompactionRun, keep: int) -> CompactionResult:
        messages = run.messages
        clean = clean_boundaries(messages)
        head = head_end(messages, self.first, clean)
        split = split_keeping_recent(messages, keep, clean)
        if split is None or split <= head:
            return run.fail(f"nothing older than the last {keep} messages to summarize", "summary")
        failure = await run.summarize(head, split)
        return run.fail(failure, "summary") if failure else run.done()


def _growth(recent: list[Message], counter) -> float:
    """Tokens the conversation grew by per model call, over its uncompacted part."""
    calls = sum(1 for m in recent if m.role == "assistant")
    return sum(counter.count_message(m) for m in recent) / max(calls, 1)


def _lines_within(lines: list[str], tokens: int, counter) -> int:
    """How many of the newest `lines` fit in `tokens`."""
    used, n = 0, 0
    for line in reversed(lines):
        used += counter.count_text(line) + 1
        if used > tokens:
            break
        n += 1
    return n
