"""The benchmark's one verdict on the default strategy: three aims, per window and per pricing.

1. Never infeasible: no request of the default over the window minus the output reserve,
   counted by the measuring tokenizer (`--tokenizer real` by default), on any trace.
2. Do no harm where the raw conversation fits: on the traces where `raw` sends no request
   over the window, the default's cost ÷ raw's (mean over traces of the per-trace ratio)
   is at most 1.01, and its tool-evidence recall at least 99.5% of raw's (mean over the
   traces that need evidence, the same traces for both).
3. Never dominated where compaction is needed: on the traces where `raw` does not fit,
   each peer family is a curve over the grid points it ran. A point that sent a request
   over the window is off its curve while the default sends none there; when the default
   itself does, every point is judged by the same standard and stays on. The family's cost at the
   default's recall is read off its lower envelope (the cheapest point reaching that
   recall, linear between neighbouring envelope points; a family that reaches it nowhere
   cannot match it). The aim: the default costs at most 0.9x that, against every family,
   and no family point recalls at least as much for less.

Cost on a trace is normalised by raw's cost of the same trace under the same pricing, so
cheap and expensive models weigh alike; statistics are means over traces. Traces with no
tool-evidence items have no recall and are left out of every recall mean (not scored 0).
Intervals are 95% percentile bootstraps that draw whole clusters (by default all runs of
one task instance together, `--cluster`), the same draws for every strategy. Aim 3's test
per family is one-sided: p = the share of resamples in which the ratio exceeds 0.9 (a
family that cannot reach the default's recall in a resample counts as beaten), and the
p-values of all windows x families of one pricing are Holm-adjusted; a family is beaten
when its adjusted p < 0.05 and no point of it dominates the default. A family with no
point on its curve is not decided, and neither is aim 3 while such a family is left and
none is unbeaten.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel

from .significance import holm

__all__ = ["AimResult", "CurvePoint", "FamilyVerdict", "Verdict", "compute_verdict", "matched_cost"]

COST_SLACK = 1.01
RECALL_FLOOR = 0.995
CHEAPER = 0.9
ALPHA = 0.05


class CurvePoint(BaseModel):
    name: str
    cost: float  # mean over traces of cost ÷ raw's cost
    cost_lo: float
    cost_hi: float
    recall: float | None
    recall_lo: float | None
    recall_hi: float | None
    feasible: bool


class FamilyVerdict(BaseModel):
    family: str
    window: int
    pricing: str
    points: list[CurvePoint]
    matched_cost: float | None  # the family's cost at the default's recall; None: never reaches it
    ratio: float | None  # default's cost ÷ matched_cost
    ratio_lo: float | None
    ratio_hi: float | None
    p: float
    p_holm: float | None = None
    dominated_by: list[str]
    compared: int = 0  # points on the curve
    met: bool | None = None


class AimResult(BaseModel):
    aim: int
    window: int
    pricing: str
    met: bool | None  # None: nothing to decide on (no such traces, or no family ran)
    text: str
    figures: dict[str, Any] = {}


class Verdict(BaseModel):
    default: str
    windows: list[int]
    pricings: list[str]
    aims: list[AimResult]
    families: list[FamilyVerdict]
    definitions: str = __doc__ or ""


# -- the statistics ---------------------------------------------------------------------------


def _weights(clusters: Sequence[str], resamples: int, seed: int) -> np.ndarray:
    """(resamples x traces) counts: how often each trace's cluster was drawn."""
    ids = sorted(set(clusters))
    if not ids:
        return np.zeros((resamples, 0))
    index = np.asarray([ids.index(c) for c in clusters])
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(ids), size=(resamples, len(ids)))
    counts = np.zeros((resamples, len(ids)))
    for j in range(len(ids)):
        counts[:, j] = (draws == j).sum(axis=1)
    return counts[:, index]


