"""Numbered labels on the points of an axes, none covering another label or a mark.

The matplotlib side of `labels.place_labels`: measure each label, make room beside the
outermost points, place the boxes in pixels and draw them as annotations, with a thin
leader line when a label had to move away from its point. Call it after the figure's
layout is frozen (`style.freeze_layout`): the positions are pixels, and a layout pass
afterwards would move the axes under them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from matplotlib.axes import Axes
from matplotlib.backend_bases import RendererBase

from .labels import Box, number_ranges, place_labels
from .style import INK

__all__ = ["LABEL_PT", "label_points"]

LABEL_PT = 7
_PAD_PT = 1.5  # kept free around every label and mark

Group = tuple[float, float, list[int]]


def _groups(points: Sequence[tuple[float, float, int]], to_px: Callable, within: float) -> list[Group]:
    """Points whose marks fall on (nearly) the same pixels share one label, anchored at
    the first of them: two labels for what the eye sees as one mark would mislead."""
    groups: list[Group] = []
    for x, y, number in points:
        here = to_px((x, y))
        same = next((g for g in groups if math.dist(to_px((g[0], g[1])), here) <= within), None)
        if same is None:
            groups.append((x, y, [number]))
        else:
            same[2].append(number)
    return groups


def _sizes(ax: Axes, groups: Sequence[Group], renderer: RendererBase, pad: float) -> list[tuple[float, float]]:
    sizes = []
    for x, y, numbers in groups:
        probe = ax.text(x, y, number_ranges(numbers), fontsize=LABEL_PT)  # only measured
        extent = probe.get_window_extent(renderer)
        probe.remove()
        sizes.append((extent.width + 2 * pad, extent.height + 2 * pad))
    return sizes


def _room_beside(ax: Axes, xs: Sequence[float], need: float, width: float) -> None:
    """Widen the x-range until `need` of the `width` pixels stay free left of the
    leftmost point and right of the rightmost, so a label fits on either side of a
    crowded column (widening one side narrows the other's share: repeat; it converges
    while the margins take less than half the width)."""
    share = need / width
    if share >= 0.4:
        return
    left, right = ax.get_xlim()
    lo, hi = min(xs), max(xs)
    for _ in range(50):
        span = right - left
        wider = min(left, lo - share * span), max(right, hi + share * span)
        if wider == (left, right):
            break
        left, right = wider
    ax.set_xlim(left, right)


def label_points(ax: Axes, points: Sequence[tuple[float, float, int]], marker_pt: float) -> None:
    """Label each (x, y, number) point of `ax` with its number (points drawn on top of
    each other share one label, `1, 4–6`); `marker_pt` is the marks' size in points."""
    fig = ax.get_figure()
    if not points or fig is None:
        return
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    px_per_pt = fig.dpi / 72
    marker_px, pad = marker_pt * px_per_pt, _PAD_PT * px_per_pt
    frame = ax.get_window_extent(renderer)
    widest = max(w for w, _ in _sizes(ax, _groups(points, ax.transData.transform, marker_px / 2), renderer, pad))
    _room_beside(ax, [x for x, _, _ in points], widest + marker_px + 2 * pad, frame.width)
    to_px = ax.transData.transform  # after the x-range has its final extent
    groups = _groups(points, to_px, marker_px / 2)
    sizes = _sizes(ax, groups, renderer, pad)
    anchors = [(float(px), float(py)) for px, py in (to_px((x, y)) for x, y, _ in groups)]
    marks = [
        Box.around(float(mx), float(my), marker_px + pad, marker_px + pad)
        for mx, my in (to_px((x, y)) for x, y, _ in points)
    ]
    area = Box(frame.x0 + pad, frame.y0 + pad, frame.x1 - pad, frame.y1 - pad)
    boxes = place_labels(anchors, sizes, area, marks, step=0.45 * min(h for _, h in sizes))
    leader = {"arrowstyle": "-", "color": INK["black"], "linewidth": 0.5, "shrinkA": 0, "shrinkB": marker_pt / 2}
    for (x, y, numbers), anchor, box in zip(groups, anchors, boxes, strict=True):
        dx, dy = box.center[0] - anchor[0], box.center[1] - anchor[1]
        far = abs(dx) > (box.x1 - box.x0) / 2 + marker_px or abs(dy) > (box.y1 - box.y0) / 2 + marker_px
        ax.annotate(
            number_ranges(numbers),
            (x, y),
            xytext=(dx / px_per_pt, dy / px_per_pt),
            textcoords="offset points",
            ha="center",
            va="center",
            fontsize=LABEL_PT,
            zorder=6,
            gid="point-label",
            arrowprops=leader if far else None,
            bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.85},
        )
