"""The benchmark's figures: `pareto.png` and `tokens_per_step.png`, each with a PDF beside it.

What the package's __init__ held; it re-exports these names, and its docstring
describes the package (benchmarks.compaction.figures).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from .data import pareto_points, run_facts, token_series
from .key import strategy_key
from .pareto import pareto_figure, pareto_front
from .style import figure_style, save_figure
from .sweep import sweep_figure
from .tokens import tokens_figure

__all__ = ["build_figures", "pareto_front", "sweep_families", "write_plots", "write_sweep_plot"]

SWEEP = "sweep.png"


def sweep_families(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The verdict's family curves under the primary pricing (empty: no family ran)."""
    verdict = doc.get("verdict") or {}
    primary = (verdict.get("pricings") or [None])[0]
    return [f for f in verdict.get("families", []) if f["pricing"] == primary]


def write_sweep_plot(doc: dict[str, Any], out: Path, subtitle: str) -> dict[str, str]:
    """sweep.png (and PDF) when the document's verdict has family curves."""
    families = sweep_families(doc)
    if not families:
        return {}
    out.mkdir(parents=True, exist_ok=True)
    verdict = doc["verdict"]
    with figure_style():
        save_figure(sweep_figure(families, verdict["windows"], verdict["default"], subtitle), out / SWEEP)
    return {"recall vs cost, each peer family swept": SWEEP}


def build_figures(doc: dict[str, Any]) -> dict[str, Figure]:
    """{file name: Figure} for a results document. Call inside `figure_style()`."""
    facts = run_facts(doc)
    return {
        "pareto.png": pareto_figure(
            pareto_points(doc, "median"), pareto_points(doc, "pooled"), strategy_key(doc), facts
        ),
        "tokens_per_step.png": tokens_figure(token_series(doc), facts),
    }


def write_plots(doc: dict[str, Any], out: Path) -> dict[str, str]:
    """Write both figures (PNG and PDF) into `out`; returns {what it shows: PNG file name}."""
    out.mkdir(parents=True, exist_ok=True)
    with figure_style():
        for name, fig in build_figures(doc).items():
            save_figure(fig, out / name)
    return {"cost vs tool-evidence recall": "pareto.png", "tokens per step": "tokens_per_step.png"}