def _means(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Weighted means over traces, NaN values left out: (rows of weights) x (rows of values)."""
    present = ~np.isnan(values)
    filled = np.where(present, values, 0.0)
    total = weights @ present.T.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, (weights @ filled.T) / np.where(total > 0, total, 1), np.nan)


def matched_cost(points: Sequence[tuple[float, float]], recall: float) -> float | None:
    """The cheapest cost reaching `recall` on the lower envelope of (cost, recall) points,
    linear between envelope neighbours; None when no point reaches it."""
    usable = sorted((c, r) for c, r in points if not np.isnan(r))
    envelope: list[tuple[float, float]] = []
    for c, r in usable:  # by cost: keep a point only when it recalls more than every cheaper one
        if not envelope or r > envelope[-1][1]:
            envelope.append((c, r))
    if not envelope or recall > envelope[-1][1]:
        return None
    if recall <= envelope[0][1]:
        return envelope[0][0]
    for (c1, r1), (c2, r2) in zip(envelope, envelope[1:], strict=False):
        if r1 < recall <= r2:
            return c1 + (c2 - c1) * (recall - r1) / (r2 - r1)
    return None  # pragma: no cover - the envelope covers every reachable recall


def _span(lo: float | None, hi: float | None) -> str:
    return "" if lo is None or hi is None else f" [{lo:.3f}–{hi:.3f}]"


def _interval(values: np.ndarray) -> tuple[float | None, float | None]:
    finite = values[~np.isnan(values)]
    if finite.size == 0:
        return None, None
    lo, hi = np.percentile(finite, [2.5, 97.5])
    return float(lo), float(hi)


# -- the aims -----------------------------------------------------------------------------------


class _Window:
    """The runs of one window under one pricing, as matrices over (strategy, trace)."""

    def __init__(self, runs: Sequence[Mapping[str, Any]], window: int, pricing: str):
        self.window, self.pricing = window, pricing
        self.by: dict[str, dict[str, Mapping[str, Any]]] = {}
        for r in runs:
            if r.get("error") is None and r.get("context_window") == window:
                self.by.setdefault(r["strategy"], {})[r["trace"]] = r

    def cost(self, strategy: str, trace: str) -> float:
        run = self.by[strategy][trace]
        return float(run.get("costs", {}).get(self.pricing, run["cost_usd"]))

    def matrices(self, names: Sequence[str], traces: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        cost = np.full((len(names), len(traces)), np.nan)
        recall = np.full((len(names), len(traces)), np.nan)
        for i, s in enumerate(names):
            for j, t in enumerate(traces):
                run = self.by.get(s, {}).get(t)
                raw = self.cost("raw", t)
                if run is None:
                    continue
                cost[i, j] = self.cost(s, t) / raw if raw > 0 else np.nan
                if run["tool_evidence_recall"] is not None:
                    recall[i, j] = run["tool_evidence_recall"]
        return cost, recall


def _aim1(w: _Window, default: str) -> AimResult:
    runs = list(w.by.get(default, {}).values())
    calls = sum(r["infeasible_calls"] for r in runs)
    traces = sum(1 for r in runs if r["infeasible_calls"])
    text = (
        f"{calls} calls over the window ({w.window - 4096:,} tokens) on {traces} of {len(runs)} traces"
        if runs
        else f"{default} was not run"
    )
    return AimResult(
        aim=1,
        window=w.window,
        pricing=w.pricing,
        met=(calls == 0) if runs else None,
        text=text,
        figures={"infeasible_calls": calls, "infeasible_traces": traces, "traces": len(runs)},
    )


def _aim2(w: _Window, default: str, fits: list[str], weights: np.ndarray) -> AimResult:
    if not fits:
        return AimResult(aim=2, window=w.window, pricing=w.pricing, met=None, text="raw fits no trace at this window")
    cost, recall = w.matrices([default, "raw"], fits)
    both = ~np.isnan(recall).any(axis=0)
    recall = np.where(both, recall, np.nan)
    ones = np.ones((1, len(fits)))
    c, rc = _means(cost, ones)[0], _means(recall, ones)[0]
    boot_c, boot_r = _means(cost, weights), _means(recall, weights)
    ratio = rc[0] / rc[1] if rc[1] else float("nan")
    with np.errstate(invalid="ignore", divide="ignore"):
        c_lo, c_hi = _interval(boot_c[:, 0])
        r_lo, r_hi = _interval(boot_r[:, 0] / boot_r[:, 1])
    met = bool(c[0] <= COST_SLACK and (np.isnan(ratio) or ratio >= RECALL_FLOOR))
    text = (
        f"on {len(fits)} traces raw fits: cost ÷ raw {c[0]:.3f}{_span(c_lo, c_hi)} (aim ≤ {COST_SLACK}); "
        f"recall ÷ raw's {ratio:.3f}{_span(r_lo, r_hi)} (aim ≥ {RECALL_FLOOR}; {int(both.sum())} traces with evidence)"
    )
    return AimResult(
        aim=2,
        window=w.window,
        pricing=w.pricing,
        met=met,
        text=text,
        figures={
            "traces": len(fits),
            "cost_ratio": float(c[0]),
            "cost_lo": c_lo,
            "cost_hi": c_hi,
            "recall_ratio": None if np.isnan(ratio) else float(ratio),
            "recall_lo": r_lo,
            "recall_hi": r_hi,
            "traces_with_evidence": int(both.sum()),
        },
    )


def _points(names: Sequence[str], cost: np.ndarray, recall: np.ndarray, boot_c, boot_r, feasible) -> list[CurvePoint]:
    out = []
    for i, name in enumerate(names):
        c_lo, c_hi = _interval(boot_c[:, i])
        r_lo, r_hi = _interval(boot_r[:, i])
        r = recall[i]
        out.append(
            CurvePoint(
                name=name,
                cost=float(cost[i]),
                cost_lo=c_lo or float(cost[i]),
                cost_hi=c_hi or float(cost[i]),
                recall=None if np.isnan(r) else float(r),
                recall_lo=r_lo,
                recall_hi=r_hi,
                feasible=feasible[i],
            )
        )
    return out


def _family(
    w: _Window,
    default: str,
    family: str,
    members: Sequence[str],
    needs: list[str],
    weights: np.ndarray,
) -> FamilyVerdict:
    names = [default, *members]
    cost, recall = w.matrices(names, needs)
    ones = np.ones((1, len(needs)))
    pc, pr = _means(cost, ones)[0], _means(recall, ones)[0]
    bc, br = _means(cost, weights), _means(recall, weights)
    feasible = [all(r["infeasible_calls"] == 0 for t, r in w.by.get(s, {}).items() if t in needs) for s in names]
    # Over the window is disqualifying only against a default that stays within it.
    curve = [i for i in range(1, len(names)) if feasible[i] or not feasible[0]]
    matched = matched_cost([(pc[i], pr[i]) for i in curve], pr[0]) if not np.isnan(pr[0]) else None
    ratios = np.full(len(weights), np.nan)
    for b in range(len(weights)):
        m = matched_cost([(bc[b, i], br[b, i]) for i in curve], br[b, 0]) if not np.isnan(br[b, 0]) else None
        ratios[b] = 0.0 if m is None else bc[b, 0] / m  # a family that cannot match is beaten
    lo, hi = _interval(ratios)
    dominated = [names[i] for i in curve if pr[i] >= pr[0] and pc[i] < pc[0]]
    return FamilyVerdict(
        family=family,
        window=w.window,
        pricing=w.pricing,
        points=_points(names, pc, pr, bc, br, feasible),
        matched_cost=matched,
        ratio=None if matched is None else float(pc[0] / matched),
        ratio_lo=lo,
        ratio_hi=hi,
        p=float((1 + np.sum(ratios > CHEAPER)) / (len(ratios) + 1)) if curve else 1.0,
        dominated_by=dominated,
        compared=len(curve),
    )


def _aim3(w: _Window, families: list[FamilyVerdict], needs: list[str]) -> AimResult:
    if not needs:
        return AimResult(
            aim=3, window=w.window, pricing=w.pricing, met=None, text="raw fits every trace at this window"
        )
    if not families:
        return AimResult(
            aim=3, window=w.window, pricing=w.pricing, met=None, text="no peer family ran (--presets or --sweep FAMILY)"
        )
    parts = []
    for f in families:
        feasible = sum(p.feasible for p in f.points[1:])
        ratio = (
            "no point to compare"
            if not f.compared
            else "never reaches the default's recall"
            if f.ratio is None
            else f"{f.ratio:.3f}{_span(f.ratio_lo, f.ratio_hi)}"
        )
        dom = f"; dominated by {', '.join(f.dominated_by)}" if f.dominated_by else ""
        parts.append(
            f"{f.family} ({feasible}/{len(f.points) - 1} points feasible): "
            f"cost ÷ family's at matched recall {ratio}, p (Holm) {f.p_holm or 1.0:.3g}{dom} → "
            f"{'not decided' if f.met is None else 'beaten' if f.met else 'not beaten'}"
        )
    met = False if any(f.met is False for f in families) else (None if any(f.met is None for f in families) else True)
    return AimResult(
        aim=3,
        window=w.window,
        pricing=w.pricing,
        met=met,
        text=f"on {len(needs)} traces raw does not fit (aim: ≤ {CHEAPER} at matched recall, "
        f"undominated): " + "; ".join(parts),
        figures={"traces": len(needs), "families": len(families)},
    )


def compute_verdict(
    runs: Sequence[Mapping[str, Any]],
    *,
    windows: Sequence[int],
    pricings: Sequence[str],
    families: Mapping[str, Sequence[str]],
    clusters: Mapping[str, str],
    default: str = "current",
    resamples: int = 2_000,
    seed: int = 0,
) -> Verdict:
    """`families`: family name -> the strategy names of its points that ran; `clusters`:
    trace -> bootstrap cluster (the task instance)."""
    aims, all_families = [], []
    for pricing in pricings:
        per_window: list[tuple[_Window, list[str], list[FamilyVerdict]]] = []
        for window in windows:
            w = _Window(runs, window, pricing)
            raw = w.by.get("raw", {})
            traces = sorted(t for t in raw if t in w.by.get(default, {}))
            fits = [t for t in traces if raw[t]["infeasible_calls"] == 0]
            needs = [t for t in traces if raw[t]["infeasible_calls"] > 0]
            aims += [
                _aim1(w, default),
                _aim2(w, default, fits, _weights([clusters.get(t, t) for t in fits], resamples, seed)),
            ]
            boot = _weights([clusters.get(t, t) for t in needs], resamples, seed + 1) if needs else np.zeros((0, 0))
            fam = [
                _family(w, default, name, [m for m in members if m in w.by], needs, boot)
                for name, members in families.items()
                if needs and any(m in w.by for m in members)
            ]
            per_window.append((w, needs, fam))
        flat = [f for _, _, fam in per_window for f in fam]
        for f, p in zip(flat, holm([f.p for f in flat]), strict=True):
            f.p_holm = p
            f.met = None if not f.compared else bool(p is not None and p < ALPHA and not f.dominated_by)
        for w, needs, fam in per_window:
            aims.append(_aim3(w, fam, needs))
        all_families += flat
    aims.sort(key=lambda a: (a.pricing != pricings[0], a.window, a.aim))
    return Verdict(default=default, windows=list(windows), pricings=list(pricings), aims=aims, families=all_families)
