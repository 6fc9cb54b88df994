"""Paired tests of each strategy against the baseline, corrected for multiple comparisons.

For a metric and a strategy, the pairs are the traces both ran on without error. Costs and
tokens are compared on the log of the per-trace ratio (so a long trace and a short one
weigh alike and the test is of "cheaper on most traces"); recalls on the per-trace
difference. The test is the Wilcoxon signed-rank test (two-sided; zero differences split
between the ranks, `zero_method="zsplit"`; scipy's exact distribution for small samples
without ties, the normal approximation otherwise). All differences zero: p = 1. Fewer than
`MIN_PAIRS` pairs: no test. The p-values of one metric across the strategies form one
family, adjusted with Holm's step-down method (family-wise error rate).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel

__all__ = ["MIN_PAIRS", "TESTED_METRICS", "PairedTest", "holm", "paired_test"]

MIN_PAIRS = 5
# metric -> how a pair is compared
TESTED_METRICS: dict[str, str] = {
    "cost_usd": "log-ratio",
    "cumulative_tokens": "log-ratio",
    "tool_evidence_recall": "difference",
    "grounding_recall": "difference",
}


class PairedTest(BaseModel):
    metric: str
    comparison: str  # "log-ratio" | "difference"
    n: int
    median_effect: float  # median of the log ratios (as a ratio: exp) or of the differences
    statistic: float | None
    p_value: float | None
    p_holm: float | None = None


def _effects(pairs: Sequence[tuple[float, float]], comparison: str) -> list[float]:
    if comparison == "log-ratio":
        return [math.log(a / b) for a, b in pairs if a > 0 and b > 0]
    return [a - b for a, b in pairs]


def paired_test(metric: str, pairs: Sequence[tuple[float, float]]) -> PairedTest:
    """Wilcoxon signed-rank on the pairs (strategy value, baseline value)."""
    comparison = TESTED_METRICS[metric]
    effects = _effects(pairs, comparison)
    n = len(effects)
    if n == 0:
        return PairedTest(
            metric=metric, comparison=comparison, n=0, median_effect=math.nan, statistic=None, p_value=None
        )
    ordered = sorted(effects)
    mid = (ordered[(n - 1) // 2] + ordered[n // 2]) / 2
    median = math.exp(mid) if comparison == "log-ratio" else mid
    if n < MIN_PAIRS:
        return PairedTest(metric=metric, comparison=comparison, n=n, median_effect=median, statistic=None, p_value=None)
    if all(abs(e) < 1e-12 for e in effects):
        return PairedTest(metric=metric, comparison=comparison, n=n, median_effect=median, statistic=0.0, p_value=1.0)
    from scipy.stats import wilcoxon

    result = wilcoxon(effects, zero_method="zsplit", alternative="two-sided")
    return PairedTest(
        metric=metric,
        comparison=comparison,
        n=n,
        median_effect=median,
        statistic=float(result.statistic),
        p_value=float(result.pvalue),
    )


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm-adjusted p-values (None stays None): sort ascending, p_(i) x (m - i + 1), made
    monotone, capped at 1."""
    indexed = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(indexed)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(indexed):
        running = max(running, min(1.0, p * (m - rank)))
        adjusted[i] = running
    return adjusted
