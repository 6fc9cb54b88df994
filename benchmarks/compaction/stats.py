"""Paired statistics across traces: per-trace ratios against a reference strategy, their
median, and a seeded percentile-bootstrap confidence interval (resampling traces).

Deterministic: the generator of each statistic is seeded from `seed` and a CRC of its
label, so the same inputs give the same intervals whatever order they are computed in.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel

from .metrics import RunMetrics

__all__ = [
    "Interval",
    "StrategySummary",
    "bootstrap_interval",
    "paired_differences",
    "paired_ratios",
    "paired_values",
    "pooled_ratio",
    "summarize_strategies",
]

DEFAULT_RESAMPLES = 2_000
DEFAULT_CONFIDENCE = 0.95


class Interval(BaseModel):
    """A statistic over `n` traces with its bootstrap interval [lo, hi]."""

    value: float
    lo: float
    hi: float
    n: int
    statistic: Literal["median", "mean"] = "median"


def _seed_for(seed: int, label: str) -> int:
    return (seed * 1_000_003 + zlib.crc32(label.encode())) % 2**32


def bootstrap_interval(
    values: Sequence[float],
    *,
    statistic: Literal["median", "mean"] = "median",
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
    label: str = "",
) -> Interval | None:
    """Percentile bootstrap of the median (or mean) of `values`; None for no values."""
    data = np.asarray([v for v in values if v is not None], dtype=float)
    if data.size == 0:
        return None
    reduce = np.median if statistic == "median" else np.mean
    point = float(reduce(data))
    if data.size == 1 or resamples <= 0:
        return Interval(value=point, lo=point, hi=point, n=int(data.size), statistic=statistic)
    rng = np.random.default_rng(_seed_for(seed, label))
    picks = rng.integers(0, data.size, size=(resamples, data.size))
    stats = reduce(data[picks], axis=1)
    tail = (1 - confidence) / 2 * 100
    lo, hi = np.percentile(stats, [tail, 100 - tail])
    return Interval(value=point, lo=float(lo), hi=float(hi), n=int(data.size), statistic=statistic)


def paired_values(runs: Sequence[RunMetrics], strategy: str, reference: str, metric: str) -> list[tuple[float, float]]:
    """(metric(strategy), metric(reference)) for each trace both ran on without error, by trace."""
    by_key = {(r.trace, r.strategy): r for r in runs if r.error is None}
    pairs = []
    for (trace, name), run in sorted(by_key.items()):
        ref = by_key.get((trace, reference))
        if name != strategy or ref is None:
            continue
        a, b = getattr(run, metric), getattr(ref, metric)
        if a is not None and b is not None:
            pairs.append((float(a), float(b)))
    return pairs


def paired_ratios(runs: Sequence[RunMetrics], strategy: str, reference: str, metric: str) -> list[float]:
    """metric(strategy) / metric(reference) per trace both ran on (reference > 0)."""
    return [a / b for a, b in paired_values(runs, strategy, reference, metric) if b > 0]


def pooled_ratio(runs: Sequence[RunMetrics], strategy: str, reference: str, metric: str) -> float | None:
    """sum of metric(strategy) / sum of metric(reference) over the traces both ran on:
    the ratio for the whole corpus, where long traces weigh more than in the median."""
    pairs = paired_values(runs, strategy, reference, metric)
    total = sum(b for _, b in pairs)
    return sum(a for a, _ in pairs) / total if total else None


def paired_differences(runs: Sequence[RunMetrics], strategy: str, reference: str, metric: str) -> list[float]:
    return [a - b for a, b in paired_values(runs, strategy, reference, metric)]


RATIO_METRICS = ("cumulative_tokens", "cost_usd", "peak_tokens")
RECALL_METRICS = ("grounding_recall", "recoverable_recall")


class StrategySummary(BaseModel):
    strategy: str
    traces: int
    failed: int
    vs_raw: dict[str, Interval | None]
    vs_baseline: dict[str, Interval | None]
    pooled_vs_raw: dict[str, float | None]
    peak_tokens: Interval | None
    grounding_recall: Interval | None
    recoverable_recall: Interval | None
    grounding_recall_minus_baseline: Interval | None
    oracle_ratio: Interval | None
    summarizer_calls: int
    summarizer_share: float
    compactions: dict[str, int]


def _summary(runs: Sequence[RunMetrics], strategy: str, baseline: str, resamples: int, seed: int) -> StrategySummary:
    mine = [r for r in runs if r.strategy == strategy]
    ok = [r for r in mine if r.error is None]

    def boot(values, label, statistic="median"):
        return bootstrap_interval(values, statistic=statistic, resamples=resamples, seed=seed, label=f"{strategy}/{label}")

    compactions: dict[str, int] = {}
    for r in ok:
        for kind, n in r.compactions.items():
            compactions[kind] = compactions.get(kind, 0) + n
    total_cost = sum(r.cost_usd for r in ok)
    return StrategySummary(
        strategy=strategy,
        traces=len(ok),
        failed=len(mine) - len(ok),
        vs_raw={m: boot(paired_ratios(runs, strategy, "raw", m), f"raw/{m}") for m in RATIO_METRICS},
        vs_baseline={m: boot(paired_ratios(runs, strategy, baseline, m), f"base/{m}") for m in RATIO_METRICS},
        pooled_vs_raw={m: pooled_ratio(runs, strategy, "raw", m) for m in ("cumulative_tokens", "cost_usd")},
        peak_tokens=boot([r.peak_tokens for r in ok], "peak"),
        grounding_recall=boot([r.grounding_recall for r in ok], "grounding", "mean"),
        recoverable_recall=boot([r.recoverable_recall for r in ok], "recoverable", "mean"),
        grounding_recall_minus_baseline=boot(
            paired_differences(runs, strategy, baseline, "grounding_recall"), "grounding-diff", "mean"
        ),
        oracle_ratio=boot([r.oracle_ratio for r in ok], "oracle"),
        summarizer_calls=sum(r.summarizer_calls for r in ok),
        summarizer_share=sum(r.summarizer_cost_usd for r in ok) / total_cost if total_cost else 0.0,
        compactions=compactions,
    )


def summarize_strategies(
    runs: Sequence[RunMetrics], strategies: Sequence[str], *, baseline: str,
    resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
) -> list[StrategySummary]:
    return [_summary(runs, s, baseline, resamples, seed) for s in strategies]
