"""The figures' layout rules: labels do not cover each other, equal points share one label,
the Pareto front is drawn over feasible strategies only."""

from __future__ import annotations

from benchmarks.compaction.plots import _points, label_offsets, pareto_front


def _summary(name: str, cost: float, recall: float, exceeds: bool = False) -> dict:
    iv = lambda v: {"value": v, "lo": v, "hi": v, "n": 3, "statistic": "median"}  # noqa: E731
    return {"strategy": name, "exceeds_window": exceeds, "vs_raw": {"cost_usd": iv(cost)},
            "pooled_vs_raw": {"cost_usd": cost}, "tool_evidence_recall": iv(recall)}


def test_close_labels_are_pushed_apart():
    ys = label_offsets([(0.5, 0.5), (0.52, 0.5), (0.51, 0.51), (0.9, 0.5)], min_gap=0.05)
    assert ys[0] == 0.5 and ys[1] >= 0.55 and ys[2] >= ys[1] + 0.05 - 1e-9
    assert ys[3] == 0.5  # far enough to the right: stays


def test_strategies_on_the_same_point_share_one_label():
    doc = {"summary": [_summary("mask", 1.4, 0.8), _summary("swe-agent-last5", 1.4, 0.8), _summary("raw", 1.0, 1.0, True)]}
    points = _points(doc, "median")
    assert [p[0]["label"] for p in points] == ["mask = swe-agent-last5", "raw"]


def test_the_front_joins_undominated_points_only():
    points = [("a", 0.5, 0.9), ("b", 0.4, 0.6), ("c", 0.6, 0.7), ("d", 1.0, 1.0)]
    assert [p[0] for p in pareto_front(points)] == ["b", "a", "d"]
