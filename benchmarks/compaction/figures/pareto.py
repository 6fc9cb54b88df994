"""`pareto.png`: tool-evidence recall against cost ÷ raw, one panel per cost statistic.

Panel (a) puts each strategy at the median over traces of its per-trace cost ratio to
`raw`, panel (b) at the pooled ratio (total cost ÷ raw's total); recall is the mean over
traces in both. Error bars are the benchmark's own 95% bootstrap intervals (the pooled
ratio has none, so (b) has vertical bars only).

Readability with ~20 strategies, many of them at cost ÷ raw ≈ 1: a point carries its
strategy's number, not its name (strategies on the very same point share one label,
`1, 9, 19`), and the key beside the panels maps numbers to names. The numbers are placed
by `point_labels.label_points` after the layout is fixed, with a leader line when a
label had to move away from its point. Marks are coded by shape and colour together (colour-blind
safe): on the front, dominated, over the window.
"""

from __future__ import annotations

from collections.abc import Sequence

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import PercentFormatter

from .data import CostKind, RunFacts, StrategyPoint
from .key import KeyEntry, add_key
from .point_labels import label_points
from .style import INK, freeze_layout, legend_entries, new_figure

__all__ = ["pareto_figure", "pareto_front"]

MARKER_PT = 5.5
FRONT = "feasible, on the Pareto front"
DOMINATED = "feasible, dominated (another feasible strategy is cheaper and recalls more)"
OVER = "⚠ a call exceeds the window (window − output reserve): left off the front"
FRONT_LINE = "Pareto front over the feasible strategies"
RAW_LINE = "cost of raw (ratio 1): no compaction, results unclipped"
_ORDER = (FRONT, DOMINATED, OVER, FRONT_LINE, RAW_LINE)

_COST = "cost = Σ calls (cache-priced input + output) + summarizer calls"
_X_TITLE = {
    "median": f"cost of a trace ÷ raw's cost of it (median over traces)\n{_COST}",
    "pooled": f"total cost over all traces ÷ raw's total (pooled, sum ÷ sum)\n{_COST}",
}
_PANEL_TITLE = {
    "median": "(a) median cost ratio; 95% intervals on both axes",
    "pooled": "(b) pooled cost ratio (no interval: one sum ÷ sum); 95% intervals on recall",
}
Y_TITLE = "tool-evidence recall\n(visible ÷ needed items per trace, mean over traces)"


def pareto_front(points: list[tuple[str, float, float]]) -> list[tuple[str, float, float]]:
    """(name, cost, recall) points not dominated by another (lower-or-equal cost and
    higher-or-equal recall, one strictly), sorted by cost."""
    front = [
        p for p in points if not any(q[1] <= p[1] and q[2] >= p[2] and (q[1] < p[1] or q[2] > p[2]) for q in points)
    ]
    return sorted(front, key=lambda p: p[1])


def _span(values: Sequence[float], min_span: float, pad: float) -> tuple[float, float]:
    lo, hi = min(values), max(values)
    extra = max(min_span - (hi - lo), 0) / 2
    margin = pad * max(hi - lo, min_span)
    return lo - extra - margin, hi + extra + margin


def _recall_limits(ys: Sequence[float]) -> tuple[float, float]:
    """Recall cannot pass 100%: the spare height of a short range goes below the data,
    leaving just enough above 100% for a label."""
    lo, hi = min(ys), max(ys)
    span = max(hi - lo, 0.1)
    top = hi + 0.1 * span
    if hi <= 1:
        top = min(top, 1 + 0.05 * span)
    return max(min(lo - 0.1 * span, top - 1.2 * span), -0.05), top


def _limits(ax: Axes, points: Sequence[StrategyPoint]) -> None:
    """Every point and every interval end inside the axes, with room for the labels."""
    xs = [1.0, *(v for p in points for v in (p.cost.value, p.cost.lo, p.cost.hi) if v is not None)]
    ys = [v for p in points for v in (p.recall.value, p.recall.lo, p.recall.hi) if v is not None]
    ax.set_xlim(*_span(xs, 0.2, 0.12))
    ax.set_ylim(*_recall_limits(ys))


