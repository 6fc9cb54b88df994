"""What the figures draw, taken out of the results document as plain values.

The figure functions take these records, never the document, so a figure can be built
from a saved results.json or from numbers made up in a test, and a later figure (a curve
per strategy family) reads the same records. Nothing is recomputed: the intervals are the
ones the benchmark's bootstrap wrote (`stats.py`), the limits those the replay measured.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from agents.settings import CompactSettings
from benchmarks.replay import MAX_OUTPUT_TOKENS

__all__ = [
    "Estimate",
    "RunFacts",
    "StrategyPoint",
    "StrategyTokens",
    "TokenSeries",
    "pareto_points",
    "run_facts",
    "token_series",
]

CostKind = Literal["median", "pooled"]


@dataclass(frozen=True)
class Estimate:
    """A value with its 95% interval; lo/hi are None where the benchmark computes none
    (the pooled ratio is a single sum ÷ sum)."""

    value: float
    lo: float | None = None
    hi: float | None = None

    @classmethod
    def of(cls, raw: dict | float) -> Estimate:
        if isinstance(raw, dict):
            return cls(raw["value"], raw["lo"], raw["hi"])
        return cls(float(raw))


@dataclass(frozen=True)
class StrategyPoint:
    """One strategy on the cost–recall plane. `number` is its position in the results'
    summary (1-based), the same in every panel and figure."""

    number: int
    strategy: str
    cost: Estimate
    recall: Estimate
    infeasible: bool


@dataclass(frozen=True)
class RunFacts:
    """The settings a reader needs to interpret a figure of this run."""

    window: int
    limit: int  # window − output reserve: a call above it cannot be answered
    budget: int  # the compact budget the harness compacts to
    tokenizer: str
    pricing_model: str
    cache_ttl_s: float
    traces: int
    clusters: int
    cluster: str
    resamples: int
    synthetic: bool

    def caption(self) -> str:
        data = " · SYNTHETIC data" if self.synthetic else ""
        return (
            f"window {self.window:,} tokens · tokenizer: {self.tokenizer} · pricing: {self.pricing_model}, "
            f"cache TTL {self.cache_ttl_s:,.0f} s · {self.traces} traces in {self.clusters} {self.cluster} "
            f"clusters{data}"
        )


@dataclass(frozen=True)
class StrategyTokens:
    """Input tokens per call of one strategy: the mean over the traces that reached each
    call, how many did, and the longest trace's own series (None if its run failed)."""

    number: int
    strategy: str
    mean: list[float]
    reached: list[int]
    longest: list[int] | None
    infeasible_calls: int
    traces_infeasible: int


@dataclass(frozen=True)
class TokenSeries:
    longest_trace: str | None
    longest_calls: int
    strategies: list[StrategyTokens]


def run_facts(doc: dict[str, Any]) -> RunFacts:
    settings = doc["settings"]
    window = settings["context_window"]
    limits = {r["context_limit"] for r in doc["runs"] if not r["error"] and r.get("context_limit")}
    # The limit the replays measured feasibility against (none if every replay failed).
    limit = limits.pop() if len(limits) == 1 else window - MAX_OUTPUT_TOKENS
    cluster = settings.get("cluster", "instance")
    key = {"instance": "task_id", "framework": "source"}.get(cluster)
    clusters = len({t[key] for t in doc["traces"]}) if key else len(doc["traces"])
    return RunFacts(
        window=window,
        limit=limit,
        budget=int(limit * CompactSettings().ratio),
        tokenizer=settings["tokenizer"],
        pricing_model=settings.get("pricing") or settings["pricing_model"],
        cache_ttl_s=settings["cache"]["ttl_s"],
        traces=len(doc["traces"]),
        clusters=clusters,
        cluster="task" if cluster == "instance" else cluster,
        resamples=settings["resamples"],
        synthetic=bool(doc["synthetic"]),
    )


def pareto_points(doc: dict[str, Any], cost: CostKind) -> list[StrategyPoint]:
    """Every strategy with both a cost ratio and a recall (a strategy whose traces hold no
    tool evidence has no recall and no point)."""
    out = []
    for number, s in enumerate(doc["summary"], start=1):
        ratio = s["vs_raw"]["cost_usd"] if cost == "median" else s["pooled_vs_raw"]["cost_usd"]
        recall = s["tool_evidence_recall"]
        if ratio is None or recall is None:
            continue
        out.append(
            StrategyPoint(number, s["strategy"], Estimate.of(ratio), Estimate.of(recall), bool(s["exceeds_window"]))
        )
    return out


def _mean_per_call(series: Sequence[Sequence[int]]) -> tuple[list[float], list[int]]:
    steps = max((len(s) for s in series), default=0)
    reached = [sum(1 for s in series if len(s) > k) for k in range(steps)]
    mean = [sum(s[k] for s in series if len(s) > k) / reached[k] for k in range(steps)]
    return mean, reached


def token_series(doc: dict[str, Any]) -> TokenSeries:
    """One record per strategy with at least one run that did not fail, in summary order.
    The longest trace is the one with the most calls (ties: the first label)."""
    runs = [r for r in doc["runs"] if not r["error"]]
    by_strategy: dict[str, list[dict]] = defaultdict(list)
    for r in runs:
        by_strategy[r["strategy"]].append(r)
    longest = min(runs, key=lambda r: (-r["calls"], r["trace"]))["trace"] if runs else None
    out = []
    for number, s in enumerate(doc["summary"], start=1):
        mine = by_strategy.get(s["strategy"])
        if not mine:
            continue
        mean, reached = _mean_per_call([r["tokens_per_call"] for r in mine])
        own = next((r["tokens_per_call"] for r in mine if r["trace"] == longest), None)
        out.append(
            StrategyTokens(number, s["strategy"], mean, reached, own, s["infeasible_calls"], s["traces_infeasible"])
        )
    calls = max((r["calls"] for r in runs), default=0)
    return TokenSeries(longest, calls, out)
