"""`tokens_per_step.png`: input tokens at each model call, one small panel per strategy.

Small multiples, so no series hides under another; strategies whose series are identical
(a preset equal to a strategy, strategies that never compacted) share one panel, named
by all of them. A panel draws the mean over the traces that reached each call and the
longest trace's own series, with the window (minus the output reserve: above it a
request cannot be answered) and the compact budget across. Every panel's y-axis reaches
its own highest value or the window, whichever is higher, so nothing is clipped and the
panels of strategies that stay under the window share one scale. A strip underneath,
as wide as the grid, gives the number of traces behind each call's mean.
"""

from __future__ import annotations

import itertools
import math
import textwrap
from collections.abc import Sequence

from matplotlib.axes import Axes
from matplotlib.figure import Figure, SubFigure
from matplotlib.ticker import FuncFormatter, MaxNLocator

from agents.visible import reveal

from .data import RunFacts, StrategyTokens, TokenSeries
from .key import KeyEntry, add_key
from .labels import number_ranges
from .style import INK, freeze_layout, legend_entries, new_figure

__all__ = ["tokens_figure"]

COLUMNS = 4
HEADROOM = 1.06
TITLE_CHARS = 36  # what fits across one panel at the title size
MEAN = "mean over the traces that reached the call"
_THOUSANDS = FuncFormatter(lambda v, _: f"{v / 1000:g}k" if v else "0")


def _panels(series: Sequence[StrategyTokens]) -> list[list[StrategyTokens]]:
    """Strategies with identical series (and so identical feasibility) share a panel."""
    shared: dict[tuple, list[StrategyTokens]] = {}
    for s in series:
        shared.setdefault((tuple(s.mean), tuple(s.longest or ()), s.infeasible_calls), []).append(s)
    return list(shared.values())


def _names(group: Sequence[StrategyTokens]) -> tuple[str, bool]:
    """The numbers and all names when they fit on two lines of a panel; else the first
    name and how many share its series (the key beside the figure names them all).
    Second: whether names were left out."""
    numbers = number_ranges([s.number for s in group])
    full = textwrap.wrap(f"{numbers}. " + " = ".join(s.strategy for s in group), TITLE_CHARS, break_on_hyphens=False)
    if len(full) <= 2:
        return "\n".join(full), False
    first = textwrap.shorten(f"{numbers}. {group[0].strategy}", TITLE_CHARS, placeholder="…")
    return f"{first}\n+ {len(group) - 1} more with the same series", True


def _title(ax: Axes, group: Sequence[StrategyTokens]) -> None:
    first = group[0]
    over = first.infeasible_calls > 0
    status = (
        f"⚠ {first.infeasible_calls:,} calls over the window in {first.traces_infeasible} traces"
        if over
        else "no call over the window"
    )
    ax.set_title(
        f"{_names(group)[0]}\n{status}", loc="left", fontsize=7, color=INK["vermillion"] if over else INK["black"]
    )


def _strategy_panel(ax: Axes, group: Sequence[StrategyTokens], facts: RunFacts, longest: str) -> None:
    s = group[0]
    calls = range(1, len(s.mean) + 1)
    if s.longest:
        ax.plot(range(1, len(s.longest) + 1), s.longest, color=INK["orange"], linewidth=0.8, label=longest)
    ax.plot(calls, s.mean, color=INK["blue"], linewidth=1.3, label=MEAN)
    ax.axhline(
        facts.limit,
        color=INK["vermillion"],
        linestyle="-.",
        linewidth=1.1,
        label=f"window − output reserve: {facts.limit:,} tokens (a call above cannot be answered)",
    )
    ax.axhline(
        facts.budget,
        color=INK["black"],
        linestyle="--",
        linewidth=0.8,
        label=f"compact budget: {facts.budget:,} tokens (the harness compacts to stay under it)",
    )
    top = max([facts.limit, *s.mean, *(s.longest or [])])
    ax.set_ylim(0, top * HEADROOM)
    ax.yaxis.set_major_formatter(_THOUSANDS)
    ax.yaxis.set_major_locator(MaxNLocator(4))
    _title(ax, group)


