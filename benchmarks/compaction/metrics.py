"""Measure one replay (trace x strategy): tokens, feasibility, cost under each pricing (the
provider's cache rule, `costing.py`) and the legacy longest-common-prefix model,
summarizer share, compactions,
tool-evidence recall (with the missed items per call), legacy grounding and recoverable
recall, oracle ratio (definitions: package docstring)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, Field

from agents.messages import Message
from agents.ports import ModelRequest
from agents.tokens import CharRatioEstimator, TokenCounter, estimate_prefix_tokens
from benchmarks.replay import MAX_OUTPUT_TOKENS, ReplayResult

from .cache_cost import SummarizerCall, request_costs, request_tokens, summarizer_cost_usd
from .cache_model import CacheSettings
from .costing import PricedRun, price_replay
from .evidence import CallNeeds, TraceEvidence, block_text, contains_item
from .pricing import Pricing, pricing_for

__all__ = ["MissedItems", "RunMetrics", "WorkingSetView", "measure_replay"]


class MissedItems(BaseModel):
    """Tool evidence the working set of one call did not show."""

    call: int  # 1-based model call
    message_index: int
    items: list[str]


class RunMetrics(BaseModel):
    """One trace under one strategy. Recalls are None when no call needed evidence."""

    trace: str
    strategy: str
    calls: int = 0
    tokens_per_call: list[int] = Field(default_factory=list)
    cumulative_tokens: int = 0
    peak_tokens: int = 0
    context_window: int = 0
    context_limit: int = 0  # window - output reserve
    infeasible_calls: int = 0  # requests over the limit, and the one the harness refused to send
    first_infeasible_call: int | None = None
    refused: str | None = None  # the harness refused a request as over the window: the run ended there
    # the cost under the primary pricing (`--pricing`)
    pricing: str = ""
    priced_as: str = ""
    cache_rule: str = ""
    cached_share: float | None = None  # cache-read ÷ input tokens of the calls
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    plain_input_tokens: int = 0
    output_tokens: int = 0
    main_cost_usd: float = 0.0
    output_cost_usd: float = 0.0
    summarizer_calls: int = 0
    summarizer_input_tokens: int = 0
    summarizer_output_tokens: int = 0
    summarizer_cost_usd: float = 0.0
    cost_usd: float = 0.0
    summarizer_share: float = 0.0
    costs: dict[str, float] = Field(default_factory=dict)  # every pricing computed -> cost
    # the `lcp` cost model (legacy)
    lcp_cached_tokens: int = 0
    cost_lcp_usd: float = 0.0
    compactions: dict[str, int] = Field(default_factory=dict)
    compaction_failures: int = 0
    tool_evidence_items: int = 0
    tool_evidence_visible: int = 0
    tool_evidence_recoverable: int = 0
    tool_evidence_recall: float | None = None
    tool_evidence_recoverable_recall: float | None = None
    missed: list[MissedItems] = Field(default_factory=list)
    needed_items: int = 0
    visible_items: int = 0
    recoverable_items: int = 0
    grounding_recall: float | None = None  # legacy
    recoverable_recall: float | None = None  # legacy
    oracle_tokens: int = 0
    oracle_ratio: float | None = None
    token_scale: float | None = None  # the measuring counter's scale, when scaled
    seconds: float = 0.0
    error: str | None = None

    @property
    def feasible(self) -> bool:
        return self.infeasible_calls == 0


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
        parts, ids = [request.system], set[str]()
        for message in request.messages:
            text, shown = self._message(message)
            parts.append(text)
            ids |= shown
        return "\n".join(parts), frozenset(ids)


@dataclass
class _Recall:
    needed: int = 0
    visible: int = 0
    recoverable: int = 0

    def add(
        self, items: Sequence[str], producers: Sequence[Sequence[str]], text: str, ids: frozenset[str]
    ) -> list[str]:
        missed = []
        for item, holders in zip(items, producers, strict=True):
            self.needed += 1
            if contains_item(text, item):
                self.visible += 1
                self.recoverable += 1
                continue
            missed.append(item)
            if any(p in ids for p in holders):
                self.recoverable += 1
        return missed

    def recall(self) -> float | None:
        return self.visible / self.needed if self.needed else None

    def reachable(self) -> float | None:
        return self.recoverable / self.needed if self.needed else None


def _count_compactions(replay: ReplayResult) -> tuple[dict[str, int], int]:
    kinds = Counter(e.kind for e in replay.compactions if e.applied)
    failures = sum(1 for e in replay.compactions if e.failed)
    return dict(sorted(kinds.items())), failures


def _output_tokens(
    replay: ReplayResult, k: int, message_index: int, counter: TokenCounter, cache: CacheSettings
) -> int:
    recorded = replay.trace.call_record(k).output_tokens
    if cache.output_tokens == "recorded" and recorded is not None:
        return recorded
    return counter.count_message(replay.trace.messages[message_index])


def _evidence(replay: ReplayResult, evidence: TraceEvidence, measured: list[tuple[int, int]], counter: TokenCounter):
    view = WorkingSetView([u.id for u in replay.trace.tool_uses])
    tool, legacy, missed, oracle = _Recall(), _Recall(), [], 0
    for k, message_index in measured:
        request = replay.requests[k]
        needs: CallNeeds | None = evidence.calls.get(message_index)
        if needs is None:
            continue
        oracle += estimate_prefix_tokens(counter, system=request.system, tools=request.tools) + needs.oracle_tokens
        if not needs.items and not needs.tool_items:
            continue
        text, ids = view.show(request)
        lost = tool.add(needs.tool_items, needs.tool_producers, text, ids)
        legacy.add(needs.items, needs.producers, text, ids)
        if lost:
            missed.append(MissedItems(call=k + 1, message_index=message_index, items=lost))
    return tool, legacy, missed, oracle


def measure_replay(
    replay: ReplayResult,
    evidence: TraceEvidence,
    *,
    trace_label: str,
    pricing_model: str,
    summarizer_calls: Sequence[SummarizerCall] = (),
    counter: TokenCounter | None = None,
    cache: CacheSettings | None = None,
    context_window: int | None = None,
    max_output_tokens: int = MAX_OUTPUT_TOKENS,
    token_scale: float | None = None,
    pricings: Sequence[Pricing] = (),
) -> RunMetrics:
    """Only calls the recorded agent made are measured: a replay's extra call after the
    recording ends (answered None) is left out. `pricings`: every pricing to compute, the
    primary first (default: `pricing_model` for every trace)."""
    counter = counter or CharRatioEstimator()
    cache = cache or CacheSettings()
    pricings = list(pricings) or [pricing_for(pricing_model, None, pricing_model)]
    measured = [(k, i) for k, i in enumerate(replay.answered) if i is not None]
    tokens = [request_tokens(replay.requests[k], counter) for k, _ in measured]
    limit = (context_window - max_output_tokens) if context_window else 0
    over = [n for n, t in enumerate(tokens, start=1) if limit and t > limit]
    if replay.refused is not None:  # the run could not go on: that request counts as one over the window
        over.append(len(tokens) + 1)
    outputs = [_output_tokens(replay, k, i, counter, cache) for k, i in measured]
    priced = [price_replay(replay, measured, outputs, summarizer_calls, p, counter, cache) for p in pricings]
    main: PricedRun = priced[0]
    lcp = request_costs(replay.requests, counter, pricing_model)
    lcp_main = sum(lcp[k].cost_usd for k, _ in measured)
    tool, legacy, missed, oracle = _evidence(replay, evidence, measured, counter)
    kinds, failures = _count_compactions(replay)
    cumulative = sum(tokens)
    return RunMetrics(
        trace=trace_label,
        strategy=replay.strategy,
        calls=len(measured),
        tokens_per_call=tokens,
        cumulative_tokens=cumulative,
        peak_tokens=max(tokens, default=0),
        context_window=context_window or 0,
        context_limit=limit,
        infeasible_calls=len(over),
        first_infeasible_call=over[0] if over else None,
        refused=replay.refused,
        pricing=main.pricing,
        priced_as=main.priced_as,
        cache_rule=main.cache_rule,
        cached_share=main.cached_share,
        cache_read_tokens=main.cache_read_tokens,
        cache_write_tokens=main.cache_write_tokens,
        plain_input_tokens=main.plain_input_tokens,
        output_tokens=main.output_tokens,
        main_cost_usd=main.main_cost_usd,
        output_cost_usd=main.output_cost_usd,
        summarizer_calls=len(summarizer_calls),
        summarizer_input_tokens=sum(c.input_tokens for c in summarizer_calls),
        summarizer_output_tokens=sum(c.output_tokens for c in summarizer_calls),
        summarizer_cost_usd=main.summarizer_cost_usd,
        cost_usd=main.cost_usd,
        summarizer_share=main.summarizer_cost_usd / main.cost_usd if main.cost_usd else 0.0,
        costs={p.pricing: p.cost_usd for p in priced},
        lcp_cached_tokens=sum(lcp[k].cached_tokens for k, _ in measured),
        cost_lcp_usd=lcp_main + sum(summarizer_cost_usd(c, pricing_model) for c in summarizer_calls),
        compactions=kinds,
        compaction_failures=failures,
        tool_evidence_items=tool.needed,
        tool_evidence_visible=tool.visible,
        tool_evidence_recoverable=tool.recoverable,
        tool_evidence_recall=tool.recall(),
        tool_evidence_recoverable_recall=tool.reachable(),
        missed=missed,
        needed_items=legacy.needed,
        visible_items=legacy.visible,
        recoverable_items=legacy.recoverable,
        grounding_recall=legacy.recall(),
        recoverable_recall=legacy.reachable(),
        oracle_tokens=oracle,
        oracle_ratio=cumulative / oracle if oracle else None,
        token_scale=token_scale,
    )
