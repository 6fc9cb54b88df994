"""Deterministic placement of point labels so that none covers another or a marker.

Pure geometry in display units (pixels), no matplotlib: each label is a box of known size
tied to an anchor point. Labels are placed one after another, those with the most
neighbours first (they have the fewest good places); each tries positions on
rings of growing radius around its anchor, in a fixed order of directions (right first,
then up-right, up, …), and takes the first whose box stays inside the drawing area,
clears every box placed so far and every marker, and is nearer its own point than any
other point (so a reader never pairs a label with the wrong mark). The same inputs
always give the same positions. When no ring has room (an area far too small for its
labels) the position covering the least is taken, so no label is dropped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Box", "number_ranges", "place_labels"]

# Right, up-right, up, down-right, left, up-left, down, down-left, then the half-way angles.
_ANGLES = (0, 45, 90, -45, 180, 135, -90, -135, 22.5, 67.5, -22.5, -67.5, 157.5, 112.5, -157.5, -112.5)


@dataclass(frozen=True)
class Box:
    x0: float
    y0: float
    x1: float
    y1: float

    @classmethod
    def around(cls, cx: float, cy: float, w: float, h: float) -> Box:
        return cls(cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)

    def overlap(self, other: Box) -> float:
        """Area shared with `other` (0 when they only touch)."""
        w = min(self.x1, other.x1) - max(self.x0, other.x0)
        h = min(self.y1, other.y1) - max(self.y0, other.y0)
        return w * h if w > 0 and h > 0 else 0.0

    def outside(self, area: Box) -> float:
        """How much of this box lies outside `area`."""
        return (self.x1 - self.x0) * (self.y1 - self.y0) - self.overlap(area)

    def distance(self, point: tuple[float, float]) -> float:
        dx = max(self.x0 - point[0], 0.0, point[0] - self.x1)
        dy = max(self.y0 - point[1], 0.0, point[1] - self.y1)
        return math.hypot(dx, dy)

    @property
    def center(self) -> tuple[float, float]:
        return (self.x0 + self.x1) / 2, (self.y0 + self.y1) / 2


def _candidates(anchor: tuple[float, float], size: tuple[float, float], step: float, rings: int) -> list[Box]:
    ax, ay = anchor
    w, h = size
    out = []
    for ring in range(1, rings + 1):
        r = ring * step
        for deg in _ANGLES[: 8 if ring == 1 else len(_ANGLES)]:
            c, s = math.cos(math.radians(deg)), math.sin(math.radians(deg))
            # The box's near edge sits r from the anchor in that direction.
            out.append(Box.around(ax + c * (r + w / 2), ay + s * (r + h / 2), w, h))
    return out


def place_labels(
    anchors: Sequence[tuple[float, float]],
    sizes: Sequence[tuple[float, float]],
    area: Box,
    obstacles: Sequence[Box] = (),
    *,
    step: float,
    rings: int = 14,
) -> list[Box]:
    """The box of each label (same order as `anchors`). `sizes` already include any
    padding the caller wants between labels; `step` is the ring spacing in pixels."""
    if len(sizes) != len(anchors):
        raise ValueError(f"{len(anchors)} anchors but {len(sizes)} label sizes")
    # The most crowded labels choose first, while their surroundings are still free.
    reach = 4 * max((h for _, h in sizes), default=0.0)
    crowd = [sum(1 for b in anchors if math.dist(a, b) <= reach) for a in anchors]
    placed: dict[int, Box] = {}
    for i in sorted(range(len(anchors)), key=lambda i: (-crowd[i], i)):
        blocked = [*placed.values(), *obstacles]
        others = [a for a in anchors if a != anchors[i]]
        candidates = _candidates(anchors[i], sizes[i], step, max(rings, 1))
        placed[i] = min(candidates, key=lambda box: _cost(box, anchors[i], area, blocked, others))  # first of the least
    return [placed[i] for i in range(len(anchors))]


def _cost(
    box: Box, anchor: tuple[float, float], area: Box, blocked: Sequence[Box], others: Sequence[tuple[float, float]]
) -> tuple[float, int]:
    """(area covered or out of bounds, points nearer than its own): (0, 0) breaks no rule;
    covering something is worse than sitting nearer another point."""
    own = box.distance(anchor)
    covered = box.outside(area) + sum(box.overlap(b) for b in blocked)
    return covered, sum(1 for other in others if box.distance(other) < own)


def number_ranges(numbers: Sequence[int]) -> str:
    """[1, 3, 4, 5, 8] -> '1, 3–5, 8': the label of strategies that share one point."""
    ordered = sorted(set(numbers))
    parts: list[str] = []
    start = prev = ordered[0]
    for n in [*ordered[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        parts.append(str(start) if start == prev else f"{start}{'–' if prev > start + 1 else ', '}{prev}")
        if n is not None:
            start = prev = n
    return ", ".join(parts)
