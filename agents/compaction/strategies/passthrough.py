"""`raw` and `truncate`: the strategy that never compacts history.

Rule: history is never compacted, on any trigger. The loop still clips every tool
result over `tools.result_max_tokens` when it enters the conversation (head + marker +
tail, full body kept for Recall); that clipping is the loop's, not a strategy's, so it
applies under both names as it does under every strategy.

The two names are the same strategy; they differ only in what a benchmark does around
them: for `raw` the compaction benchmark also sets the per-result budget huge, so
nothing at all is removed (`benchmarks.replay.result_budget_for`).

Triggers: auto → unchanged, no event. manual and prompt_too_long → unchanged, with a
failure saying this strategy never compacts (a second provider refusal is then the
loop's clear error). Parameters: none.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agents.compaction.protocol import CompactionEnv, CompactionRequest, CompactionResult

__all__ = ["NoCompaction", "raw", "truncate"]


@dataclass(frozen=True)
class NoCompaction:
    name: str = field(default="raw")

    async def compact(self, request: CompactionRequest, env: CompactionEnv) -> CompactionResult:
        if request.trigger == "auto":
            return CompactionResult(list(request.messages))
        reason = f"strategy '{self.name}' never compacts history (only the per-result budget applies)"
        return CompactionResult(list(request.messages), failure=reason)


def raw() -> NoCompaction:
    """`raw`: never compacts (the benchmark also turns the per-result budget off)."""
    return NoCompaction("raw")


def truncate() -> NoCompaction:
    """`truncate`: never compacts; only the loop's per-result budget applies."""
    return NoCompaction("truncate")
