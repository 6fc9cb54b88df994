"""Compaction: the pure steps and the strategies that order them.

  pure steps   result_budget (clip one result), clearing (clear / elide old result
               bodies), boundaries (clean splits), trimming (drop a span behind a
               note), summary (summarize older history), notes (the synthetic
               messages), extractive / model_summarizer / summarizers (the
               Summarizer port's implementations), budget (the compact budget)
  policy       protocol (the strategy seam), run (one compaction: ledger events and
               failures, shared by every strategy), strategies/ (one module per
               family), registry (names → factories), specs (the spec grammar,
               entry points, import paths, parameter conversion)
  ledger       ledger (CompactionEvent and the cache-aware cost model)
"""

from agents.compaction.boundaries import (
    clean_boundaries,
    split_keeping_recent,
    split_largest_fitting_suffix,
)
from agents.compaction.budget import (
    check_budget_fits,
    compact_budget,
    context_window_for,
    refusal_budget,
)
from agents.compaction.clearing import clear_old_tool_results, cleared_note, is_cleared
from agents.compaction.extractive import ExtractiveSummarizer
from agents.compaction.ledger import CompactionEvent
from agents.compaction.model_summarizer import ModelSummarizer
from agents.compaction.protocol import (
    CompactionEnv,
    CompactionRequest,
    CompactionResult,
    CompactionStrategy,
)
from agents.compaction.registry import STRATEGIES, register_strategy
from agents.compaction.result_budget import clip_tool_result
from agents.compaction.specs import make_strategy
from agents.compaction.strategies import ClearThenSummarize, NoCompaction
from agents.compaction.summarizers import load_summarizer
from agents.compaction.summary import (
    SummaryFailed,
    is_summary_boundary,
    summarize_older,
    summarized_conversation,
)

__all__ = [
    "STRATEGIES",
    "ClearThenSummarize",
    "CompactionEnv",
    "CompactionEvent",
    "CompactionRequest",
    "CompactionResult",
    "CompactionStrategy",
    "ExtractiveSummarizer",
    "ModelSummarizer",
    "NoCompaction",
    "SummaryFailed",
    "check_budget_fits",
    "clean_boundaries",
    "clear_old_tool_results",
    "cleared_note",
    "clip_tool_result",
    "compact_budget",
    "context_window_for",
    "is_cleared",
    "is_summary_boundary",
    "refusal_budget",
    "load_summarizer",
    "make_strategy",
    "register_strategy",
    "split_keeping_recent",
    "split_largest_fitting_suffix",
    "summarize_older",
    "summarized_conversation",
]