def _bars(ax: Axes, points: Sequence[StrategyPoint], facts: RunFacts) -> None:
    """The benchmark's 95% intervals, one neutral colour (the marks carry the coding)."""

    def err(estimates):
        if any(e.lo is None for e in estimates):
            return None
        return [[max(e.value - e.lo, 0) for e in estimates], [max(e.hi - e.value, 0) for e in estimates]]

    costs, recalls = [p.cost for p in points], [p.recall for p in points]
    ax.errorbar(
        [c.value for c in costs],
        [r.value for r in recalls],
        xerr=err(costs),
        yerr=err(recalls),
        fmt="none",
        ecolor=INK["grey"],
        elinewidth=0.7,
        capsize=1.8,
        capthick=0.7,
        zorder=2,
        label=f"95% interval: percentile bootstrap, {facts.resamples:,} resamples of {facts.cluster} clusters",
    )


def _marks(ax: Axes, points: Sequence[StrategyPoint], front: set[int]) -> None:
    # The front is drawn last: a dominated mark at nearly the same place must not hide it.
    styles = (
        (
            DOMINATED,
            [p for p in points if not p.infeasible and p.number not in front],
            {"marker": "s", "color": INK["sky"], "mfc": INK["sky"], "mec": INK["blue"]},
        ),
        (
            FRONT,
            [p for p in points if not p.infeasible and p.number in front],
            {"marker": "o", "color": INK["blue"], "mfc": INK["blue"]},
        ),
        (
            OVER,
            [p for p in points if p.infeasible],
            {"marker": "^", "color": INK["vermillion"], "mfc": "white", "mew": 1.2},
        ),
    )
    for label, mine, style in styles:
        if mine:
            ax.plot(
                [p.cost.value for p in mine],
                [p.recall.value for p in mine],
                linestyle="none",
                ms=MARKER_PT,
                zorder=4,
                label=label,
                **style,
            )


def _panel(ax: Axes, points: Sequence[StrategyPoint], kind: CostKind, facts: RunFacts) -> None:
    feasible = [(str(p.number), p.cost.value, p.recall.value) for p in points if not p.infeasible]
    front = pareto_front(feasible)
    ax.axvline(1.0, color=INK["black"], linestyle=":", linewidth=0.8, zorder=1, label=RAW_LINE)
    if points:
        _bars(ax, points, facts)
        _marks(ax, points, {int(name) for name, _, _ in front})
        _limits(ax, points)
    if len({(p[1], p[2]) for p in front}) > 1:  # one point is no line; its mark says it is the front
        ax.plot(
            [p[1] for p in front],
            [p[2] for p in front],
            linestyle="--",
            color=INK["blue"],
            linewidth=0.9,
            zorder=3,
            label=FRONT_LINE,
        )
    ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    ax.set_xlabel(_X_TITLE[kind])
    ax.set_ylabel(Y_TITLE)
    ax.set_title(_PANEL_TITLE[kind], loc="left")
    ax.set_label(f"pareto-{kind}")


def _explain(fig: Figure, axes: Sequence[Axes]) -> None:
    handles, labels = legend_entries(axes, _ORDER)
    fig.legend(handles, labels, loc="outside lower center", ncol=2, frameon=False).set_gid("marks")


def pareto_figure(
    median: Sequence[StrategyPoint], pooled: Sequence[StrategyPoint], key: Sequence[KeyEntry], facts: RunFacts
) -> Figure:
    """Call inside `style.figure_style()`."""
    fig = new_figure(11.0, 6.2)
    left, right = fig.subplots(1, 2, sharey=True)
    _panel(left, median, "median", facts)
    _panel(right, pooled, "pooled", facts)
    right.yaxis.set_tick_params(labelleft=True)
    add_key(right, key)
    _explain(fig, (left, right))
    fig.suptitle(f"Cost against tool-evidence recall, {len(key)} compaction strategies\n{facts.caption()}")
    freeze_layout(fig)
    for ax, points in ((left, median), (right, pooled)):
        label_points(ax, [(p.cost.value, p.recall.value, p.number) for p in points], MARKER_PT)
    return fig
