"""Paired statistics across traces: per-trace ratios and differences against a reference
strategy, their median (ratios) or mean (recalls), and a seeded percentile bootstrap that
resamples clusters of traces — by default the task instance, so runs of the same task by
different frameworks or models are drawn together (`--cluster instance|framework|run`).

Deterministic: the generator of each statistic is seeded from `seed` and a CRC of its
label, so the same inputs give the same intervals whatever order they are computed in.
"""

from __future__ import annotations

import zlib
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel

from .metrics import RunMetrics
from .significance import TESTED_METRICS, PairedTest, holm, paired_test

__all__ = [
    "FrameworkRow",
    "Interval",
    "StrategySummary",
    "bootstrap_interval",
    "framework_breakdown",
    "paired_differences",
    "paired_ratios",
    "paired_values",
    "pooled_ratio",
    "summarize_strategies",
]

DEFAULT_RESAMPLES = 2_000
DEFAULT_CONFIDENCE = 0.95
RATIO_METRICS = ("cumulative_tokens", "cost_usd", "cost_lcp_usd", "peak_tokens")
POOLED_METRICS = ("cumulative_tokens", "cost_usd", "cost_lcp_usd")
RECALL_METRICS = ("tool_evidence_recall", "tool_evidence_recoverable_recall", "grounding_recall", "recoverable_recall")


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
    values: Sequence[float | None],
    *,
    statistic: Literal["median", "mean"] = "median",
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
    label: str = "",
    clusters: Sequence[str] | None = None,
) -> Interval | None:
    """Percentile bootstrap of the median (or mean) of `values`; None for no values.

    With `clusters` (one id per value), whole clusters are drawn with replacement and the
    statistic is taken over all values of the drawn clusters; without, each value is its
    own cluster."""
    keep = [i for i, v in enumerate(values) if v is not None]
    data = np.asarray([values[i] for i in keep], dtype=float)
    if data.size == 0:
        return None
    reduce: Callable = np.median if statistic == "median" else np.mean
    point = float(reduce(data))
    if data.size == 1 or resamples <= 0:
        return Interval(value=point, lo=point, hi=point, n=int(data.size), statistic=statistic)
    rng = np.random.default_rng(_seed_for(seed, label))
    if clusters is None:
        stats = reduce(data[rng.integers(0, data.size, size=(resamples, data.size))], axis=1)
    else:
        groups: dict[str, list[int]] = defaultdict(list)
        for position, i in enumerate(keep):
            groups[clusters[i]].append(position)
        members = [np.asarray(g) for g in groups.values()]
        picks = rng.integers(0, len(members), size=(resamples, len(members)))
        stats = np.asarray([reduce(data[np.concatenate([members[j] for j in row])]) for row in picks])
    tail = (1 - confidence) / 2 * 100
    lo, hi = np.percentile(stats, [tail, 100 - tail])
    return Interval(value=point, lo=float(lo), hi=float(hi), n=int(data.size), statistic=statistic)


def _paired(runs: Sequence[RunMetrics], strategy: str, reference: str, metric: str) -> list[tuple[str, float, float]]:
    """(trace, metric(strategy), metric(reference)) for each trace both ran on without error."""
    by_key = {(r.trace, r.strategy): r for r in runs if r.error is None}
    out = []
    for (trace, name), run in sorted(by_key.items()):
        ref = by_key.get((trace, reference))
        if name != strategy or ref is None:
            continue
        a, b = getattr(run, metric), getattr(ref, metric)
        if a is not None and b is not None:
            out.append((trace, float(a), float(b)))
    return out


def paired_values(runs: Sequence[RunMetrics], strategy: str, reference: str, metric: str) -> list[tuple[float, float]]:
    return [(a, b) for _, a, b in _paired(runs, strategy, reference, metric)]


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


class StrategySummary(BaseModel):
    strategy: str
    traces: int
    failed: int
    vs_raw: dict[str, Interval | None]
    vs_baseline: dict[str, Interval | None]
    pooled_vs_raw: dict[str, float | None]
    pooled_vs_baseline: dict[str, float | None]
    peak_tokens: Interval | None
    tool_evidence_recall: Interval | None
    tool_evidence_recoverable_recall: Interval | None
    grounding_recall: Interval | None
    recoverable_recall: Interval | None
    tool_evidence_recall_minus_baseline: Interval | None
    grounding_recall_minus_baseline: Interval | None
    oracle_ratio: Interval | None
    tests: dict[str, PairedTest] = {}
    infeasible_calls: int = 0
    traces_infeasible: int = 0
    summarizer_calls: int
    summarizer_share: float
    compactions: dict[str, int]

    @property
    def exceeds_window(self) -> bool:
        return self.infeasible_calls > 0


