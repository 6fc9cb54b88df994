"""The benchmark's verdict (`benchmarks.compaction.verdict`) on a tiny results document with
known answers: traces without evidence leave the recall means, recall is matched before
costs are compared, and the p-values of every window x family are Holm-adjusted."""

from __future__ import annotations

import json

import pytest

from benchmarks.compaction.goal import subset_verdict
from benchmarks.compaction.verdict import compute_verdict, matched_cost

WINDOW = 10_000
RESAMPLES = 200


def _run(
    trace: str, strategy: str, cost: float, recall: float | None, infeasible: int = 0, window: int = WINDOW
) -> dict:
    return {
        "trace": trace,
        "strategy": strategy,
        "cost_usd": cost,
        "costs": {"per-trace": cost},
        "tool_evidence_recall": recall,
        "infeasible_calls": infeasible,
        "context_window": window,
        "error": None,
    }


def _runs() -> list[dict]:
    """t1, t2 fit the window raw (t2 needs no evidence), t3 and t4 do not."""
    runs = []
    for t in ("t1", "t2", "t3", "t4"):
        fits = t in ("t1", "t2")
        recall = None if t == "t2" else 1.0
        runs.append(_run(t, "raw", 1.0, recall, infeasible=0 if fits else 2))
        runs.append(_run(t, "current", 1.0 if fits else 0.5, recall if fits else 0.8))
        if not fits:
            runs += [
                _run(t, "a/1", 0.7, 0.9),
                _run(t, "a/2", 0.4, 0.7),  # at recall 0.8: 0.55, so 0.5 ÷ 0.55
                _run(t, "b/1", 0.45, 0.85),  # cheaper and recalls more: dominates
                _run(t, "c/1", 1.0, 0.9),
                _run(t, "c/2", 0.2, 0.5, infeasible=1),
            ]  # c/2 is off the curve
    return runs


FAMILIES = {"a": ["a/1", "a/2"], "b": ["b/1"], "c": ["c/1", "c/2"]}
CLUSTERS = {t: t for t in ("t1", "t2", "t3", "t4")}


def _verdict(runs=None):
    return compute_verdict(
        runs or _runs(),
        windows=[WINDOW],
        pricings=["per-trace"],
        families=FAMILIES,
        clusters=CLUSTERS,
        resamples=RESAMPLES,
    )


def _aim(verdict, n: int):
    (aim,) = (a for a in verdict.aims if a.aim == n)
    return aim


def test_no_request_over_the_window_meets_aim_one():
    aim = _aim(_verdict(), 1)
    assert aim.met is True and aim.figures == {"infeasible_calls": 0, "infeasible_traces": 0, "traces": 4}


def test_a_request_over_the_window_misses_aim_one_and_says_how_many():
    runs = [r if (r["trace"], r["strategy"]) != ("t3", "current") else {**r, "infeasible_calls": 3} for r in _runs()]
    aim = _aim(_verdict(runs), 1)
    assert aim.met is False and aim.text.startswith("3 calls over the window (5,904 tokens) on 1 of 4 traces")


def test_a_trace_without_evidence_items_leaves_the_recall_mean_instead_of_scoring_zero():
    aim = _aim(_verdict(), 2)
    # Scored as 0, t2 would halve both recalls; left out, the default keeps all of raw's recall.
    assert aim.met is True and aim.figures["traces"] == 2 and aim.figures["traces_with_evidence"] == 1
    assert aim.figures["recall_ratio"] == 1.0 and aim.figures["cost_ratio"] == 1.0


def test_more_than_one_percent_over_raw_where_raw_fits_misses_aim_two():
    runs = [
        r if (r["trace"], r["strategy"]) != ("t1", "current") else {**r, "costs": {"per-trace": 1.05}} for r in _runs()
    ]
    aim = _aim(_verdict(runs), 2)
    assert aim.met is False and aim.figures["cost_ratio"] == pytest.approx(1.025)


def test_the_family_cost_is_read_at_the_defaults_recall_on_its_lower_envelope():
    assert matched_cost([(0.7, 0.9), (0.4, 0.7)], 0.8) == pytest.approx(0.55)
    assert matched_cost([(0.7, 0.9), (0.4, 0.7)], 0.6) == 0.4  # the cheapest point already recalls enough
    assert matched_cost([(0.7, 0.9), (0.9, 0.8)], 0.8) == 0.7  # a dearer point that recalls less is off it
    assert matched_cost([(0.7, 0.9)], 0.95) is None


def test_recall_is_matched_before_costs_are_compared():
    families = {f.family: f for f in _verdict().families}
    a = families["a"]
    assert a.matched_cost == pytest.approx(0.55) and a.ratio == pytest.approx(0.5 / 0.55)
    assert a.met is False and a.dominated_by == []  # 9% cheaper at matched recall: short of 10%
    assert families["b"].dominated_by == ["b/1"] and families["b"].met is False


def test_a_point_over_the_window_is_off_its_familys_curve():
    c = {f.family: f for f in _verdict().families}["c"]
    assert [p.feasible for p in c.points] == [True, True, False]
    assert c.matched_cost == 1.0 and c.ratio == pytest.approx(0.5)  # c/2 would have been cheaper


def test_holm_adjusts_across_windows_and_families():
    families = {f.family: f for f in _verdict().families}
    floor = 1 / (RESAMPLES + 1)  # every resample beats c: the smallest p a bootstrap can give
    assert families["c"].p == pytest.approx(floor) and families["c"].p_holm == pytest.approx(3 * floor)
    assert families["a"].p == families["a"].p_holm == 1.0
    assert families["c"].met is True and _aim(_verdict(), 3).met is False  # a and b are not beaten


def test_a_held_out_subset_is_judged_by_the_same_verdict(tmp_path):
    doc = {
        "traces": [
            {"label": t, "path": f"/traces/{'held' if t in ('t1', 't3') else 'tuned'}/{t}", "task_id": t}
            for t in CLUSTERS
        ],
        "settings": {
            "strategies": ["raw", "current", "swe-agent-masking/5"],
            "cluster": "instance",
            "resamples": RESAMPLES,
            "seed": 0,
        },
        "verdict": _verdict().model_dump(),
    }
    held = subset_verdict(json.loads(json.dumps(doc)), _runs(), exclude=["/traces/tuned"])
    aim1 = next(a for a in held["aims"] if a["aim"] == 1)
    assert aim1["figures"]["traces"] == 2


def test_when_the_default_itself_exceeds_the_window_the_familys_points_over_it_stay_on_the_curve():
    runs = [r if (r["trace"], r["strategy"]) != ("t3", "current") else {**r, "infeasible_calls": 1} for r in _runs()]
    c = {f.family: f for f in _verdict(runs).families}["c"]
    # c/2 (0.2, recall 0.5) now counts: at recall 0.8 the envelope runs from it to c/1 (1.0, 0.9).
    assert c.compared == 2 and c.matched_cost == pytest.approx(0.8) and c.points[2].feasible is False


def test_a_family_with_no_point_to_compare_leaves_aim_three_undecided():
    runs = [r if r["strategy"] not in ("a/1", "a/2", "b/1", "c/1") else {**r, "infeasible_calls": 1} for r in _runs()]
    verdict = _verdict(runs)
    assert all(f.met is None and f.compared == 0 for f in verdict.families if f.family in ("a", "b"))
    assert _aim(verdict, 3).met is None and "no point to compare" in _aim(verdict, 3).text
