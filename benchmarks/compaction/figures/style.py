"""One look for every figure, and byte-for-byte reproducible files.

- Fonts: DejaVu Sans, which matplotlib bundles, so no system font decides the layout.
- Colours: the Okabe–Ito palette, distinguishable under the common colour-vision
  deficiencies; vermillion is kept for "exceeds the context window" and nothing else.
- Files: a PNG (200 dpi) and a PDF (TrueType fonts embedded, for papers) beside it, with
  the time stamps and software versions taken out of their metadata, so the same inputs
  give the same bytes.
- Figures are `matplotlib.figure.Figure` objects on an Agg canvas, not pyplot ones: no
  global figure registry to leak into, nothing to close.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

__all__ = ["DPI", "INK", "figure_style", "freeze_layout", "legend_entries", "new_figure", "save_figure"]

DPI = 200

# Okabe & Ito (2008), "Color Universal Design".
INK = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky": "#56B4E9",
    "green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "purple": "#CC79A7",
    "grey": "#7F7F7F",
    "light": "#BBBBBB",
}

_RC: dict[RcKeyType, Any] = {
    "font.family": "DejaVu Sans",
    "font.size": 8,
    "axes.titlesize": 8,
    "axes.labelsize": 8,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "legend.fontsize": 7,
    "figure.titlesize": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.35,
    "grid.linewidth": 0.5,
    "axes.linewidth": 0.6,
    "pdf.fonttype": 42,
}


@contextmanager
def figure_style() -> Iterator[None]:
    """Build and save figures inside this: the rc settings apply to artists as they are
    made and to the files as they are written, and leave the global state untouched."""
    with matplotlib.rc_context(_RC):
        yield


def new_figure(width: float, height: float) -> Figure:
    """A figure of a fixed size in inches, laid out by the constrained layout engine."""
    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def freeze_layout(fig: Figure) -> None:
    """Run the layout once and keep it: labels placed in pixels afterwards stay where
    they were put, since nothing moves the axes again when the file is written."""
    fig.draw_without_rendering()
    fig.set_layout_engine("none")


def legend_entries(axes: Sequence[Axes], order: Sequence[str] = ()) -> tuple[list[Artist], list[str]]:
    """The labelled artists of all `axes`, each label once: those in `order` first, in
    that order, then the rest as found (a mark may be missing from one panel only)."""
    found: dict[str, Artist] = {}
    for ax in axes:
        handles, labels = ax.get_legend_handles_labels()
        for handle, label in zip(handles, labels, strict=True):
            found.setdefault(label, handle)
    labels = [*(lab for lab in order if lab in found), *(lab for lab in found if lab not in order)]
    return [found[lab] for lab in labels], labels


def save_figure(fig: Figure, png: Path) -> list[Path]:
    """Write `png` and the PDF beside it; returns both paths."""
    pdf = png.with_suffix(".pdf")
    fig.savefig(png, dpi=DPI, metadata={"Software": None})
    fig.savefig(pdf, metadata={"Creator": None, "Producer": None, "CreationDate": None})
    return [png, pdf]
