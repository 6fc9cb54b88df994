"""Measure one replay (trace x strategy): tokens, cache-aware cost, summarizer share,
compactions, grounding and recoverable recall, oracle ratio (definitions: package docstring)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from pydantic import BaseModel, Field

from agents.messages import Message
from agents.ports import ModelRequest
from agents.tokens import CharRatioEstimator, TokenCounter, estimate_prefix_tokens
from benchmarks.replay import ReplayResult

from .cache_cost import SummarizerCall, request_costs, summarizer_cost_usd
from .evidence import TraceEvidence, block_text, contains_item

__all__ = ["RunMetrics", "WorkingSetView", "measure_replay"]


class RunMetrics(BaseModel):
    """One trace under one strategy. Recalls are None when no call needed evidence."""

    trace: str
    strategy: str
    calls: int = 0
    tokens_per_call: list[int] = Field(default_factory=list)
    cumulative_tokens: int = 0
    peak_tokens: int = 0
    cached_tokens: int = 0
    main_cost_usd: float = 0.0
    summarizer_calls: int = 0
    summarizer_input_tokens: int = 0
    summarizer_output_tokens: int = 0
    summarizer_cost_usd: float = 0.0
    cost_usd: float = 0.0
    summarizer_share: float = 0.0
    compactions: dict[str, int] = Field(default_factory=dict)
    compaction_failures: int = 0
    needed_items: int = 0
    visible_items: int = 0
    recoverable_items: int = 0
    grounding_recall: float | None = None
    recoverable_recall: float | None = None
    oracle_tokens: int = 0
    oracle_ratio: float | None = None
    seconds: float = 0.0
    error: str | None = None


class WorkingSetView:
    """What one compiled request shows: all its text (system + every block) and the tool
    ids it keeps or names. Per-message work is cached by message identity, since
    consecutive requests share most of their messages."""

    def __init__(self, tool_ids: Sequence[str]):
        self._tool_ids = list(dict.fromkeys(tool_ids))
        self._per_message: dict[int, tuple[Message, str, frozenset[str]]] = {}

    def _message(self, message: Message) -> tuple[str, frozenset[str]]:
        cached = self._per_message.get(id(message))
        if cached is None or cached[0] is not message:
            text = "\n".join(block_text(b) for b in message.content)
            ids = {getattr(b, "id", None) or getattr(b, "tool_use_id", None) for b in message.content}
            ids |= {t for t in self._tool_ids if t in text and contains_item(text, t)}
            cached = (message, text, frozenset(i for i in ids if i))
            self._per_message[id(message)] = cached
        return cached[1], cached[2]

    def show(self, request: ModelRequest) -> tuple[str, frozenset[str]]:
        parts, ids = [request.system], set()
        for message in request.messages:
            text, shown = self._message(message)
            parts.append(text)
            ids |= shown
        return "\n".join(parts), frozenset(ids)


def _count_compactions(replay: ReplayResult) -> tuple[dict[str, int], int]:
    kinds = Counter(e.kind for e in replay.compactions if e.applied)
    failures = sum(1 for e in replay.compactions if e.failed)
    return dict(sorted(kinds.items())), failures


def measure_replay(
    replay: ReplayResult,
    evidence: TraceEvidence,
    *,
    trace_label: str,
    pricing_model: str,
    summarizer_calls: Sequence[SummarizerCall] = (),
    counter: TokenCounter | None = None,
) -> RunMetrics:
    """Only calls the recorded agent made are measured: a replay's extra call after the
    recording ends (answered None) is left out."""
    counter = counter or CharRatioEstimator()
    costs = request_costs(replay.requests, counter, pricing_model)
    view = WorkingSetView([u.id for u in replay.trace.tool_uses])
    measured = [(k, i) for k, i in enumerate(replay.answered) if i is not None]
    tokens, needed, visible, recoverable, oracle = [], 0, 0, 0, 0
    for k, message_index in measured:
        request = replay.requests[k]
        tokens.append(replay.estimated_tokens[k] if k < len(replay.estimated_tokens) else costs[k].tokens)
        needs = evidence.calls.get(message_index)
        if needs is None:
            continue
        oracle += estimate_prefix_tokens(counter, system=request.system, tools=request.tools) + needs.oracle_tokens
        if not needs.items:
            continue
        text, ids = view.show(request)
        for item, producers in zip(needs.items, needs.producers, strict=True):
            needed += 1
            if contains_item(text, item):
                visible += 1
                recoverable += 1
            elif any(p in ids for p in producers):
                recoverable += 1
    main_cost = sum(costs[k].cost_usd for k, _ in measured)
    summ_cost = sum(summarizer_cost_usd(c, pricing_model) for c in summarizer_calls)
    kinds, failures = _count_compactions(replay)
    total_cost = main_cost + summ_cost
    cumulative = sum(tokens)
    return RunMetrics(
        trace=trace_label,
        strategy=replay.strategy,
        calls=len(measured),
        tokens_per_call=tokens,
        cumulative_tokens=cumulative,
        peak_tokens=max(tokens, default=0),
        cached_tokens=sum(costs[k].cached_tokens for k, _ in measured),
        main_cost_usd=main_cost,
        summarizer_calls=len(summarizer_calls),
        summarizer_input_tokens=sum(c.input_tokens for c in summarizer_calls),
        summarizer_output_tokens=sum(c.output_tokens for c in summarizer_calls),
        summarizer_cost_usd=summ_cost,
        cost_usd=total_cost,
        summarizer_share=summ_cost / total_cost if total_cost else 0.0,
        compactions=kinds,
        compaction_failures=failures,
        needed_items=needed,
        visible_items=visible,
        recoverable_items=recoverable,
        grounding_recall=visible / needed if needed else None,
        recoverable_recall=recoverable / needed if needed else None,
        oracle_tokens=oracle,
        oracle_ratio=cumulative / oracle if oracle else None,
    )