def _mark_counts(ax: Axes, reached: Sequence[int]) -> None:
    """Write the count where it starts, where it first halves and where one trace is left:
    the reader sees how thin the later means are without reading values off the axis."""
    marks = {1: reached[0]}
    for threshold in (reached[0] // 2, 1):
        call = next((k for k, n in enumerate(reached, start=1) if n <= threshold), None)
        if call is not None and threshold >= 1:
            marks.setdefault(call, reached[call - 1])
    for call, n in sorted(marks.items()):
        text = f"{n} trace{'s' if n != 1 else ''}" + (f" from call {call}" if call > 1 else "")
        right = call > len(reached) / 2  # written leftwards there, so it stays inside the axes
        ax.annotate(
            text,
            (call, n),
            xytext=(-2 if right else 2, 3),
            textcoords="offset points",
            ha="right" if right else "left",
            fontsize=6.5,
            gid="count-label",
        )


def _counts_strip(ax: Axes, series: Sequence[StrategyTokens]) -> None:
    """One step line per distinct count series (they differ only where a replay failed or
    the harness refused a request, which ends it), told apart by line style."""
    groups: dict[tuple[int, ...], list[int]] = {}
    for s in series:
        groups.setdefault(tuple(s.reached), []).append(s.number)
    for (reached, numbers), style in zip(groups.items(), itertools.cycle(("-", "--", ":", "-.")), strict=False):
        label = "all strategies" if len(groups) == 1 else f"strategies {number_ranges(numbers)}"
        ax.step(
            range(1, len(reached) + 1),
            reached,
            where="mid",
            color=INK["black"],
            linestyle=style,
            linewidth=1,
            label=label,
        )
    _mark_counts(ax, max(groups, key=lambda r: (len(r), r)))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True, nbins=5))
    ax.set_ylim(0, max(max(r) for r in groups) * 1.25)
    ax.set_xlabel("model call (1 = the trace's first call)")
    ax.set_ylabel("traces")
    ax.set_title("traces that reached each call: how many traces are behind each mean above", loc="left", fontsize=7)
    if len(groups) > 1:
        ax.legend(loc="upper right", frameon=False)
    ax.set_label("trace-counts")


def _grid(fig: Figure | SubFigure, n: int) -> tuple[list[Axes], Axes]:
    """Exactly n strategy panels (no empty cell gets an axes) and the counts strip."""
    cols = min(COLUMNS, n)
    rows = math.ceil(n / cols)
    grid = fig.add_gridspec(rows + 1, cols, height_ratios=[1.0] * rows + [0.6])
    panels: list[Axes] = []
    for i in range(n):
        panels.append(fig.add_subplot(grid[i // cols, i % cols], sharex=panels[0] if panels else None))
        last_in_column = i + cols >= n
        panels[-1].tick_params(labelbottom=last_in_column)
        if last_in_column:
            panels[-1].set_xlabel("model call")
        if i % cols == 0:
            panels[-1].set_ylabel("input tokens per call")
    counts = fig.add_subplot(grid[rows, :], sharex=panels[0])
    counts.xaxis.set_major_locator(MaxNLocator(integer=True))  # calls are whole numbers
    return panels, counts


def tokens_figure(series: TokenSeries, facts: RunFacts) -> Figure:
    """Call inside `style.figure_style()`."""
    groups = _panels(series.strategies)
    rows = math.ceil(len(groups) / COLUMNS) if groups else 0
    fig = new_figure(11.0, 2.3 + 1.65 * rows)
    title = "Input tokens per model call, per strategy"
    if not groups:
        fig.suptitle(f"{title}: no replay succeeded, nothing to draw\n{facts.caption()}")
        return fig
    # A key column only when some panel's title cannot name all its strategies; it gets
    # a subfigure of its own, so its height does not stretch a row of panels.
    main: Figure | SubFigure = fig
    if any(_names(group)[1] for group in groups):
        [[main, side]] = fig.subfigures(1, 2, width_ratios=[5.2, 1.0], squeeze=False)
        add_key(side, [KeyEntry(s.number, s.strategy, s.infeasible_calls > 0) for s in series.strategies])
    panels, counts = _grid(main, len(groups))
    # a trace's label is a file name: its hidden characters shown, never sent to a terminal raw
    longest = f"longest trace ({reveal(series.longest_trace or '', one_line=True)}, {series.longest_calls} calls)"
    for ax, group in zip(panels, groups, strict=True):
        _strategy_panel(ax, group, facts, longest)
        ax.set_label("tokens-" + group[0].strategy)
    _counts_strip(counts, series.strategies)
    counts.set_xlim(0.5, max(len(s.reached) for s in series.strategies) + 0.5)
    handles, labels = legend_entries(panels, (MEAN, longest))
    main.legend(handles, labels, loc="outside lower center", ncol=2, frameon=False).set_gid("lines")
    fig.suptitle(f"{title}\n{facts.caption()}")
    freeze_layout(fig)
    return fig
