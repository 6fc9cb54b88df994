"""PNG figures (matplotlib, Agg backend: no display needed).

- `pareto.png`: tool-evidence recall (mean, 95% interval) against cost ÷ raw, left the
  median of the per-trace ratios, right the pooled ratio (sum ÷ sum). Every point is
  numbered, the legend naming it (strategies on the same point share it); a strategy that
  sent any request over the window is drawn as a hollow red marker with ⚠ and is left
  off the Pareto front (grey rings and dashes), which joins the feasible strategies no
  other feasible one beats on both cost and recall.
- `tokens_per_step.png`: input tokens at each model call, per strategy, with the context
  window minus the output reserve (above it a request cannot be answered) and the compact
  budget drawn across: left the longest trace, right the mean over the traces that reached
  each step, with the number of those traces underneath.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from agents.config import CompactSettings  # noqa: E402

__all__ = ["label_offsets", "pareto_front", "write_plots"]

_STYLES = ["-", "--", "-.", ":"]
# No red: red marks a strategy that exceeds the window.
_COLORS = ["tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown", "tab:pink", "tab:gray", "tab:olive",
           "tab:cyan", "navy", "goldenrod", "teal", "black", "darkkhaki"]
_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p"]


def pareto_front(points: list[tuple[str, float, float]]) -> list[tuple[str, float, float]]:
    """(name, cost, recall) points not dominated by another (lower-or-equal cost and
    higher-or-equal recall, one strictly), sorted by cost."""
    front = [
        p for p in points
        if not any(q[1] <= p[1] and q[2] >= p[2] and (q[1] < p[1] or q[2] > p[2]) for q in points)
    ]
    return sorted(front, key=lambda p: p[1])


def label_offsets(points: list[tuple[float, float]], min_gap: float = 0.045) -> list[float]:
    """Vertical label positions (axes fractions) for points given in axes fractions: each
    label starts at its point and is pushed up until it is `min_gap` from every label
    placed before it that is horizontally close, so no label hides another."""
    placed: list[tuple[float, float]] = []
    out = []
    for x, y in points:
        ly = y
        while any(abs(px - x) < 0.18 and abs(py - ly) < min_gap for px, py in placed):
            ly += min_gap
        placed.append((x, ly))
        out.append(ly)
    return out


def _suffix(doc: dict[str, Any]) -> str:
    return " (SYNTHETIC data)" if doc["synthetic"] else ""


def _points(doc: dict[str, Any], which: str) -> list[tuple[dict, float, dict]]:
    """One point per distinct (cost, recall); strategies that land on the same point (a
    preset equal to a strategy) share it and its label, so none hides under another."""
    out: list[tuple[dict, float, dict]] = []
    for s in doc["summary"]:
        recall = s["tool_evidence_recall"]
        cost = s["vs_raw"]["cost_usd"] if which == "median" else s["pooled_vs_raw"]["cost_usd"]
        if cost is None or recall is None:
            continue
        x = cost["value"] if isinstance(cost, dict) else cost
        same = next((p for p in out if p[1] == x and p[2]["value"] == recall["value"]
                     and p[0]["exceeds_window"] == s["exceeds_window"]), None)
        if same is not None:
            same[0]["label"] = same[0].get("label", same[0]["strategy"]) + " = " + s["strategy"]
            continue
        out.append(({**s, "label": s["strategy"]}, x, recall))
    return out


def _pareto_panel(ax, doc: dict[str, Any], which: str) -> None:
    """Each point carries a number next to it; the legend maps numbers to strategies (a
    name beside every point would cover the crowded corner)."""
    points = _points(doc, which)
    feasible = [(s["label"], x, r["value"]) for s, x, r in points if not s["exceeds_window"]]
    front = pareto_front(feasible)
    on_front = {p[0] for p in front}
    for n, (s, x, r) in enumerate(points, start=1):
        bad = s["exceeds_window"]
        cost = s["vs_raw"]["cost_usd"]
        xerr = [[x - cost["lo"]], [cost["hi"] - x]] if which == "median" else None
        name = ("⚠ " if bad else "") + s["label"] + (" (front)" if s["label"] in on_front else "")
        ax.errorbar(x, r["value"], xerr=xerr, yerr=[[r["value"] - r["lo"]], [r["hi"] - r["value"]]],
                    fmt=_MARKERS[n % len(_MARKERS)], capsize=2, color="tab:red" if bad else _COLORS[n % len(_COLORS)],
                    mfc="none" if bad else None, markersize=7, linewidth=0.8, zorder=3 + n % 5, label=f"{n}. {name}")
    if front:
        ax.plot([p[1] for p in front], [p[2] for p in front], "--o", color="grey", linewidth=1, markersize=13,
                mfc="none", zorder=1)
    _number(ax, points)
    ax.legend(loc="lower right", fontsize=6, ncol=1, framealpha=0.9)
    ax.set_xlabel(f"cost ÷ raw ({'median of per-trace ratios' if which == 'median' else 'pooled: sum ÷ sum'})")
    ax.set_ylabel("tool-evidence recall (mean over traces)")
    ax.grid(alpha=0.3)


def _number(ax, points: list[tuple[dict, float, dict]]) -> None:
    if not points:
        return
    xs = [x for _, x, _ in points]
    lo, hi = min(xs), max(xs)
    span = (hi - lo) or 1.0
    left, width = lo - 0.08 * span, 1.9 * span  # room on the right for the legend
    ax.set_xlim(left, left + width)
    ax.set_ylim(-0.05, 1.12)
    order = sorted(range(len(points)), key=lambda i: points[i][2]["value"])
    frac = [((points[i][1] - left) / width, (points[i][2]["value"] + 0.05) / 1.17) for i in order]
    for i, ly in zip(order, label_offsets(frac, min_gap=0.035), strict=True):
        s, x, r = points[i]
        ax.annotate(str(i + 1), (x, r["value"]), xytext=(x + 0.025 * span, ly * 1.17 - 0.05), fontsize=7,
                    color="tab:red" if s["exceeds_window"] else "black",
                    arrowprops={"arrowstyle": "-", "color": "0.7", "linewidth": 0.4})


def _pareto(doc: dict[str, Any], path: Path) -> None:
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5.5))
    _pareto_panel(left, doc, "median")
    _pareto_panel(right, doc, "pooled")
    window = doc["settings"]["context_window"]
    fig.suptitle(f"Cost vs tool-evidence recall at a {window:,}-token window, {len(doc['traces'])} traces{_suffix(doc)}"
                 " — ⚠ hollow red: exceeds the window", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _limits(ax, doc: dict[str, Any]) -> None:
    window = doc["settings"]["context_window"]
    limit = window - 4_096
    budget = int(limit * CompactSettings().ratio)
    ax.axhline(limit, color="tab:red", linewidth=1.2, label=f"window − output reserve ({limit:,})")
    ax.axhline(budget, color="0.3", linewidth=1, linestyle=(0, (4, 2)), label=f"compact budget ({budget:,})")


def _series_style(n: int, bad: bool) -> dict[str, Any]:
    return {"linestyle": _STYLES[n % len(_STYLES)], "marker": _MARKERS[n % len(_MARKERS)], "markevery": 0.1,
            "markersize": 3, "linewidth": 1.4 if bad else 1, "alpha": 0.85,
            "color": "tab:red" if bad else _COLORS[n % len(_COLORS)]}


def _merged(series: dict[str, list[float]]) -> list[tuple[str, list[float]]]:
    """Identical series drawn once, labelled with every strategy they belong to."""
    out: list[tuple[str, list[float]]] = []
    for name, values in series.items():
        same = next((i for i, (_, v) in enumerate(out) if v == values), None)
        if same is None:
            out.append((name, values))
        else:
            out[same] = (out[same][0] + " = " + name, values)
    return out


def _mean_series(runs: list[dict]) -> tuple[dict[str, list[float]], list[int]]:
    by_strategy: dict[str, list[list[int]]] = defaultdict(list)
    for r in runs:
        by_strategy[r["strategy"]].append(r["tokens_per_call"])
    means, reached = {}, []
    for name, series in by_strategy.items():
        steps = max(len(s) for s in series)
        counts = [sum(1 for s in series if len(s) > k) for k in range(steps)]
        means[name] = [sum(s[k] for s in series if len(s) > k) / counts[k] for k in range(steps)]
        reached = counts if len(counts) > len(reached) else reached
    return means, reached


def _draw(ax, series: dict[str, list[float]], exceeding: set[str], top: float) -> None:
    clipped = []
    for n, (label, values) in enumerate(_merged(series)):
        bad = any(name in exceeding for name in label.split(" = "))
        ax.plot(range(1, len(values) + 1), values, label=("⚠ " if bad else "") + label, **_series_style(n, bad))
        if max(values, default=0) > top:
            clipped.append(f"{label.split(' = ')[0]} peaks at {max(values):,.0f}")
    ax.set_ylim(0, top)
    if clipped:
        ax.text(0.01, 0.98, "clipped: " + "; ".join(clipped), transform=ax.transAxes, fontsize=6.5, va="top")


def _tokens(doc: dict[str, Any], path: Path) -> None:
    runs = [r for r in doc["runs"] if not r["error"]]
    exceeding = {s["strategy"] for s in doc["summary"] if s["exceeds_window"]}
    fig = plt.figure(figsize=(14, 7.5))
    grid = fig.add_gridspec(2, 2, height_ratios=[4, 1])
    left, right = fig.add_subplot(grid[:, 0]), fig.add_subplot(grid[0, 1])
    count = fig.add_subplot(grid[1, 1], sharex=right)
    limit = doc["settings"]["context_window"] - 4_096
    top = 1.6 * limit
    if runs:
        longest = max(runs, key=lambda r: (r["calls"], r["trace"]))["trace"]
        _draw(left, {r["strategy"]: r["tokens_per_call"] for r in runs if r["trace"] == longest}, exceeding, top)
        means, reached = _mean_series(runs)
        _draw(right, means, exceeding, top)
        count.step(range(1, len(reached) + 1), reached, where="mid", color="0.3")
        left.set_title(f"{longest}{_suffix(doc)}", fontsize=9)
    for ax in (left, right):
        _limits(ax, doc)
        ax.set_ylabel("input tokens")
        ax.grid(alpha=0.3)
    left.set_xlabel("model call")
    left.legend(fontsize=6.5, ncol=2, loc="upper right")
    right.set_title(f"mean over the traces that reached each step{_suffix(doc)}", fontsize=9)
    right.tick_params(labelbottom=False)
    count.set_ylabel("traces behind\neach mean", fontsize=8)
    count.set_xlabel("model call")
    count.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_plots(doc: dict[str, Any], out: Path) -> dict[str, str]:
    """Write both figures into `out`; returns {name: file name}."""
    out.mkdir(parents=True, exist_ok=True)
    _pareto(doc, out / "pareto.png")
    _tokens(doc, out / "tokens_per_step.png")
    return {"cost vs tool-evidence recall": "pareto.png", "tokens per step": "tokens_per_step.png"}
