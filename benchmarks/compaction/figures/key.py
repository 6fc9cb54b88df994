"""The key from strategy numbers to names, shared by the figures.

A strategy's number is its position in the results' summary (1-based), so the same
number means the same strategy in every figure, the report's summary table order aside.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import SubFigure
from matplotlib.lines import Line2D

__all__ = ["KeyEntry", "add_key", "strategy_key"]


@dataclass(frozen=True)
class KeyEntry:
    number: int
    strategy: str
    infeasible: bool  # a call of it exceeds the window


def strategy_key(doc: dict[str, Any]) -> list[KeyEntry]:
    return [KeyEntry(n, s["strategy"], bool(s["exceeds_window"])) for n, s in enumerate(doc["summary"], start=1)]


KEY_CHARS = 28  # wider names wrap, so a long strategy spec does not squeeze the panels


def _wrap(name: str, indent: str) -> str:
    """Break a long name after its `:` or `,` (a spec like `hybrid:keep=10,every=31`),
    and a piece that alone is too long anywhere."""
    pieces: list[str] = []
    for piece in re.findall(r"[^:,]+[:,]?|[:,]", name):
        pieces += [piece[i : i + KEY_CHARS] for i in range(0, len(piece), KEY_CHARS)]
    lines = [""]
    for piece in pieces:
        if lines[-1] and len(lines[-1]) + len(piece) > KEY_CHARS:
            lines.append("")
        lines[-1] += piece
    return ("\n" + indent).join(lines)


def add_key(where: Axes | SubFigure, key: Sequence[KeyEntry]) -> None:
    """A text-only legend: beside an axes, top-aligned with it (under the figure's title,
    not next to it), or at the top left of a subfigure set aside for it."""
    blank = Line2D([], [], linestyle="none")
    labels = [f"{e.number:>2}  {'⚠ ' if e.infeasible else ''}{_wrap(e.strategy, '      ')}" for e in key]
    place = {"loc": "upper left", "bbox_to_anchor": (1.02, 1.0)} if isinstance(where, Axes) else {"loc": "upper left"}
    where.legend(
        [blank] * len(key),
        labels,
        title="strategies",
        alignment="left",
        handlelength=0,
        handletextpad=0,
        fontsize=7,
        title_fontsize=7.5,
        frameon=False,
        **place,
    ).set_gid("key")
