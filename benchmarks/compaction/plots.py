"""PNG figures (matplotlib, Agg backend: no display needed).

- `pareto.png`: cost ratio vs raw (median, 95% interval) against grounding recall (mean,
  95% interval), one point per strategy; the Pareto front (no other strategy is both
  cheaper and better grounded) is joined by a line.
- `tokens_per_step.png`: input tokens at each model call, per strategy — left the
  longest trace, right the mean over traces at each step (traces that reached it).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

__all__ = ["pareto_front", "write_plots"]


def pareto_front(points: list[tuple[str, float, float]]) -> list[tuple[str, float, float]]:
    """(name, cost, recall) points not dominated by another (lower-or-equal cost and
    higher-or-equal recall, one strictly), sorted by cost."""
    front = [
        p for p in points
        if not any(q[1] <= p[1] and q[2] >= p[2] and (q[1] < p[1] or q[2] > p[2]) for q in points)
    ]
    return sorted(front, key=lambda p: p[1])


def _suffix(doc: dict[str, Any]) -> str:
    return " (SYNTHETIC data)" if doc["synthetic"] else ""


def _pareto(doc: dict[str, Any], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(7, 5))
    points = []
    markers = itertools.cycle(["o", "s", "^", "D", "v", "P", "X", "*", "<", ">"])
    for s in doc["summary"]:
        cost, recall = s["vs_raw"]["cost_usd"], s["grounding_recall"]
        if cost is None or recall is None:
            continue
        points.append((s["strategy"], cost["value"], recall["value"]))
        ax.errorbar(
            cost["value"], recall["value"],
            xerr=[[cost["value"] - cost["lo"]], [cost["hi"] - cost["value"]]],
            yerr=[[recall["value"] - recall["lo"]], [recall["hi"] - recall["value"]]],
            fmt=next(markers), capsize=3, label=s["strategy"],
        )
    front = pareto_front(points)
    if len({(p[1], p[2]) for p in front}) > 1:
        ax.plot([p[1] for p in front], [p[2] for p in front], "--", color="grey", linewidth=1, label="Pareto front")
    ax.legend(loc="best", fontsize=7)
    ax.set_xlabel("cache-aware cost ÷ raw (median over traces)")
    ax.set_ylabel("grounding recall (mean over traces)")
    ax.set_title(f"Cost vs grounding recall{_suffix(doc)}", fontsize=10)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _tokens(doc: dict[str, Any], path: Path) -> None:
    runs = [r for r in doc["runs"] if not r["error"]]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    if runs:
        longest = max(runs, key=lambda r: (r["calls"], r["trace"]))["trace"]
        by_strategy: dict[str, list[list[int]]] = defaultdict(list)
        for r in runs:
            by_strategy[r["strategy"]].append(r["tokens_per_call"])
            if r["trace"] == longest:
                left.plot(range(1, len(r["tokens_per_call"]) + 1), r["tokens_per_call"], label=r["strategy"], linewidth=1)
        for name, series in by_strategy.items():
            steps = max(len(s) for s in series)
            means = [sum(s[k] for s in series if len(s) > k) / sum(1 for s in series if len(s) > k) for k in range(steps)]
            right.plot(range(1, steps + 1), means, label=name, linewidth=1)
        left.set_title(f"{longest}{_suffix(doc)}", fontsize=9)
    right.set_title(f"mean over traces at each step{_suffix(doc)}", fontsize=9)
    for ax in (left, right):
        ax.set_xlabel("model call")
        ax.set_ylabel("input tokens")
        ax.grid(alpha=0.3)
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_plots(doc: dict[str, Any], out: Path) -> dict[str, str]:
    """Write both figures into `out`; returns {name: file name}."""
    out.mkdir(parents=True, exist_ok=True)
    _pareto(doc, out / "pareto.png")
    _tokens(doc, out / "tokens_per_step.png")
    return {"cost vs grounding recall": "pareto.png", "tokens per step": "tokens_per_step.png"}
