"""Baseline compaction strategies, to compare against clear-then-summarize.

Each is a frozen dataclass whose fields are its parameters, so
`make_strategy("mask:keep=8")` builds `ObservationMasking(keep=8)`. The class
docstrings state each exact rule; in short:

  truncate         never compacts history; only the loop's per-result clipping applies
                   (`raw` is the same strategy run with clipping disabled by the benchmark)
  mask             keep the last `keep`=5 tool results verbatim, elide older bodies to
                   `[observation elided: N chars; Recall(id="…")]`, on every call
  window           keep the first `first`=1 and the last `last`=20 messages, drop the
                   middle behind one trim note, on every call
  summarize        over `max_events`/`max_tokens` (default: the compact budget), summarize
                   all but the first `first`=1 and last `last`=10 messages
  amortized        over `max_tokens` (default: the compact budget), drop the oldest half
                   of the messages after the first `first`=1, behind a trim note
  clear-tool-uses  emulates the API's clear_tool_uses edit: `trigger`, `keep`=3,
                   `clear_at_least`=0, `exclude_tools`=(), `clear_tool_inputs`=False
  hybrid           `mask` every call plus a summary (all but first 1 / last 10) every
                   `every`=10 assistant turns

Common guarantees (tested on random conversations with parallel tool batches):
every output is protocol-complete (splits only at clean boundaries, never between a
tool_use and its tool_result) and keeps roles alternating; user and assistant text is
never rewritten — a strategy either keeps a message (as the same object) or drops it
whole; every body hidden from the model is put in the artifact store first, so Recall
returns it; every change is a priced ledger event ("clear" for eliding, clearing and
dropping, "summary" for summaries, "prompt_too_long" for the refusal fallback), and a
failed step is an event with `applied=False` plus `CompactionResult.failure`.

Modules: baselines_masking (truncate, mask, clear-tool-uses), baselines_dropping
(window, amortized), baselines_summary (summarize, hybrid), baselines_steps (`Steps`:
one compaction's steps, ledger, failure policy and fallbacks), baselines_common
(placeholders, trim notes, role bridges, rewriting, split points).

Triggers: "auto" runs the rule before every model call. "manual" (/compact) runs the
rule without its size threshold — summarizing strategies summarize keeping
`settings.manual_keep_messages`; a manual compaction that changes nothing is a failure
and leaves the history as it was. "prompt_too_long" (the provider refused) first runs the
rule's rewriting step where it has one (mask, window, clear-tool-uses without its
threshold, hybrid's masking), then, if still over the (lowered) budget, keeps the first messages and the largest clean
recent suffix that fits, replacing the middle with a trim note (non-summarizing
strategies: drop-to-fit) or a summary (summarize, hybrid: summarize-to-fit, leaving
`settings.summary_reserve_tokens` for it); when nothing fits, the history is returned
unchanged with the reason. `truncate` answers manual and prompt_too_long with a
failure, like `raw`.
"""

from __future__ import annotations

from collections.abc import Callable

from agents.compaction.baselines_dropping import AmortizedForgetting, SlidingWindow
from agents.compaction.baselines_masking import ClearToolUses, ObservationMasking, TruncateOnly
from agents.compaction.baselines_summary import HybridMaskSummarize, SummarizeOlder
from agents.compaction.strategy import CompactionStrategy

__all__ = [
    "BASELINES",
    "AmortizedForgetting",
    "ClearToolUses",
    "HybridMaskSummarize",
    "ObservationMasking",
    "SlidingWindow",
    "SummarizeOlder",
    "TruncateOnly",
]

BASELINES: dict[str, Callable[..., CompactionStrategy]] = {
    cls.name: cls
    for cls in (
        TruncateOnly,
        ObservationMasking,
        SlidingWindow,
        SummarizeOlder,
        AmortizedForgetting,
        ClearToolUses,
        HybridMaskSummarize,
    )
}
