"""The built-in compaction strategies, one module per family, and their table.

What the package's __init__ held; it re-exports these names, and its docstring
describes the package (agents.compaction.strategies).
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
