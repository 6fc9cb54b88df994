"""The live experiment's statistics: each arm's solve rate, and the default arm paired
against every other arm on the same (task, repeat).

A run is *solved* when its status is `passed`; every other status of a run that ended
(failed, budget, timeout, error, …) counts as not solved, so an arm that crashes is not
spared its crashes (intention to treat). A (task, repeat) that one of the two arms has no
row for is left out of that pair.

Per pair (default A, other B):
- discordant counts b (A solved, B not) and c (B solved, A not);
- McNemar's test of b against c: the exact two-sided binomial test (b of b + c at 1/2)
  when b + c < `EXACT_BELOW`, else the chi-square statistic with continuity correction
  (|b − c| − 1)² / (b + c) on one degree of freedom; no discordant pair: p = 1;
- the p-values of the pairs form one family, Holm-adjusted;
- the difference in solve rate (A − B) with a percentile bootstrap interval that draws
  whole tasks (all repeats of a task together, under both arms), so repeats of one task
  are not counted as independent evidence;
- non-inferiority of A to B: the interval's lower end above −margin.

Repeats of a task are correlated, and McNemar's test treats pairs as independent. Two
figures do not: the task-clustered interval, and Durkalski's clustered McNemar statistic
(Σ_k (b_k − c_k))² / Σ_k (b_k − c_k)² over tasks k, chi-square on one degree of freedom
(Durkalski et al., Statistics in Medicine 2003), given beside the registered test; it is
asymptotic and needs many tasks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from pydantic import BaseModel

from .significance import holm
from .stats import Interval, bootstrap_interval

__all__ = ["EXACT_BELOW", "McNemar", "PairComparison", "clustered_mcnemar", "compare_pairs", "mcnemar", "solve_rate"]

EXACT_BELOW = 25  # discordant pairs below which the exact binomial test is used

Unit = tuple[str, int]  # (task id, repeat)


class McNemar(BaseModel):
    method: str  # "exact" | "chi-square" | "none"
    b: int  # the first arm solved, the second did not
    c: int  # the reverse
    statistic: float | None
    p_value: float


def _binomial_two_sided(k: int, n: int) -> float:
    """P(X <= min(k, n - k)) x 2 for X ~ Binomial(n, 1/2), capped at 1."""
    low = min(k, n - k)
    tail = sum(math.comb(n, i) for i in range(low + 1)) / 2**n
    return min(1.0, 2 * tail)


def mcnemar(b: int, c: int) -> McNemar:
    n = b + c
    if n == 0:
        return McNemar(method="none", b=b, c=c, statistic=None, p_value=1.0)
    if n < EXACT_BELOW:
        return McNemar(method="exact", b=b, c=c, statistic=float(min(b, c)), p_value=_binomial_two_sided(b, n))
    from scipy.stats import chi2

    statistic = (abs(b - c) - 1) ** 2 / n
    return McNemar(method="chi-square", b=b, c=c, statistic=statistic, p_value=float(chi2.sf(statistic, 1)))


def clustered_mcnemar(per_task: Sequence[tuple[int, int]]) -> float:
    """Durkalski's p-value from each task's discordant counts (b_k, c_k); 1 when no task
    has more of one kind than the other."""
    differences = [b - c for b, c in per_task]
    spread = sum(d * d for d in differences)
    if spread == 0:
        return 1.0
    from scipy.stats import chi2

    return float(chi2.sf(sum(differences) ** 2 / spread, 1))


class PairComparison(BaseModel):
    arm: str  # the default
    other: str
    pairs: int
    both_solved: int
    neither: int
    test: McNemar
    p_holm: float | None = None
    p_clustered: float  # Durkalski's clustered McNemar over tasks (not Holm-adjusted)
    difference: Interval | None  # solve rate of `arm` minus `other`, clustered by task
    margin: float
    noninferior: bool | None  # the difference's lower end above -margin; None without pairs


def solve_rate(
    solved: Mapping[Unit, bool], *, resamples: int, seed: int, confidence: float, label: str
) -> Interval | None:
    units = sorted(solved)
    return bootstrap_interval(
        [1.0 if solved[u] else 0.0 for u in units],
        statistic="mean",
        resamples=resamples,
        confidence=confidence,
        seed=seed,
        label=label,
        clusters=[task for task, _ in units],
    )


def _compare(
    arm: str,
    other: str,
    a: Mapping[Unit, bool],
    b: Mapping[Unit, bool],
    *,
    margin: float,
    resamples: int,
    seed: int,
    confidence: float,
) -> PairComparison:
    units = sorted(a.keys() & b.keys())
    per_task: dict[str, tuple[int, int]] = {}  # task -> its (b_k, c_k)
    for task, repeat in units:
        x, y = per_task.get(task, (0, 0))
        per_task[task] = (
            x + int(a[task, repeat] and not b[task, repeat]),
            y + int(b[task, repeat] and not a[task, repeat]),
        )
    only_a, only_b = sum(x for x, _ in per_task.values()), sum(y for _, y in per_task.values())
    both = sum(1 for u in units if a[u] and b[u])
    differences = [float(a[u]) - float(b[u]) for u in units]
    interval = bootstrap_interval(
        differences,
        statistic="mean",
        resamples=resamples,
        confidence=confidence,
        seed=seed,
        label=f"live/{arm}-{other}",
        clusters=[task for task, _ in units],
    )
    return PairComparison(
        arm=arm,
        other=other,
        pairs=len(units),
        both_solved=both,
        neither=len(units) - both - only_a - only_b,
        test=mcnemar(only_a, only_b),
        p_clustered=clustered_mcnemar(list(per_task.values())),
        difference=interval,
        margin=margin,
        noninferior=None if interval is None else interval.lo > -margin,
    )


def compare_pairs(
    solved: Mapping[str, Mapping[Unit, bool]],
    default: str,
    others: Sequence[str],
    *,
    margin: float,
    alpha: float,
    resamples: int,
    seed: int,
) -> list[PairComparison]:
    """The default arm against each other arm; McNemar p-values Holm-adjusted across them."""
    confidence = 1 - alpha
    pairs = [
        _compare(
            default,
            other,
            solved[default],
            solved[other],
            margin=margin,
            resamples=resamples,
            seed=seed,
            confidence=confidence,
        )
        for other in others
    ]
    for pair, adjusted in zip(pairs, holm([p.test.p_value for p in pairs]), strict=True):
        pair.p_holm = adjusted
    return pairs