class _Booter:
    def __init__(self, strategy: str, resamples: int, seed: int, clusters: Mapping[str, str] | None):
        self.strategy, self.resamples, self.seed, self.clusters = strategy, resamples, seed, clusters

    def __call__(self, keyed: Sequence[tuple[str, float | None]], label: str, statistic="median") -> Interval | None:
        ids = None if self.clusters is None else [self.clusters.get(t, t) for t, _ in keyed]
        return bootstrap_interval(
            [v for _, v in keyed],
            statistic=statistic,
            resamples=self.resamples,
            seed=self.seed,
            label=f"{self.strategy}/{label}",
            clusters=ids,
        )


def _ratios(runs, strategy, reference, metric) -> list[tuple[str, float]]:
    return [(t, a / b) for t, a, b in _paired(runs, strategy, reference, metric) if b > 0]


def _diffs(runs, strategy, reference, metric) -> list[tuple[str, float]]:
    return [(t, a - b) for t, a, b in _paired(runs, strategy, reference, metric)]


def _summary(runs: Sequence[RunMetrics], strategy: str, baseline: str, boot: _Booter) -> StrategySummary:
    ok = [r for r in runs if r.strategy == strategy and r.error is None]
    failed = sum(1 for r in runs if r.strategy == strategy and r.error is not None)
    compactions: dict[str, int] = {}
    for r in ok:
        for kind, n in r.compactions.items():
            compactions[kind] = compactions.get(kind, 0) + n
    total_cost = sum(r.cost_usd for r in ok)
    recalls = {m: boot([(r.trace, getattr(r, m)) for r in ok], m, "mean") for m in RECALL_METRICS}
    return StrategySummary(
        strategy=strategy,
        traces=len(ok),
        failed=failed,
        vs_raw={m: boot(_ratios(runs, strategy, "raw", m), f"raw/{m}") for m in RATIO_METRICS},
        vs_baseline={m: boot(_ratios(runs, strategy, baseline, m), f"base/{m}") for m in RATIO_METRICS},
        pooled_vs_raw={m: pooled_ratio(runs, strategy, "raw", m) for m in POOLED_METRICS},
        pooled_vs_baseline={m: pooled_ratio(runs, strategy, baseline, m) for m in POOLED_METRICS},
        peak_tokens=boot([(r.trace, r.peak_tokens) for r in ok], "peak"),
        **recalls,
        tool_evidence_recall_minus_baseline=boot(
            _diffs(runs, strategy, baseline, "tool_evidence_recall"), "tool-evidence-diff", "mean"
        ),
        grounding_recall_minus_baseline=boot(
            _diffs(runs, strategy, baseline, "grounding_recall"), "grounding-diff", "mean"
        ),
        oracle_ratio=boot([(r.trace, r.oracle_ratio) for r in ok], "oracle"),
        tests={m: paired_test(m, paired_values(runs, strategy, baseline, m)) for m in TESTED_METRICS},
        infeasible_calls=sum(r.infeasible_calls for r in ok),
        traces_infeasible=sum(1 for r in ok if r.infeasible_calls),
        summarizer_calls=sum(r.summarizer_calls for r in ok),
        summarizer_share=sum(r.summarizer_cost_usd for r in ok) / total_cost if total_cost else 0.0,
        compactions=compactions,
    )


def summarize_strategies(
    runs: Sequence[RunMetrics],
    strategies: Sequence[str],
    *,
    baseline: str,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    clusters: Mapping[str, str] | None = None,
) -> list[StrategySummary]:
    """One summary per strategy; the baseline's own tests are against itself (p = 1) and
    stay out of the Holm families."""
    summaries = [_summary(runs, s, baseline, _Booter(s, resamples, seed, clusters)) for s in strategies]
    for metric in TESTED_METRICS:
        family = [s for s in summaries if s.strategy != baseline]
        for s, p in zip(family, holm([s.tests[metric].p_value for s in family]), strict=True):
            s.tests[metric].p_holm = p
    return summaries


class FrameworkRow(BaseModel):
    """One strategy on the traces of one framework (trace source)."""

    framework: str
    strategy: str
    traces: int
    cost_vs_raw_median: float | None
    cost_vs_raw_pooled: float | None
    tool_evidence_recall_mean: float | None
    infeasible_calls: int


def framework_breakdown(
    runs: Sequence[RunMetrics], strategies: Sequence[str], frameworks: Mapping[str, str]
) -> list[FrameworkRow]:
    rows = []
    for framework in sorted(set(frameworks.values())):
        mine = [r for r in runs if frameworks.get(r.trace) == framework]
        for s in strategies:
            ok = [r for r in mine if r.strategy == s and r.error is None]
            ratios = paired_ratios(mine, s, "raw", "cost_usd")
            recalls = [r.tool_evidence_recall for r in ok if r.tool_evidence_recall is not None]
            rows.append(
                FrameworkRow(
                    framework=framework,
                    strategy=s,
                    traces=len(ok),
                    cost_vs_raw_median=float(np.median(ratios)) if ratios else None,
                    cost_vs_raw_pooled=pooled_ratio(mine, s, "raw", "cost_usd"),
                    tool_evidence_recall_mean=float(np.mean(recalls)) if recalls else None,
                    infeasible_calls=sum(r.infeasible_calls for r in ok),
                )
            )
    return rows
