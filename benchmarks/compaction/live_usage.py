"""What each arm of a live experiment used: the provider's recorded usage billed at list
prices, turns, and how often the model read back what compaction removed (Recall).

Billing reads each run's usage as the provider reported it (eval result rows: uncached
input, cache reads, cache writes, output, summed over the run's model calls) and prices it
with `pricing.py`: the row of the run's own model (`--pricing per-trace`) or of a fixed
model (`--pricing NAME`); a model no table prices (a scripted or unknown one) is priced as
`--pricing-model` and says so in `priced_as`. Cache writes cost 1.25x the input price
where the provider bills them (Anthropic, the harness's 5-minute breakpoints); providers
with automatic caching report no writes. The harness's own `cost_usd` (the row's, at
agents.providers._catalog prices, unpriced for unknown models) is kept beside it.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from agents.compaction import CACHE_WRITE_MULTIPLIER
from cluster.eval import ResultRow

from .pricing import PER_TRACE, model_price, pricing_for

__all__ = ["ArmUsage", "Billed", "arm_usage", "billed"]


class Billed(BaseModel):
    usd: float
    input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    output_tokens: int
    priced_as: str  # the price row's model
    model_priced: bool  # False: per-trace pricing found no row for the run's model; priced as the fixed one


def billed(row: ResultRow, pricing: str, fixed: str) -> Billed:
    price = pricing_for(pricing, row.model or None, fixed)
    p = price.price
    write = p.input * CACHE_WRITE_MULTIPLIER if p.kind == "explicit" else p.input
    usd = (
        row.input_tokens * p.input
        + row.cache_read_tokens * p.cached_input
        + row.cache_creation_tokens * write
        + row.output_tokens * p.output
    ) / 1_000_000
    return Billed(
        usd=round(usd, 6),
        input_tokens=row.input_tokens,
        cache_read_tokens=row.cache_read_tokens,
        cache_write_tokens=row.cache_creation_tokens,
        output_tokens=row.output_tokens,
        priced_as=p.name,
        model_priced=pricing != PER_TRACE or model_price(row.model or None) is not None,
    )


class ArmUsage(BaseModel):
    runs: int
    billed_usd: float
    billed_usd_per_run: float | None
    input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    output_tokens: int
    priced_as: list[str]
    runs_priced_as_fixed: int  # runs of a model no table prices (scripted, unknown): priced as --pricing-model
    recorded_cost_usd: float  # the rows' own cost (agents.providers._catalog prices; unpriced calls add nothing)
    unpriced_calls: int
    turns: int
    turns_per_run: float | None
    tool_calls: int
    recall_calls: int
    runs_using_recall: int
    compactions: int


def arm_usage(rows: Sequence[ResultRow], pricing: str, fixed: str) -> ArmUsage:
    bills = [billed(r, pricing, fixed) for r in rows]
    n = len(rows)
    total = round(sum(b.usd for b in bills), 6)
    turns = sum(r.turns for r in rows)
    return ArmUsage(
        runs=n,
        billed_usd=total,
        billed_usd_per_run=round(total / n, 6) if n else None,
        input_tokens=sum(b.input_tokens for b in bills),
        cache_read_tokens=sum(b.cache_read_tokens for b in bills),
        cache_write_tokens=sum(b.cache_write_tokens for b in bills),
        output_tokens=sum(b.output_tokens for b in bills),
        priced_as=sorted({b.priced_as for b in bills}),
        runs_priced_as_fixed=sum(1 for b in bills if not b.model_priced),
        recorded_cost_usd=round(sum(r.cost_usd for r in rows), 6),
        unpriced_calls=sum(r.unpriced_calls for r in rows),
        turns=turns,
        turns_per_run=turns / n if n else None,
        tool_calls=sum(r.tool_calls for r in rows),
        recall_calls=sum(r.recall_calls for r in rows),
        runs_using_recall=sum(1 for r in rows if r.recall_calls),
        compactions=sum(r.compactions for r in rows),
    )
