"""PNG figures (matplotlib, Agg backend: no display needed).

- `pareto.png`: tool-evidence recall (mean, 95% interval) against cost ÷ raw, left the
  median of the per-trace ratios, right the pooled ratio (sum ÷ sum). Every point is
  numbered, the legend naming it (strategies on the same point share it); a strategy that
  sent any request over the window is drawn as a hollow red marker with ⚠ and is left
  off the Pareto front (grey rings and dashes), which joins the feasible strategies no
  other feasible one beats on both cost and recall.
- `tokens_per_step.png`: one small panel per strategy (so none hides under another): input
  tokens at each model call, the mean over the traces that reached the step and the longest
  trace, with the context window minus the output reserve (above it a request cannot be
  answered) and the compact budget drawn across; a strategy over the window has a red ⚠
  title with its infeasible calls; a last panel gives the number of traces behind each mean.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from agents.config import CompactSettings  # noqa: E402
from agents.visible import reveal  # noqa: E402

__all__ = ["label_offsets", "pareto_front", "write_plots"]

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
    if points:
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


def _mean_series(runs: list[dict]) -> tuple[dict[str, list[float]], list[int]]:
    """Per strategy: the mean tokens at each step over the traces that reached it; and how
    many traces reached each step."""
    by_strategy: dict[str, list[list[int]]] = defaultdict(list)
    for r in runs:
        by_strategy[r["strategy"]].append(r["tokens_per_call"])
    means: dict[str, list[float]] = {}
    reached: list[int] = []
    for name, series in by_strategy.items():
        steps = max(len(s) for s in series)
        counts = [sum(1 for s in series if len(s) > k) for k in range(steps)]
        means[name] = [sum(s[k] for s in series if len(s) > k) / counts[k] for k in range(steps)]
        reached = counts if len(counts) > len(reached) else reached
    return means, reached


def _panel(ax, s: dict, mean: list[float], longest: list[int] | None, top: float) -> None:
    """One strategy: the mean over traces (thick) and the longest trace (thin), the window
    and the budget; a title in red with ⚠ when the strategy exceeds the window."""
    if longest:
        ax.plot(range(1, len(longest) + 1), longest, color="0.55", linewidth=0.7, label="longest trace")
    ax.plot(range(1, len(mean) + 1), mean, color="tab:blue", linewidth=1.3, label="mean over traces")
    peak = max([*mean, *(longest or [])], default=0)
    _limits(ax, s["_doc"])
    ax.set_ylim(0, top)
    bad = s["exceeds_window"]
    title = ("⚠ " if bad else "") + s["strategy"]
    detail = f"{s['infeasible_calls']} infeasible calls" if bad else "feasible"
    if peak > top:
        detail += f"; peak {peak:,.0f} (clipped)"
    ax.set_title(f"{title}\n{detail}", fontsize=7.5, color="tab:red" if bad else "black")
    ax.tick_params(labelsize=6)
    ax.grid(alpha=0.3)


def _tokens(doc: dict[str, Any], path: Path) -> None:
    """Small multiples: one panel per strategy, so no series hides under another, and a
    last panel with the number of traces behind each step's mean."""
    runs = [r for r in doc["runs"] if not r["error"]]
    summaries = [s for s in doc["summary"] if any(r["strategy"] == s["strategy"] for r in runs)]
    cols = 4
    rows = max(1, -(-(len(summaries) + 1) // cols))
    fig, axes = plt.subplots(rows, cols, figsize=(3.4 * cols, 2.3 * rows), sharex=True, squeeze=False)
    flat = [ax for row in axes for ax in row]
    limit = doc["settings"]["context_window"] - 4_096
    top = 1.6 * limit
    means, reached = _mean_series(runs)
    longest = max(runs, key=lambda r: (r["calls"], r["trace"]))["trace"] if runs else None
    for ax, s in zip(flat, summaries, strict=False):
        own = next((r["tokens_per_call"] for r in runs if r["trace"] == longest and r["strategy"] == s["strategy"]), None)
        _panel(ax, {**s, "_doc": doc}, means[s["strategy"]], own, top)
    count = flat[len(summaries)]
    count.step(range(1, len(reached) + 1), reached, where="mid", color="0.3")
    count.set_title("traces behind each step's mean", fontsize=7.5)
    count.tick_params(labelsize=6)
    count.grid(alpha=0.3)
    for ax in flat[len(summaries) + 1:]:
        ax.axis("off")
    handles, labels = flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper right", fontsize=7, ncol=4)
    fig.suptitle(f"Input tokens per model call, {doc['settings']['context_window']:,}-token window"
                 f"{f' (longest trace: {reveal(longest, one_line=True)})' if longest else ''}{_suffix(doc)}",
                 fontsize=9, x=0.01, ha="left")  # a trace's label is a file name: its hidden characters shown
    fig.supxlabel("model call", fontsize=8)
    fig.supylabel("input tokens", fontsize=8)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_plots(doc: dict[str, Any], out: Path) -> dict[str, str]:
    """Write both figures into `out`; returns {name: file name}."""
    out.mkdir(parents=True, exist_ok=True)
    _pareto(doc, out / "pareto.png")
    _tokens(doc, out / "tokens_per_step.png")
    return {"cost vs tool-evidence recall": "pareto.png", "tokens per step": "tokens_per_step.png"}
