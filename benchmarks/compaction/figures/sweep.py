"""`sweep.png`: each peer family's recall-versus-cost curve over its own grid, the default
strategy as one point, one panel per context window (the verdict's aim 3, `verdict.py`).

Drawn on the traces where `raw` does not fit the window: x is the mean over traces of a
trace's cost ÷ raw's cost of it, y the mean tool-evidence recall; bars are the verdict's
95% cluster-bootstrap intervals. Each family's points are joined in cost order, in its own
colour and marker shape. A point that sent a request over the window carries a vermillion
ring; it stays on its curve only where the default exceeds the window too (the verdict's
rule), and is drawn hollow, unjoined, where it does not. The default is a black star
(ringed when it exceeds the window).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matplotlib.figure import Figure
from matplotlib.ticker import PercentFormatter

from .style import INK, freeze_layout, legend_entries, new_figure

__all__ = ["sweep_figure"]

_COLOURS = ("blue", "orange", "green", "purple", "sky", "yellow", "grey")
_MARKERS = ("o", "s", "D", "^", "v", "P", "X")
OVER = "⚠ ring: a call exceeds the window"
X_TITLE = "cost of a trace ÷ raw's cost of it\n(mean over the traces raw does not fit)"
Y_TITLE = "tool-evidence recall\n(mean over traces with evidence)"


def _bars(point: dict[str, Any]) -> tuple[list[list[float]], list[list[float]] | None]:
    x = [[point["cost"] - point["cost_lo"]], [point["cost_hi"] - point["cost"]]]
    if point["recall"] is None or point["recall_lo"] is None:
        return x, None
    return x, [[point["recall"] - point["recall_lo"]], [point["recall_hi"] - point["recall"]]]


def _errorbar(ax, point: dict[str, Any], **style) -> None:
    xerr, yerr = _bars(point)
    ax.errorbar([point["cost"]], [point["recall"]], xerr=xerr, yerr=yerr, elinewidth=0.6, capsize=1.5, **style)


def _ring(ax, point: dict[str, Any], size: float) -> None:
    ax.plot(
        [point["cost"]],
        [point["recall"]],
        linestyle="none",
        marker="o",
        markersize=size,
        markerfacecolor="none",
        markeredgecolor=INK["vermillion"],
        markeredgewidth=0.8,
        label=OVER,
    )


def _panel(ax, families: Sequence[dict[str, Any]], default: str) -> None:
    first = families[0]["points"][0] if families else None
    default_fits = first is None or first["feasible"]
    for n, family in enumerate(families):
        colour, marker = INK[_COLOURS[n % len(_COLOURS)]], _MARKERS[n % len(_MARKERS)]
        points = [p for p in family["points"][1:] if p["recall"] is not None]
        curve = sorted((p for p in points if p["feasible"] or not default_fits), key=lambda p: p["cost"])
        if curve:
            ax.plot(
                [p["cost"] for p in curve],
                [p["recall"] for p in curve],
                color=colour,
                linewidth=0.9,
                marker=marker,
                markersize=4,
                label=family["family"],
            )
            for p in curve:
                _errorbar(ax, p, fmt="none", ecolor=colour)
        for p in points:
            if p not in curve:
                ax.plot(
                    [p["cost"]],
                    [p["recall"]],
                    linestyle="none",
                    marker=marker,
                    markersize=4,
                    markerfacecolor="none",
                    markeredgecolor=colour,
                )
            if not p["feasible"]:
                _ring(ax, p, 8)
    if first is not None and first["recall"] is not None:
        _errorbar(ax, first, fmt="*", color=INK["black"], markersize=8, label=f"{default} (the default)")
        if not first["feasible"]:
            _ring(ax, first, 12)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_xlabel(X_TITLE)


def sweep_figure(families: Sequence[dict[str, Any]], windows: Sequence[int], default: str, subtitle: str) -> Figure:
    """`families`: the verdict's FamilyVerdict records of one pricing (points[0] is the default)."""
    shown = [w for w in windows if any(f["window"] == w for f in families)] or list(windows)[:1]
    fig = new_figure(11, 4.6)  # every figure is 11 inches wide, for a page
    axes = fig.subplots(1, len(shown), squeeze=False)[0]
    for ax, window in zip(axes, shown, strict=True):
        mine = [f for f in families if f["window"] == window]
        _panel(ax, mine, default)
        ax.set_title(f"window {window:,} tokens" + ("" if mine else ": no family ran"))
    axes[0].set_ylabel(Y_TITLE)
    handles, labels = legend_entries(list(axes), order=(f"{default} (the default)",))
    if handles:
        fig.legend(handles, labels, loc="outside right center", frameon=False)
    fig.suptitle(f"Peer families swept over their own grids, against {default}\n{subtitle}")
    freeze_layout(fig)
    return fig
