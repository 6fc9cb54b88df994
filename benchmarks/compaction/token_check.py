"""How far the harness's estimator is from real token counts, per trace and per family.

For every recorded call whose usage the file keeps, the context it was sent (system prompt
+ the messages before it, as loaded) is counted by the estimator (`agents/tokens.py`) and by
the Tekken tokenizer, and set beside the input tokens the recorded model's API billed.
The recorded framework rendered that context its own way (chat text, its tool schemas,
moatless re-renders whole files each step), so "recorded" measures the estimator on our
rendering against the provider's count of its rendering: an honest bound, not an
identity. Strategy-independent: computed once per trace.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from pydantic import BaseModel

from agents.tokens import CharRatioEstimator
from benchmarks.traces import Trace

from .tokenizers import TekkenCounter, context_estimates

__all__ = ["FamilyTokens", "TraceTokens", "family_of", "family_tokens", "trace_tokens"]


def family_of(trace: Trace) -> str:
    return f"{trace.source} · {trace.model or 'unknown model'}"


class TraceTokens(BaseModel):
    trace: str
    family: str
    calls: int  # calls with recorded usage
    recorded: int = 0
    recorded_cached: int = 0  # of `recorded`, what the provider served from its cache
    estimate: int = 0  # over the calls with usage
    tekken: int | None = None  # over the calls with usage
    estimate_all: int = 0  # every call, usage or not
    tekken_all: int | None = None


def trace_tokens(label: str, trace: Trace) -> TraceTokens:
    estimates = context_estimates(trace, CharRatioEstimator())
    try:
        tekken = context_estimates(trace, TekkenCounter())
    except Exception:  # the tokenizer is optional for this check; the figure is then left out
        tekken = None
    with_usage = [k for k, c in enumerate(trace.calls) if c.input_tokens]
    return TraceTokens(
        trace=label,
        family=family_of(trace),
        calls=len(with_usage),
        recorded=sum(trace.calls[k].input_tokens or 0 for k in with_usage),
        recorded_cached=sum(trace.calls[k].cached_tokens or 0 for k in with_usage),
        estimate=sum(estimates[k] for k in with_usage),
        tekken=None if tekken is None else sum(tekken[k] for k in with_usage),
        estimate_all=sum(estimates),
        tekken_all=None if tekken is None else sum(tekken),
    )


class FamilyTokens(BaseModel):
    """Pooled over a family's traces: ratio = sum / sum (long traces weigh more)."""

    family: str
    traces: int
    calls: int
    estimate_over_recorded: float | None
    tekken_over_recorded: float | None
    estimate_over_tekken: float | None
    recorded_cached_share: float | None = None  # cached ÷ input tokens, as the provider billed them


def _ratio(a: float, b: float) -> float | None:
    return a / b if b else None


def family_tokens(rows: Sequence[TraceTokens]) -> list[FamilyTokens]:
    groups: dict[str, list[TraceTokens]] = defaultdict(list)
    for row in rows:
        groups[row.family].append(row)
    out = []
    for family, members in sorted(groups.items()):
        used = [m for m in members if m.calls]
        tekken_used = [m for m in used if m.tekken is not None]
        tekken_all = [m for m in members if m.tekken_all is not None]
        out.append(
            FamilyTokens(
                family=family,
                traces=len(members),
                calls=sum(m.calls for m in used),
                estimate_over_recorded=_ratio(sum(m.estimate for m in used), sum(m.recorded for m in used)),
                tekken_over_recorded=_ratio(
                    sum(m.tekken or 0 for m in tekken_used), sum(m.recorded for m in tekken_used)
                ),
                estimate_over_tekken=_ratio(
                    sum(m.estimate_all for m in tekken_all), sum(m.tekken_all or 0 for m in tekken_all)
                ),
                recorded_cached_share=_ratio(sum(m.recorded_cached for m in used), sum(m.recorded for m in used)),
            )
        )
    return out
