"""The built-in compaction strategies, one module per family, and their table.

  current      current (the default: currentness, residues, append-only digests)
  default      clear-then-summarize (the design's first default, kept as a baseline)
  passthrough  raw, truncate (never compact history)
  masking      mask, clear-tool-uses (rewrite tool result bodies only)
  dropping     window, amortized (drop whole messages behind a trim note)
  summarizing  summarize, hybrid (summarize through the Summarizer port)

Each is a frozen dataclass (or a factory) whose keyword parameters are its spec
parameters, so `make_strategy("mask:keep=8")` builds `ObservationMasking(keep=8)`.
The class docstrings state each exact rule.

Common guarantees (tested on random conversations with parallel tool batches):
every output is protocol-complete (splits only at clean boundaries, never between a
tool_use and its tool_result) and keeps roles alternating; user and assistant text is
never rewritten — a strategy either keeps a message (as the same object) or drops it
whole; every body hidden from the model is put in the artifact store first, so Recall
returns it; every change is a priced ledger event ("clear" for eliding, clearing and
dropping, "summary" for summaries, "prompt_too_long" for the refusal fallback), and a
failed step is an event with `applied=False` plus `CompactionResult.failure` — all
through one `CompactionRun` (`agents.compaction.run`).

Units: `mask` counts tool results, `window`, `summarize` and `amortized` count messages;
with `unit=events` each counts events as OpenHands does (`agents.compaction.units`).

Triggers: "auto" runs the rule before every model call. "manual" (/compact) runs the
rule without its size threshold — summarizing strategies summarize keeping
`manual_keep_messages`; a manual compaction that changes nothing is a failure and
leaves the history as it was. "prompt_too_long" (the provider refused) first runs the
rule's rewriting step where it has one (mask, window, clear-tool-uses without its
threshold, hybrid's masking), then, if still over the (lowered) budget, keeps the first
messages and the largest clean recent suffix that fits, replacing the middle with a
trim note (non-summarizing strategies: drop-to-fit) or a summary (summarize, hybrid:
summarize-to-fit, leaving `summary_reserve_tokens` for it); when nothing fits, the
history is returned unchanged with the reason. `raw` and `truncate` answer manual and
prompt_too_long with a failure.
"""

from __future__ import annotations

from collections.abc import Callable

from agents.compaction.protocol import CompactionStrategy
from agents.compaction.strategies.current import CurrentWorkingSet
from agents.compaction.strategies.default import ClearThenSummarize
from agents.compaction.strategies.dropping import AmortizedForgetting, SlidingWindow
from agents.compaction.strategies.masking import ClearToolUses, ObservationMasking
from agents.compaction.strategies.passthrough import NoCompaction, raw, truncate
from agents.compaction.strategies.summarizing import HybridMaskSummarize, SummarizeOlder

__all__ = [
    "BUILTIN_STRATEGIES",
    "AmortizedForgetting",
    "ClearThenSummarize",
    "ClearToolUses",
    "CurrentWorkingSet",
    "HybridMaskSummarize",
    "NoCompaction",
    "ObservationMasking",
    "SlidingWindow",
    "SummarizeOlder",
]

# Name → factory. A factory's keyword parameters are the spec's parameters.
BUILTIN_STRATEGIES: dict[str, Callable[..., CompactionStrategy]] = {
    CurrentWorkingSet.name: CurrentWorkingSet,
    ClearThenSummarize.name: ClearThenSummarize,
    "raw": raw,
    "truncate": truncate,
    ObservationMasking.name: ObservationMasking,
    SlidingWindow.name: SlidingWindow,
    SummarizeOlder.name: SummarizeOlder,
    AmortizedForgetting.name: AmortizedForgetting,
    ClearToolUses.name: ClearToolUses,
    HybridMaskSummarize.name: HybridMaskSummarize,
}
